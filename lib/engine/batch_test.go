package engine

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/bundle"
	"github.com/synthpipe/synthpipe/lib/chat"
)

func TestBatchInputToRequest(t *testing.T) {
	temp := 0.7
	flagParams := backend.Params{MaxTokens: 64, Sampling: backend.Sampling{Temperature: &temp}, Extra: json.RawMessage(`{"top_a":0.1}`)}
	tests := []struct {
		name    string
		model   string // --model
		sglang  bool   // --backend sglang rather than openai
		line    string
		check   func(t *testing.T, j *job)
		wantErr string
	}{
		{
			name: "body overrides the command line",
			line: `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"m1","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"temperature":0,"stop":"END","seed":3,"response_format":{"type":"json_object"},"stream":true}}`,
			check: func(t *testing.T, j *job) {
				p := j.req.Params
				if j.req.ID != "a" || p.MaxTokens != 5 || *p.Temperature != 0 || *p.Seed != 3 || len(p.Stop) != 1 || p.Stop[0] != "END" {
					t.Errorf("id %q params %+v", j.req.ID, p)
				}
				extra := gjson.ParseBytes(p.Extra)
				if extra.Get("model").String() != "m1" || extra.Get("response_format.type").String() != "json_object" ||
					extra.Get("top_a").Float() != 0.1 || extra.Get("stream").Exists() || extra.Get("max_tokens").Exists() {
					t.Errorf("extra %s", p.Extra)
				}
				if string(j.req.Messages) != `[{"role":"user","content":"hi"}]` {
					t.Errorf("messages %s", j.req.Messages)
				}
				if gjson.GetBytes(j.params, "max_tokens").Int() != 5 {
					t.Errorf("gen.params %s", j.params)
				}
			},
		},
		{
			name: "the command line fills what the body leaves out",
			line: `{"custom_id":"b","url":"/v1/chat/completions","body":{"model":"m1","messages":[],"max_completion_tokens":9,"max_tokens":1,"tools":[{"type":"function"}]}}`,
			check: func(t *testing.T, j *job) {
				if j.req.Params.MaxTokens != 9 || *j.req.Params.Temperature != temp || string(j.req.Tools) != `[{"type":"function"}]` {
					t.Errorf("params %+v tools %s", j.req.Params, j.req.Tools)
				}
			},
		},
		{
			name:  "--model wins over the body's",
			model: "m2",
			line:  `{"custom_id":"c","url":"/v1/chat/completions","body":{"model":"m1","messages":[]}}`,
			check: func(t *testing.T, j *job) {
				if gjson.GetBytes(j.req.Params.Extra, "model").Exists() {
					t.Errorf("extra %s", j.req.Params.Extra)
				}
			},
		},
		{
			name: "a re-fed errors line loses its old error",
			line: `{"custom_id":"d","url":"/v1/chat/completions","body":{"model":"m","messages":[]},"error":{"kind":"http"}}`,
			check: func(t *testing.T, j *job) {
				if strings.Contains(string(j.line), `"error"`) {
					t.Errorf("line %s", j.line)
				}
			},
		},
		{name: "embeddings", line: `{"custom_id":"e","url":"/v1/embeddings","body":{"input":"x"}}`, wantErr: `"url" is "/v1/embeddings"`},
		{name: "no custom_id", line: `{"url":"/v1/chat/completions","body":{"messages":[]}}`, wantErr: `no "custom_id"`},
		{name: "no messages", line: `{"custom_id":"f","url":"/v1/chat/completions","body":{"model":"m"}}`, wantErr: `no "messages"`},
		{name: "no model anywhere", line: `{"custom_id":"g","url":"/v1/chat/completions","body":{"messages":[]}}`, wantErr: `no "model"`},
		{name: "bad stop", line: `{"custom_id":"h","url":"/v1/chat/completions","body":{"model":"m","messages":[],"stop":3}}`, wantErr: `"stop"`},
		{name: "several answers", line: `{"custom_id":"j","url":"/v1/chat/completions","body":{"model":"m","messages":[],"n":2}}`, wantErr: "n=2"},
		{name: "sglang and response_format", sglang: true, line: `{"custom_id":"k","url":"/v1/chat/completions","body":{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}}`, wantErr: "response_format"},
		{
			name: "sglang gets token ids and the penalties", sglang: true,
			line: `{"custom_id":"l","url":"/v1/chat/completions","body":{"messages":[{"role":"user","content":"hi"}],"presence_penalty":0.5,"logit_bias":{"1":2}}}`,
			check: func(t *testing.T, j *job) {
				extra := gjson.ParseBytes(j.req.Params.Extra)
				if len(j.req.InputIDs) == 0 || j.promptTokens != len(j.req.InputIDs) || j.req.Messages != nil ||
					extra.Get("sampling_params.presence_penalty").Float() != 0.5 || extra.Get("logit_bias").Exists() || extra.Get("model").Exists() {
					t.Errorf("input_ids %v extra %s", j.req.InputIDs, j.req.Params.Extra)
				}
			},
		},
		{name: "zero tokens", line: `{"custom_id":"i","url":"/v1/chat/completions","body":{"model":"m","messages":[],"max_tokens":0}}`, wantErr: "want at least 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := &batchInput{kind: backend.OpenAI, model: tc.model, params: flagParams}
			if tc.sglang {
				in.kind, in.chat = backend.SGLang, testChatModel(t)
			}
			j, err := in.parse([]byte(tc.line))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, j)
		})
	}
}

func TestBatchOutputFromResult(t *testing.T) {
	cost := 0.5
	res := &backend.Result{
		Text: "four", Reasoning: "2+2", FinishReason: "stop", CompletionTokens: 3, ReasoningTokens: 1,
		CachedTokens: 2, Cost: &cost, OutputIDs: []int{7, 8, 9},
	}
	out := gjson.ParseBytes(batchResult("a", "m1", 5, res, time.Unix(100, 0)))
	for path, want := range map[string]any{
		"custom_id":                                                      "a",
		"error":                                                          nil,
		"response.status_code":                                           int64(200),
		"response.body.object":                                           "chat.completion",
		"response.body.created":                                          int64(100),
		"response.body.model":                                            "m1",
		"response.body.choices.0.index":                                  int64(0),
		"response.body.choices.0.message.role":                           "assistant",
		"response.body.choices.0.message.content":                        "four",
		"response.body.choices.0.message.reasoning":                      "2+2",
		"response.body.choices.0.finish_reason":                          "stop",
		"response.body.choices.0.token_ids":                              "[7,8,9]",
		"response.body.usage.prompt_tokens":                              int64(5),
		"response.body.usage.completion_tokens":                          int64(3),
		"response.body.usage.total_tokens":                               int64(8),
		"response.body.usage.prompt_tokens_details.cached_tokens":        int64(2),
		"response.body.usage.completion_tokens_details.reasoning_tokens": int64(1),
		"response.body.usage.cost":                                       0.5,
	} {
		got := out.Get(path)
		var v any
		switch want.(type) {
		case nil:
			if got.Type != gjson.Null || !got.Exists() {
				t.Errorf("%s = %s, want null", path, got.Raw)
			}
			continue
		case int64:
			v = got.Int()
		case float64:
			v = got.Float()
		default:
			v = got.String()
			if got.IsArray() {
				v = got.Raw
			}
		}
		if v != want {
			t.Errorf("%s = %v, want %v", path, v, want)
		}
	}
	for path, prefix := range map[string]string{"id": "batch_req_", "response.request_id": "req_", "response.body.id": "chatcmpl-"} {
		if !strings.HasPrefix(out.Get(path).String(), prefix) {
			t.Errorf("%s = %s, want %s...", path, out.Get(path).Raw, prefix)
		}
	}

	// Tool calls without text: content is null, as OpenAI sends it.
	calls := &backend.Result{ToolCalls: json.RawMessage(`[{"id":"t1","type":"function"}]`), FinishReason: "tool_calls"}
	msg := gjson.ParseBytes(batchResult("b", "m1", 1, calls, time.Unix(0, 0))).Get("response.body.choices.0.message")
	if c := msg.Get("content"); c.Type != gjson.Null || msg.Get("tool_calls.0.id").String() != "t1" {
		t.Errorf("message %s", msg.Raw)
	}
}

func TestBatchOutputFromFailure(t *testing.T) {
	tests := []struct {
		name     string
		err      *backend.Error
		response string // the response member, "" to skip
	}{
		{"the server refused", &backend.Error{Kind: backend.KindRequest, Status: 400, Message: "too long"}, ""},
		{"no server answered", &backend.Error{Kind: backend.KindConnect, Message: "connection refused"}, "null"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := gjson.ParseBytes(batchFailure("x", tc.err))
			if out.Get("custom_id").String() != "x" || out.Get("error.code").String() != tc.err.Kind || out.Get("error.message").String() != tc.err.Message {
				t.Errorf("line %s", out.Raw)
			}
			switch resp := out.Get("response"); {
			case tc.response == "null" && resp.Type != gjson.Null:
				t.Errorf("response %s, want null", resp.Raw)
			case tc.err.Status > 0 && (resp.Get("status_code").Int() != int64(tc.err.Status) || resp.Get("body.error.message").String() != tc.err.Message):
				t.Errorf("response %s", resp.Raw)
			}
		})
	}
}

// testChatModel is the bundled model's chat template and tokenizer.
func testChatModel(t *testing.T) *chat.Model {
	t.Helper()
	m, err := chat.Load("builtin:"+bundle.TokenizerName, chat.TemplateAuto, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestBatchBodyLeavesTheCommandLineAlone checks that a line's own sampling
// fields reach its request only: the next line, without them, is sent with
// the command line's, as given.
func TestBatchBodyLeavesTheCommandLineAlone(t *testing.T) {
	in := &batchInput{kind: backend.OpenAI, model: "m", params: backend.Params{MaxTokens: 8, Sampling: backend.Sampling{Stop: []string{"A", "B"}, StopTokenIDs: []int{1, 2}}}}
	own, err := in.parse([]byte(`{"custom_id":"own","url":"/v1/chat/completions","body":{"messages":[],"stop":["X"],"stop_token_ids":[9]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if p := own.req.Params; strings.Join(p.Stop, ",") != "X" || len(p.StopTokenIDs) != 1 || p.StopTokenIDs[0] != 9 {
		t.Fatalf("the line's own params: stop %q stop_token_ids %v", p.Stop, p.StopTokenIDs)
	}
	next, err := in.parse([]byte(`{"custom_id":"next","url":"/v1/chat/completions","body":{"messages":[]}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []backend.Params{next.req.Params, in.params} {
		if strings.Join(p.Stop, ",") != "A,B" || len(p.StopTokenIDs) != 2 || p.StopTokenIDs[0] != 1 || p.StopTokenIDs[1] != 2 {
			t.Errorf("the command line's params became stop %q stop_token_ids %v", p.Stop, p.StopTokenIDs)
		}
	}
	if got := gjson.GetBytes(next.params, "stop").Raw; got != `["A","B"]` {
		t.Errorf("gen.params stop %s", got)
	}
}
