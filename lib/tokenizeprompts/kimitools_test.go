package tokenizeprompts

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/kimitools/kimitest"
)

// TestKimiK25ToolPrompts runs the Kimi-K2.5 tool references (the 13 public
// records and the larger set in ../kimitools/testdata) through
// tokenize-prompts --with-text: prompt_text must be the reference's
// rendering byte for byte, and input_ids the tokenizer's encoding of it with
// special tokens recognised.
func TestKimiK25ToolPrompts(t *testing.T) {
	var in strings.Builder
	want := map[string]string{}
	for _, r := range kimitest.Read(t, "../kimitools/testdata/public.jsonl", "../kimitools/testdata/cases.jsonl") {
		// tokenize-prompts wraps tool objects without a "type" as
		// function tools (bare schemas, as xLAM stores them); the
		// reference passes them as they are. lib/chat checks those.
		bare := false
		gjson.ParseBytes(r.Tools).ForEach(func(_, tool gjson.Result) bool {
			bare = bare || !tool.Get("type").Exists()
			return true
		})
		if bare {
			continue
		}
		want[r.ID] = r.ExpectedText
		in.Write(r.Line)
		in.WriteByte('\n')
	}
	if len(want) < 13+50 {
		t.Fatalf("only %d records", len(want))
	}
	dir := modelDir(t, "kimi_k25")
	stdout, stderr, code := runTool(t, in.String(), "-q", "--tokenizer", dir, "--with-text")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	tok, err := chat.LoadTokenizer(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		var r struct {
			ID         string `json:"id"`
			InputIDs   []int  `json:"input_ids"`
			PromptText string `json:"prompt_text"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		seen++
		exp, ok := want[r.ID]
		if !ok {
			t.Errorf("unexpected record %q", r.ID)
			continue
		}
		if r.PromptText != exp {
			t.Errorf("%s: prompt_text\n got %q\nwant %q", r.ID, r.PromptText, exp)
		}
		if ids := tok.Encode(exp, true); !equalIDs(r.InputIDs, ids) {
			t.Errorf("%s: input_ids differ from the reference text's at %d", r.ID, firstDifference(r.InputIDs, ids))
		}
	}
	if seen != len(want) {
		t.Errorf("%d records out, want %d", seen, len(want))
	}
}
