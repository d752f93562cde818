package totrain

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/kimitools/kimitest"
)

// TestTokensKimiToolDeclaration: to-train --format tokens renders a
// Kimi-K2.5 sample's prompt as the model's own tokenizer does, tools
// declared in TypeScript: the sample starts with the ids of each public
// reference prompt, all of them masked out of the loss.
func TestTokensKimiToolDeclaration(t *testing.T) {
	var in bytes.Buffer
	want := map[string]string{}
	for _, r := range kimitest.Read(t, "../kimitools/testdata/public.jsonl") {
		want[r.ID] = r.ExpectedText
		line, _ := json.Marshal(map[string]any{"id": r.ID, "messages": r.Messages, "tools": r.Tools,
			"text": "Done.", "finish_reason": "stop", "thinking": true}) // the references render the template's default: thinking on
		in.Write(append(line, '\n'))
	}
	model, err := chat.Load(chat.BuiltinPrefix+"kimi-k2.5", chat.TemplateAuto, nil)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Main([]string{"to-train", "-q", "--format", "tokens", "--tokenizer", chat.BuiltinPrefix + "kimi-k2.5"}, &in, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != len(want) || len(want) != 13 {
		t.Fatalf("%d samples for %d records", len(lines), len(want))
	}
	for _, l := range lines {
		var s struct {
			ID       string `json:"id"`
			InputIDs []int  `json:"input_ids"`
			LossMask []int  `json:"loss_mask"`
		}
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatal(err)
		}
		prompt := model.Encode(want[s.ID])
		if len(s.InputIDs) <= len(prompt) || !slices.Equal(s.InputIDs[:len(prompt)], prompt) {
			got, _ := model.Tok.Decode(s.InputIDs)
			t.Errorf("%s: the sample does not start with the reference prompt\n got %q\nwant %q...", s.ID, got, want[s.ID])
			continue
		}
		if slices.Contains(s.LossMask[:len(prompt)], 1) || !slices.Contains(s.LossMask[len(prompt):], 1) {
			t.Errorf("%s: loss mask %v, want 0 over the %d prompt ids and 1 after", s.ID, s.LossMask, len(prompt))
		}
	}
}
