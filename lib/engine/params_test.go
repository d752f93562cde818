package engine

import (
	"encoding/json"
	"testing"

	"github.com/synthpipe/synthpipe/lib/backend"
)

func ptrTo[T any](v T) *T { return &v }

// TestParamsJSONByteForByte pins gen.params with every sampling parameter
// set, and with none: members in key order, as json.Marshal writes a map.
func TestParamsJSONByteForByte(t *testing.T) {
	every := backend.Params{MaxTokens: 2048, Sampling: backend.Sampling{Temperature: ptrTo(0.7), TopP: ptrTo(0.95), TopK: ptrTo(-1), MinP: ptrTo(1e-7),
		Stop: []string{"</answer>", "<&>\n"}, StopTokenIDs: []int{151645, 0}, Seed: ptrTo(int64(-42)),
		ReasoningEffort: "high", ReasoningMaxTokens: 2000}, Extra: json.RawMessage(`{"b": 1, "a": "<"}`)}
	for _, tc := range []struct {
		params backend.Params
		want   string
	}{
		{every, `{"extra":{"b":1,"a":"\u003c"},"max_tokens":2048,"min_p":1e-7,"reasoning_effort":"high","reasoning_max_tokens":2000,"seed":-42,` +
			`"stop":["\u003c/answer\u003e","\u003c\u0026\u003e\n"],"stop_token_ids":[151645,0],"temperature":0.7,"top_k":-1,"top_p":0.95}`},
		{backend.Params{MaxTokens: 5}, `{"max_tokens":5}`},
	} {
		if got := ParamsJSON(tc.params); string(got) != tc.want {
			t.Errorf("gen.params\n got %s\nwant %s", got, tc.want)
		}
	}
}

// TestBatchBodyEveryParameter checks that each sampling member of a Batch
// body overrides the command line's, and that reasoning_max_tokens, which
// chat completions bodies do not have, goes along as an extra field.
func TestBatchBodyEveryParameter(t *testing.T) {
	in := &batchInput{kind: backend.OpenAI, model: "m", params: backend.Params{MaxTokens: 8, Sampling: backend.Sampling{ReasoningMaxTokens: 5, Temperature: ptrTo(1.0)}}}
	j, err := in.parse([]byte(`{"custom_id":"own","url":"/v1/chat/completions","body":{"messages":[],"temperature":0.5,"top_p":0.9,"top_k":3,"min_p":0.1,` +
		`"seed":7,"stop":"S","stop_token_ids":[4],"reasoning_effort":"low","reasoning_max_tokens":99,"max_tokens":12}}`))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"extra":{"reasoning_max_tokens":99},"max_tokens":12,"min_p":0.1,"reasoning_effort":"low","reasoning_max_tokens":5,"seed":7,` +
		`"stop":["S"],"stop_token_ids":[4],"temperature":0.5,"top_k":3,"top_p":0.9}`
	if string(j.params) != want {
		t.Errorf("gen.params\n got %s\nwant %s", j.params, want)
	}
	if got := ParamsJSON(j.req.Params); string(got) != want {
		t.Errorf("the request's params\n got %s\nwant %s", got, want)
	}
	if *in.params.Temperature != 1 {
		t.Errorf("the command line's temperature became %v", *in.params.Temperature)
	}
}
