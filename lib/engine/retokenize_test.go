package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/simtest"
)

// TestRetokenizeRendersThinking: the answer turn carries the reasoning under
// "thinking" too, the name gpt-oss's template reads it by, so that its
// output_ids include the reasoning the model generated.
func TestRetokenizeRendersThinking(t *testing.T) {
	dir := simtest.UnpackTokenizer(t, "../tokenizer/testdata/tokenizers/qwen3")
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
