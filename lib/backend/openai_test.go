package backend

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/thinking"
)

const chatAnswerOK = `{"id":"gen-1","model":"qwen/qwen3-8b","object":"chat.completion",
	"choices":[{"index":0,"message":{"role":"assistant","content":"Paris.","reasoning":"The capital...",
		"reasoning_details":[{"type":"reasoning.text","text":"The capital...","index":0}]},
		"finish_reason":"stop","native_finish_reason":"end_turn"}],
	"usage":{"prompt_tokens":12,"completion_tokens":30,"total_tokens":42,"cost":0.00042,
		"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":27}}}`

func TestOpenAIRequestBody(t *testing.T) {
	req := &Request{
		ID: "rec-1", Attempt: 2,
		Messages: json.RawMessage(`[{"role":"user","content":"What is the capital of France?"}]`),
		Tools:    json.RawMessage(`[{"type":"function","function":{"name":"search","parameters":{"type":"object"}}}]`),
		Params: Params{
			MaxTokens: 4096, Sampling: Sampling{Temperature: ptr(0.6), TopP: ptr(0.95), TopK: ptr(20), MinP: ptr(0.0),
				Stop: []string{"<|im_end|>"}, Seed: ptr(int64(7)),
				ReasoningEffort: "high", ReasoningMaxTokens: 2000},
		},
	}
	common := `"model":"qwen/qwen3-8b","messages":[{"role":"user","content":"What is the capital of France?"}],
		"tools":[{"type":"function","function":{"name":"search","parameters":{"type":"object"}}}],
		"max_tokens":4096,"temperature":0.6,"top_p":0.95,"top_k":20,"min_p":0,"stop":["<|im_end|>"],"seed":7,
		"reasoning":{"effort":"high","max_tokens":2000},"usage":{"include":true}`
	for _, tc := range []struct {
		stream bool
		want   string
	}{
		{false, `{` + common + `}`},
		{true, `{` + common + `,"stream":true,"stream_options":{"include_usage":true}}`},
	} {
		t.Run(fmt.Sprintf("stream=%v", tc.stream), func(t *testing.T) {
			handler := answerJSON(200, chatAnswerOK)
			if tc.stream {
				handler = answerSSE(sseOf(`{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}`, "[DONE]"))
			}
			s := newStub(t, handler)
			b := NewOpenAI(Options{Stream: tc.stream, Model: "qwen/qwen3-8b", APIKey: "sk-or-v1-secret", Referer: "https://example.org/synthpipe", Title: "synthpipe"})
			if _, err := b.Do(ctxTimeout(t), s.URL, req); err != nil {
				t.Fatal(err)
			}
			assertJSONEqual(t, s.lastBody(t), tc.want)
			h := s.lastHeader(t)
			if s.paths[0] != "/chat/completions" || h.Get("Authorization") != "Bearer sk-or-v1-secret" ||
				h.Get("HTTP-Referer") != "https://example.org/synthpipe" || h.Get("X-Title") != "synthpipe" ||
				h.Get("Content-Type") != "application/json" {
				t.Fatalf("path %s headers %v", s.paths[0], h)
			}
			if tc.stream && (h.Get("Accept") != "text/event-stream" || h.Get("Accept-Encoding") != "identity") {
				t.Fatalf("stream headers %v", h)
			}
		})
	}
}

func TestOpenAIExtraOverridesAndRemoves(t *testing.T) {
	s := newStub(t, answerJSON(200, chatAnswerOK))
	req := chatReq()
	req.Params.ReasoningEffort = "low"
	req.Params.Extra = json.RawMessage(`{"provider":{"order":["deepinfra"],"allow_fallbacks":false},"enforce_distillable_text":true,
		"reasoning":{"exclude":true},"usage":null,"max_tokens":99}`)
	if _, err := NewOpenAI(Options{Model: "m"}).Do(ctxTimeout(t), s.URL, req); err != nil {
		t.Fatal(err)
	}
	assertJSONEqual(t, s.lastBody(t), `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":99,
		"reasoning":{"effort":"low","exclude":true},"provider":{"order":["deepinfra"],"allow_fallbacks":false},"enforce_distillable_text":true}`)
}

// TestOpenAIThinking checks that a record's thinking setting reaches the
// server both ways it is read: OpenRouter's reasoning switch, and the chat
// template's variables for servers that render the template (vLLM,
// SGLang). Off drops --reasoning-effort, which would turn reasoning on.
func TestOpenAIThinking(t *testing.T) {
	for _, tc := range []struct {
		name   string
		choice thinking.Choice
		want   string
	}{
		{"on", thinking.Choice{Thinking: true}, `"reasoning":{"enabled":true,"effort":"low"},"chat_template_kwargs":{"enable_thinking":true,"thinking":true}`},
		{"off", thinking.Choice{}, `"reasoning":{"enabled":false},"chat_template_kwargs":{"enable_thinking":false,"thinking":false}`},
		{"effort", thinking.Choice{Thinking: true, Effort: "high"}, `"reasoning":{"enabled":true,"effort":"high"},"chat_template_kwargs":{"reasoning_effort":"high"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStub(t, answerJSON(200, chatAnswerOK))
			req := chatReq()
			req.Params.ReasoningEffort = "low"
			req.Thinking = &tc.choice
			if _, err := NewOpenAI(Options{Model: "m"}).Do(ctxTimeout(t), s.URL, req); err != nil {
				t.Fatal(err)
			}
			assertJSONEqual(t, s.lastBody(t), `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":`+
				fmt.Sprint(req.Params.MaxTokens)+`,`+tc.want+`,"usage":{"include":true}}`)
		})
	}
}

func TestOpenAIAnswer(t *testing.T) {
	s := newStub(t, answerJSON(200, "\n\n"+chatAnswerOK)) // OpenRouter pads slow answers with whitespace
	res, err := NewOpenAI(Options{}).Do(ctxTimeout(t), s.URL, chatReq())
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Paris." || res.Reasoning != "The capital..." || res.FinishReason != "stop" || string(res.NativeFinishReason) != `"end_turn"` ||
		res.Model != "qwen/qwen3-8b" || res.PromptTokens != 12 || res.CompletionTokens != 30 || res.CachedTokens != 4 ||
		res.ReasoningTokens != 27 || res.Cost == nil || *res.Cost != 0.00042 || res.OutputIDs != nil {
		t.Fatalf("got %+v", res)
	}
	assertJSONEqual(t, res.ReasoningDetails, `[{"type":"reasoning.text","text":"The capital...","index":0}]`)
	if len(res.Usage) == 0 || res.Latency <= 0 {
		t.Fatalf("usage %s latency %v", res.Usage, res.Latency)
	}
}

func TestOpenAIAnswerVariants(t *testing.T) {
	for _, tc := range []struct {
		name, body                      string
		finish, text, reasoning, native string
		toolCalls                       string
	}{
		{name: "vLLM reasoning_content", body: `{"choices":[{"index":0,"message":{"content":"4","reasoning_content":"2+2"},"finish_reason":"length"}]}`,
			finish: "length", text: "4", reasoning: "2+2", native: `"length"`},
		{name: "tool call", body: `{"choices":[{"index":0,"message":{"content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"q\":\"x\"}"}}]},"finish_reason":"tool_calls"}]}`,
			finish: "tool_calls", toolCalls: `[{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"q\":\"x\"}"}}]`, native: `"tool_calls"`},
		{name: "content filter", body: `{"choices":[{"index":0,"message":{"content":""},"finish_reason":"content_filter"}]}`, finish: "content_filter", native: `"content_filter"`},
		{name: "provider value", body: `{"choices":[{"index":0,"message":{"content":"a"},"finish_reason":"max_tokens"}]}`, finish: "length", text: "a", native: `"max_tokens"`},
		{name: "unknown value", body: `{"choices":[{"index":0,"message":{"content":"a"},"finish_reason":"weird"}]}`, finish: "weird", text: "a", native: `"weird"`},
		{name: "content parts", body: `{"choices":[{"index":0,"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"finish_reason":"stop"}]}`, finish: "stop", text: "ab", native: `"stop"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStub(t, answerJSON(200, tc.body))
			res, err := NewOpenAI(Options{}).Do(ctxTimeout(t), s.URL, chatReq())
			if err != nil {
				t.Fatal(err)
			}
			if res.FinishReason != tc.finish || res.Text != tc.text || res.Reasoning != tc.reasoning || string(res.NativeFinishReason) != tc.native {
				t.Fatalf("got %+v", res)
			}
			if tc.toolCalls != "" {
				assertJSONEqual(t, res.ToolCalls, tc.toolCalls)
			} else if res.ToolCalls != nil {
				t.Fatalf("tool calls %s", res.ToolCalls)
			}
		})
	}
}

func TestOpenAIAnswerFailures(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		kind       string
	}{
		{"finish_reason error", `{"choices":[{"index":0,"message":{"content":"par"},"finish_reason":"error"}]}`, KindStream},
		{"error body with 200", `{"error":{"code":502,"message":"Provider returned error","metadata":{"provider_name":"X","raw":"upstream timeout"}}}`, KindStream},
		{"vLLM error object", `{"object":"error","message":"engine dead","type":"InternalServerError","code":500}`, KindStream},
		{"no choices", `{"id":"x","choices":[]}`, KindProtocol},
		{"garbage", "\x00\x1f{\"text\": \"unterminated", KindProtocol},
		{"html", "<html><head><title>502 Bad Gateway</title></head></html>", KindProtocol},
		{"abort", `{"choices":[{"index":0,"message":{"content":""},"finish_reason":"abort"}]}`, KindAbort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStub(t, answerJSON(200, tc.body))
			_, err := NewOpenAI(Options{}).Do(ctxTimeout(t), s.URL, chatReq())
			e := asError(t, err, tc.kind, true)
			if tc.name == "error body with 200" && (e.Status != 502 || e.Message != "Provider returned error (provider X): upstream timeout") {
				t.Fatalf("got %+v", e)
			}
		})
	}
}

func TestOpenAIStream(t *testing.T) {
	stream := ": OPENROUTER PROCESSING\n\n" + sseOf(
		`{"id":"g","model":"deepseek/deepseek-r1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"id":"g","choices":[{"index":0,"delta":{"reasoning":"Let me ","reasoning_details":[{"type":"reasoning.text","text":"Let me ","index":0}]},"finish_reason":null}]}`,
		`{"id":"g","choices":[{"index":0,"delta":{"reasoning":"think.","reasoning_details":[{"type":"reasoning.text","text":"think.","index":0,"signature":"sig"}]},"finish_reason":null}]}`,
		`{"id":"g","choices":[{"index":0,"delta":{"content":"I will search."},"finish_reason":null}]}`,
		`{"id":"g","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"search","arguments":""}}]},"finish_reason":null}]}`,
		`{"id":"g","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"open","arguments":"{\"u"}}]},"finish_reason":null}]}`,
		`{"id":"g","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":"}}]},"finish_reason":null}]}`,
		`{"id":"g","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"x\"}"}},{"index":1,"function":{"arguments":"\":1}"}}]},"finish_reason":null}]}`,
	) + ": OPENROUTER PROCESSING\n\n" + sseOf(
		`{"id":"g","choices":[{"index":0,"delta":{"content":""},"finish_reason":"tool_calls","native_finish_reason":"tool_use"}]}`,
		`{"id":"g","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":20,"cost":0.001,"completion_tokens_details":{"reasoning_tokens":5}}}`,
		"[DONE]")
	s := newStub(t, answerSSE(stream))
	res, err := NewOpenAI(Options{Stream: true}).Do(ctxTimeout(t), s.URL, chatReq())
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "I will search." || res.Reasoning != "Let me think." || res.FinishReason != "tool_calls" ||
		string(res.NativeFinishReason) != `"tool_use"` || res.Model != "deepseek/deepseek-r1" ||
		res.PromptTokens != 10 || res.CompletionTokens != 20 || res.ReasoningTokens != 5 || *res.Cost != 0.001 {
		t.Fatalf("got %+v", res)
	}
	assertJSONEqual(t, res.ToolCalls, `[{"id":"call_a","type":"function","function":{"name":"search","arguments":"{\"q\":\"x\"}"}},
		{"id":"call_b","type":"function","function":{"name":"open","arguments":"{\"u\":1}"}}]`)
	assertJSONEqual(t, res.ReasoningDetails, `[{"type":"reasoning.text","text":"Let me think.","index":0,"signature":"sig"}]`)
	if res.FirstToken <= 0 {
		t.Fatalf("first token %v", res.FirstToken)
	}
}

// TestOpenAIChargedFailures: what a failed attempt was charged is kept on
// its error (usage.cost of the error chunk or body, or of an earlier usage
// chunk); an error reported with status 200 is classified by its
// error.code as that status would be; a stream that reached [DONE] without
// a finish reason is an answer, as a whole completion with a null one is.
func TestOpenAIChargedFailures(t *testing.T) {
	ok := `{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`
	usage := `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"cost":0.25}}`
	for _, tc := range []struct {
		name, stream string
		kind         string
		retryable    bool
		fatal        bool
		cost         float64 // -1: none
	}{
		{"error chunk with usage", sseOf(ok, `{"error":{"code":"server_error","message":"Provider disconnected"},"usage":{"cost":0.5},"choices":[{"index":0,"delta":{},"finish_reason":"error"}]}`), KindStream, true, false, 0.5},
		{"usage before the error", sseOf(ok, usage, `{"error":{"code":502,"message":"upstream"}}`), KindStream, true, false, 0.25},
		{"finish_reason error with usage", sseOf(ok, `{"choices":[{"index":0,"delta":{},"finish_reason":"error"}],"usage":{"cost":"0.125"}}`, "[DONE]"), KindStream, true, false, 0.125},
		{"code 402 mid-stream", sseOf(ok, `{"error":{"code":402,"message":"Insufficient credits"}}`), KindCredits, false, true, -1},
		{"code 400 mid-stream", sseOf(ok, `{"error":{"code":400,"message":"context too long"}}`), KindRequest, false, false, -1},
		{"code 429 as a string", sseOf(ok, `{"error":{"code":"429","message":"slow down"}}`), KindRate, true, false, -1},
		{"code 503", sseOf(ok, `{"error":{"code":503,"message":"no provider"}}`), KindStream, true, false, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStub(t, answerSSE(tc.stream))
			_, err := NewOpenAI(Options{Stream: true}).Do(ctxTimeout(t), s.URL, chatReq())
			e := asError(t, err, tc.kind, tc.retryable)
			if e.Fatal != tc.fatal {
				t.Errorf("fatal %v, want %v", e.Fatal, tc.fatal)
			}
			switch {
			case tc.cost < 0 && e.Cost != nil:
				t.Errorf("cost %v, want none", *e.Cost)
			case tc.cost >= 0 && (e.Cost == nil || *e.Cost != tc.cost):
				t.Errorf("cost %v, want %v", e.Cost, tc.cost)
			}
		})
	}
	for _, tc := range []struct {
		body      string
		kind      string
		retryable bool
		fatal     bool
	}{
		{`{"error":{"code":402,"message":"Insufficient credits"}}`, KindCredits, false, true},
		{`{"error":{"code":400,"message":"bad"}}`, KindRequest, false, false},
		{`{"error":{"code":401,"message":"No auth"}}`, KindAuth, false, true},
		{`{"error":{"code":429,"message":"rate"}}`, KindRate, true, false},
		{`{"error":{"code":502,"message":"down"},"usage":{"cost":0.5}}`, KindStream, true, false},
		{`{"error":{"code":"server_error","message":"?"}}`, KindStream, true, false},
	} {
		t.Run("body "+tc.body, func(t *testing.T) {
			s := newStub(t, answerJSON(200, tc.body))
			_, err := NewOpenAI(Options{}).Do(ctxTimeout(t), s.URL, chatReq())
			e := asError(t, err, tc.kind, tc.retryable)
			if e.Fatal != tc.fatal {
				t.Errorf("fatal %v, want %v", e.Fatal, tc.fatal)
			}
		})
	}
	s := newStub(t, answerSSE(sseOf(ok, usage, "[DONE]")))
	res, err := NewOpenAI(Options{Stream: true}).Do(ctxTimeout(t), s.URL, chatReq())
	if err != nil || res.Text != "a" || res.FinishReason != "" || res.Cost == nil || *res.Cost != 0.25 {
		t.Fatalf("a stream to [DONE] without a finish reason: %+v %v", res, err)
	}
}

func TestOpenAIStreamFailures(t *testing.T) {
	ok := `{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`
	for _, tc := range []struct {
		name, stream string
		kind         string
	}{
		{"OpenRouter error chunk", sseOf(ok, `{"id":"g","object":"chat.completion.chunk","error":{"code":"server_error","message":"Provider disconnected"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`), KindStream},
		{"finish_reason error alone", sseOf(ok, `{"choices":[{"index":0,"delta":{},"finish_reason":"error"}]}`, "[DONE]"), KindStream},
		{"plain error event", sseOf(ok, `{"error":{"message":"overloaded"}}`), KindStream},
		{"no [DONE]", sseOf(ok, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`), KindConnect},
		{"garbage", sseOf(ok, "{{{"), KindProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStub(t, answerSSE(tc.stream))
			_, err := NewOpenAI(Options{Stream: true}).Do(ctxTimeout(t), s.URL, chatReq())
			asError(t, err, tc.kind, true)
		})
	}
}

func TestOpenAIServerInfoAndPricing(t *testing.T) {
	models := `{"data":[{"id":"other/model","context_length":8000,"pricing":{"prompt":"1","completion":"2"}},
		{"id":"qwen/qwen3-8b","canonical_slug":"qwen/qwen3-8b-04-28","context_length":40960,"pricing":{"prompt":"0.000000035","completion":"0.000000138"}},
		{"id":"vllm-served","max_model_len":32768}]}`
	s := newStubPaths(t, map[string]http.HandlerFunc{"/models": answerJSON(200, models)})
	info, err := NewOpenAI(Options{Model: "vllm-served"}).ServerInfo(ctxTimeout(t), s.URL)
	if err != nil || info == nil || info.ContextLength != 32768 {
		t.Fatalf("info %+v err %v", info, err)
	}
	if info, err := NewOpenAI(Options{Model: "absent"}).ServerInfo(ctxTimeout(t), s.URL); info != nil || err != nil {
		t.Fatalf("absent model: %+v %v", info, err)
	}
	p, c, err := Pricing(ctxTimeout(t), s.URL, "qwen/qwen3-8b-04-28")
	if err != nil || p != 0.000000035 || c != 0.000000138 {
		t.Fatalf("pricing %v %v %v", p, c, err)
	}
	_, _, err = Pricing(ctxTimeout(t), s.URL, "vllm-served")
	asError(t, err, KindProtocol, false)
	_, _, err = Pricing(ctxTimeout(t), s.URL, "nope")
	asError(t, err, KindRequest, false)

	none := newStub(t, nil)
	if info, err := NewOpenAI(Options{Model: "m"}).ServerInfo(ctxTimeout(t), none.URL); info != nil || err != nil {
		t.Fatalf("no /models: %+v %v", info, err)
	}
}

func TestReasoningDetailsMerge(t *testing.T) {
	var r reasoningDetails
	for _, delta := range []string{
		`[{"type":"reasoning.text","text":"a","index":0}]`,
		`["not an object", {"type":"reasoning.text","text":"b","index":0,"format":"anthropic-claude-v1"}]`,
		`[{"type":"reasoning.text","text":"","index":0,"signature":"sig"}]`,
		`[{"type":"reasoning.encrypted","data":"xyz","index":1,"id":12345678901234567890}]`,
		`[{"type":"reasoning.text","text":"c","index":2}]`,
	} {
		r.add(gjson.Parse(delta))
	}
	assertJSONEqual(t, r.json(), `[{"type":"reasoning.text","text":"ab","index":0,"format":"anthropic-claude-v1","signature":"sig"},
		{"type":"reasoning.encrypted","data":"xyz","index":1,"id":12345678901234567890},
		{"type":"reasoning.text","text":"c","index":2}]`)
	if !strings.Contains(string(r.json()), "12345678901234567890") {
		t.Fatalf("a large number lost precision: %s", r.json())
	}
}

// TestToolCallsExtremeIndexes: tool calls are ordered by index whatever its
// size: a difference of two int64 indexes overflows, so it is never what
// the order is computed from.
func TestToolCallsExtremeIndexes(t *testing.T) {
	call := func(idx, id string) string {
		return `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":` + idx + `,"id":"` + id + `","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":null}]}`
	}
	s := newStub(t, answerSSE(sseOf(call("9223372036854775807", "last"), call("-9223372036854775808", "first"), call("0", "middle"),
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, "[DONE]")))
	res, err := NewOpenAI(Options{Stream: true}).Do(ctxTimeout(t), s.URL, chatReq())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	gjson.ParseBytes(res.ToolCalls).ForEach(func(_, c gjson.Result) bool {
		ids = append(ids, c.Get("id").String())
		return true
	})
	if strings.Join(ids, ",") != "first,middle,last" {
		t.Fatalf("tool calls in the order %v, want first,middle,last", ids)
	}
}
