package generate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/sim"
)

// TestTokenizerAddsOutputIDs: with --tokenizer an OpenAI-style answer gets
// the ids of the assistant turn as the model's template renders it.
func TestTokenizerAddsOutputIDs(t *testing.T) {
	dir := unpackTokenizer(t, "../tokenizer/testdata/tokenizers/qwen3")
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

// unpackTokenizer copies a test tokenizer folder, decompressing its .zst
// files, since the folder is kept compressed.
func unpackTokenizer(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Skipf("no test tokenizer: %v", err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		name := e.Name()
		if strings.HasSuffix(name, ".zst") {
			dec, _ := zstd.NewReader(nil)
			if data, err = dec.DecodeAll(data, nil); err != nil {
				t.Fatal(err)
			}
			dec.Close()
			name = strings.TrimSuffix(name, ".zst")
		}
		if err := os.WriteFile(filepath.Join(dst, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestRetokenizeRendersThinking: the answer turn carries the reasoning under
// "thinking" too, the name gpt-oss's template reads it by, so that its
// output_ids include the reasoning the model generated.
func TestRetokenizeRendersThinking(t *testing.T) {
	dir := unpackTokenizer(t, "../tokenizer/testdata/tokenizers/qwen3")
	tmpl := filepath.Join(t.TempDir(), "thinking.jinja")
	src := `{% for m in messages %}<|im_start|>{{ m.role }}
{% if m.thinking %}<think>{{ m.thinking }}</think>{% endif %}{{ m.content }}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}`
	if err := os.WriteFile(tmpl, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	model, err := chat.Load(dir, tmpl, nil)
	if err != nil {
		t.Skipf("tokenizer not loadable here: %v", err)
	}
	r := &retokenizer{model: model}
	j := &job{req: backend.Request{Messages: json.RawMessage(`[{"role":"user","content":"hi"}]`)}}
	ids := r.outputIDs(j, &backend.Result{Text: "hello", Reasoning: "weighing it up"})
	text, err := model.Tok.Decode(ids)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<think>weighing it up</think>hello<|im_end|>"; text != want || r.fallbacks.Load() != 0 {
		t.Fatalf("output_ids decode to %q (fallbacks %d), want %q", text, r.fallbacks.Load(), want)
	}
}
