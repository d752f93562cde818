package backend

import (
	"encoding/json"
	"testing"

	"github.com/synthpipe/synthpipe/lib/thinking"
)

// everyParam sets every sampling parameter, with values that test their
// encoding: a negative and a -1, a float written with an exponent, strings
// that encoding/json escapes.
func everyParam() Params {
	return Params{MaxTokens: 2048, Temperature: ptr(0.7), TopP: ptr(0.95), TopK: ptr(-1), MinP: ptr(1e-7),
		Stop: []string{"</answer>", "<&>\n"}, StopTokenIDs: []int{151645, 0}, Seed: ptr(int64(-42)),
		ReasoningEffort: "high", ReasoningMaxTokens: 2000}
}

// TestBodiesByteForByte pins the request bodies, byte for byte, with every
// sampling parameter set and with none: a parameter left out of a body, or
// written otherwise, fails it.
func TestBodiesByteForByte(t *testing.T) {
	const (
		chatHead = `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":2048,"temperature":0.7,"top_p":0.95,"top_k":-1,"min_p":1e-7,` +
			`"stop":["\u003c/answer\u003e","\u003c\u0026\u003e\n"],"stop_token_ids":[151645,0],"seed":-42,`
		usage = `"usage":{"include":true}}`
	)
	on, off, low := thinking.Choice{Thinking: true}, thinking.Choice{}, thinking.Choice{Thinking: true, Effort: "low"}
	for _, tc := range []struct {
		name     string
		params   Params
		thinking *thinking.Choice
		stream   bool
		sglang   string
		chat     string
	}{
		{name: "every parameter", params: everyParam(),
			sglang: `{"input_ids":[101,102],"rid":"r#1","sampling_params":{"max_new_tokens":2048,"temperature":0.7,"top_p":0.95,"top_k":-1,"min_p":1e-7,` +
				`"stop":["\u003c/answer\u003e","\u003c\u0026\u003e\n"],"stop_token_ids":[151645,0],"sampling_seed":-42,"skip_special_tokens":false,"no_stop_trim":true}}`,
			chat: chatHead + `"reasoning":{"effort":"high","max_tokens":2000},` + usage},
		{name: "every parameter, streamed", params: everyParam(), stream: true,
			sglang: `{"input_ids":[101,102],"rid":"r#1","sampling_params":{"max_new_tokens":2048,"temperature":0.7,"top_p":0.95,"top_k":-1,"min_p":1e-7,` +
				`"stop":["\u003c/answer\u003e","\u003c\u0026\u003e\n"],"stop_token_ids":[151645,0],"sampling_seed":-42,"skip_special_tokens":false,"no_stop_trim":true},"stream":true}`,
			chat: chatHead + `"reasoning":{"effort":"high","max_tokens":2000},"stream":true,"stream_options":{"include_usage":true},` + usage},
		{name: "thinking on", params: everyParam(), thinking: &on,
			chat: chatHead + `"reasoning":{"enabled":true,"effort":"high","max_tokens":2000},"chat_template_kwargs":{"enable_thinking":true,"thinking":true},` + usage},
		{name: "thinking off", params: everyParam(), thinking: &off,
			chat: chatHead + `"reasoning":{"enabled":false},"chat_template_kwargs":{"enable_thinking":false,"thinking":false},` + usage},
		{name: "thinking at an effort", params: everyParam(), thinking: &low,
			chat: chatHead + `"reasoning":{"enabled":true,"effort":"low","max_tokens":2000},"chat_template_kwargs":{"reasoning_effort":"low"},` + usage},
		{name: "none", params: Params{MaxTokens: 16},
			sglang: `{"input_ids":[101,102],"rid":"r#1","sampling_params":{"max_new_tokens":16,"skip_special_tokens":false,"no_stop_trim":true}}`,
			chat:   `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":16,` + usage},
		{name: "thinking alone", params: Params{MaxTokens: 16}, thinking: &on,
			chat: `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":16,"reasoning":{"enabled":true},"chat_template_kwargs":{"enable_thinking":true,"thinking":true},` + usage},
		{name: "reasoning limit alone", params: Params{MaxTokens: 16, ReasoningMaxTokens: 300},
			sglang: `{"input_ids":[101,102],"rid":"r#1","sampling_params":{"max_new_tokens":16,"skip_special_tokens":false,"no_stop_trim":true}}`,
			chat:   `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":16,"reasoning":{"max_tokens":300},` + usage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &Request{ID: "r", Attempt: 1, InputIDs: []int{101, 102}, Messages: json.RawMessage(`[{"role":"user","content":"hi"}]`),
				Params: tc.params, Thinking: tc.thinking}
			if tc.sglang != "" {
				got, err := appendSGLangBody(nil, req, "r#1", tc.stream)
				if err != nil || string(got) != tc.sglang {
					t.Errorf("sglang body (%v)\n got %s\nwant %s", err, got, tc.sglang)
				}
			}
			chat := &openAI{client: client{opts: Options{Model: "m", Stream: tc.stream}}}
			got, err := chat.requestBody(req)
			if err != nil || string(got) != tc.chat {
				t.Errorf("chat body (%v)\n got %s\nwant %s", err, got, tc.chat)
			}
		})
	}
}
