package engine

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/synthpipe/synthpipe/lib/backend"
)

// TestBatchInputKimiToolDeclaration: an OpenAI Batch line sent to SGLang
// gets the ids of the prompt Kimi-K2.5's own tokenizer renders, its tools
// declared in TypeScript, for every public reference record.
func TestBatchInputKimiToolDeclaration(t *testing.T) {
	f, err := os.Open("../kimitools/testdata/public.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	model := testChatModel(t)
	in := &batchInput{kind: backend.SGLang, chat: model, params: backend.Params{MaxTokens: 16}}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var r struct {
			ID           string          `json:"id"`
			Messages     json.RawMessage `json:"messages"`
			Tools        json.RawMessage `json:"tools"`
			ExpectedText string          `json:"expected_text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(map[string]any{"custom_id": r.ID, "method": "POST", "url": batchChatURL,
			"body": map[string]json.RawMessage{"messages": r.Messages, "tools": r.Tools}})
		j, err := in.parse(line)
		if err != nil {
			t.Fatalf("%s: %v", r.ID, err)
		}
		if want := model.Encode(r.ExpectedText); !slices.Equal(j.req.InputIDs, want) {
			got, _ := model.Tok.Decode(j.req.InputIDs)
			t.Errorf("%s: input_ids are not the reference prompt's\n got %q\nwant %q", r.ID, got, r.ExpectedText)
		}
		n++
	}
	if n != 13 {
		t.Fatalf("%d records, want 13", n)
	}
}
