package generate

import (
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/sim"
	"github.com/synthpipe/synthpipe/lib/simtest"
)

// TestTokenizerAddsOutputIDs: with --tokenizer an OpenAI-style answer gets
// the ids of the assistant turn as the model's template renders it.
func TestTokenizerAddsOutputIDs(t *testing.T) {
	dir := simtest.UnpackTokenizer(t, "../tokenizer/testdata/tokenizers/qwen3")
	model, err := chat.Load(dir, chat.TemplateAuto, nil)
	if err != nil {
		t.Skipf("tokenizer not loadable here: %v", err)
	}
	_, url := startSim(t, func(c *sim.Config) { c.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: 12} })
	r := runGenerate(t, chatRequests(5), "--backend", "openai", "--url", url+"/v1", "--model", "m", "--max-tokens", "40", "--tokenizer", dir)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, l := range r.lines(t) {
		var ids []int
		for _, v := range l.Get("output_ids").Array() {
			ids = append(ids, int(v.Int()))
		}
		text, err := model.Tok.Decode(ids)
		if err != nil || !strings.Contains(text, l.Get("text").String()) || !strings.HasSuffix(text, "<|im_end|>") {
			t.Fatalf("output_ids decode to %q (%v), want the answer %q closed by <|im_end|>", text, err, l.Get("text"))
		}
	}
	if strings.Contains(r.stderr, "from their text alone") {
		t.Fatalf("fell back to the text: %s", r.stderr)
	}
}
