package sim

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

func chatBody(extra map[string]any) map[string]any {
	body := map[string]any{
		"model":    "sim/llm-sim-8b",
		"messages": []map[string]any{{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Write a haiku about batching."}},
	}
	for k, v := range extra {
		body[k] = v
	}
	return body
}

func TestChatCompletion(t *testing.T) {
	cfg := Default()
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 20}
	s, url := startSim(t, cfg)
	for _, path := range []string{"/v1/chat/completions", "/chat/completions"} {
		code, hdr, body := post(t, url+path, chatBody(map[string]any{"max_tokens": 100}))
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		doc := gjson.ParseBytes(body)
		if doc.Get("object").String() != "chat.completion" || !strings.HasPrefix(doc.Get("id").String(), "gen-") ||
			hdr.Get("X-Generation-Id") != doc.Get("id").String() {
			t.Errorf("envelope: %s", body)
		}
		choice := doc.Get("choices.0")
		if choice.Get("message.role").String() != "assistant" || len(strings.Fields(choice.Get("message.content").String())) != 20 {
			t.Errorf("message: %s", choice.Raw)
		}
		if choice.Get("finish_reason").String() != "stop" || choice.Get("native_finish_reason").String() != "stop" {
			t.Errorf("finish: %s", choice.Raw)
		}
		u := doc.Get("usage")
		prompt := int64(estimateTokens("system\nBe brief.\nuser\nWrite a haiku about batching.\n"))
		if u.Get("prompt_tokens").Int() != prompt || u.Get("completion_tokens").Int() != 21 || u.Get("total_tokens").Int() != prompt+21 ||
			!u.Get("prompt_tokens_details.cached_tokens").Exists() || !u.Get("completion_tokens_details.reasoning_tokens").Exists() {
			t.Errorf("usage: %s", u.Raw)
		}
		reqBody, _ := json.Marshal(chatBody(map[string]any{"max_tokens": 100}))
		if want, _, err := s.ExpectedChatAnswer(reqBody); err != nil || want != choice.Get("message.content").String() {
			t.Errorf("ExpectedChatAnswer %q (%v), answer %q", want, err, choice.Get("message.content").String())
		}
		wantCost := float64(prompt)*cfg.PromptPrice + 21*cfg.CompletionPrice
		if d := u.Get("cost").Float() - wantCost; d > 1e-12 || d < -1e-12 {
			t.Errorf("cost %v, want %v", u.Get("cost").Float(), wantCost)
		}
	}

	// max_completion_tokens wins over max_tokens and ends with length.
	_, _, body := post(t, url+"/v1/chat/completions", chatBody(map[string]any{"max_tokens": 100, "max_completion_tokens": 5}))
	if fr := gjson.GetBytes(body, "choices.0.finish_reason").String(); fr != "length" || gjson.GetBytes(body, "usage.completion_tokens").Int() != 5 {
		t.Errorf("max_completion_tokens: %s", body)
	}
	if code, _, body := post(t, url+"/v1/chat/completions", map[string]any{"model": "x"}); code != 400 || gjson.GetBytes(body, "error.code").Int() != 400 {
		t.Errorf("missing messages: %d %s", code, body)
	}
}

func TestChatReasoningAndTools(t *testing.T) {
	cfg := Default()
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 40}
	cfg.ReasoningShare = 0.25
	_, url := startSim(t, cfg)

	_, _, body := post(t, url+"/v1/chat/completions", chatBody(map[string]any{"reasoning": map[string]any{"effort": "medium"}}))
	msg := gjson.GetBytes(body, "choices.0.message")
	if n := len(strings.Fields(msg.Get("reasoning").String())); n != 10 {
		t.Errorf("reasoning words %d, want 10: %s", n, msg.Raw)
	}
	if msg.Get("reasoning_details.0.type").String() != "reasoning.text" || gjson.GetBytes(body, "usage.completion_tokens_details.reasoning_tokens").Int() != 10 {
		t.Errorf("reasoning details: %s", body)
	}
	if n := len(strings.Fields(msg.Get("content").String())); n != 30 {
		t.Errorf("content words %d, want 30", n)
	}

	_, _, body = post(t, url+"/v1/chat/completions", chatBody(map[string]any{"reasoning": map[string]any{"effort": "high", "exclude": true}}))
	if gjson.GetBytes(body, "choices.0.message.reasoning").Type != gjson.Null || gjson.GetBytes(body, "usage.completion_tokens_details.reasoning_tokens").Int() != 20 {
		t.Errorf("excluded reasoning: %s", body)
	}

	tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "lookup", "parameters": map[string]any{"type": "object"}}}}
	_, _, body = post(t, url+"/v1/chat/completions", chatBody(map[string]any{"tools": tools, "tool_choice": "required"}))
	choice := gjson.GetBytes(body, "choices.0")
	if choice.Get("finish_reason").String() != "tool_calls" || choice.Get("message.tool_calls.0.function.name").String() != "lookup" ||
		!gjson.Valid(choice.Get("message.tool_calls.0.function.arguments").String()) {
		t.Errorf("tool call: %s", choice.Raw)
	}
}

// TestChatThinkingSwitch checks the ways a request turns thinking on or
// off: OpenRouter's reasoning.enabled, and the chat template variables
// vLLM and SGLang take (chat_template_kwargs), a false one winning.
func TestChatThinkingSwitch(t *testing.T) {
	cfg := Default()
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 40}
	cfg.ReasoningShare = 0.25
	_, url := startSim(t, cfg)
	for _, tc := range []struct {
		name string
		body map[string]any
		want int // reasoning tokens
	}{
		{"enabled", map[string]any{"reasoning": map[string]any{"enabled": true}}, 10},
		{"disabled", map[string]any{"reasoning": map[string]any{"enabled": false}}, 0},
		{"enable_thinking", map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": true}}, 10},
		{"thinking false wins", map[string]any{"reasoning": map[string]any{"effort": "high"}, "chat_template_kwargs": map[string]any{"thinking": false}}, 0},
		{"effort kwarg", map[string]any{"chat_template_kwargs": map[string]any{"reasoning_effort": "high"}}, 20},
		{"none", map[string]any{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, body := post(t, url+"/v1/chat/completions", chatBody(tc.body))
			if n := gjson.GetBytes(body, "usage.completion_tokens_details.reasoning_tokens").Int(); n != int64(tc.want) {
				t.Errorf("reasoning tokens %d, want %d: %s", n, tc.want, body)
			}
			if has := gjson.GetBytes(body, "choices.0.message.reasoning").String() != ""; has != (tc.want > 0) {
				t.Errorf("reasoning text present %v, want %v: %s", has, tc.want > 0, body)
			}
		})
	}
}

func TestChatStream(t *testing.T) {
	cfg := Default()
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 30}
	cfg.StepTime = time.Millisecond
	_, url := startSim(t, cfg)
	req := chatBody(map[string]any{"reasoning": map[string]any{"enabled": true}})
	_, _, plain := post(t, url+"/v1/chat/completions", req)
	req["stream"] = true
	code, hdr, body := post(t, url+"/v1/chat/completions", req)
	if code != 200 || hdr.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d type %q", code, hdr.Get("Content-Type"))
	}
	events, comments := sseEvents(body)
	if len(comments) == 0 || comments[0] != ": OPENROUTER PROCESSING" {
		t.Errorf("comments %q", comments)
	}
	if events[len(events)-1] != "[DONE]" {
		t.Fatalf("stream does not end in [DONE]: %q", events)
	}
	var content, reasoning, finish string
	for _, ev := range events[:len(events)-2] {
		c := gjson.Parse(ev)
		if c.Get("object").String() != "chat.completion.chunk" {
			t.Fatalf("chunk %s", ev)
		}
		content += c.Get("choices.0.delta.content").String()
		reasoning += c.Get("choices.0.delta.reasoning").String()
		if fr := c.Get("choices.0.finish_reason").String(); fr != "" {
			finish = fr
		}
	}
	usage := gjson.Parse(events[len(events)-2])
	if len(usage.Get("choices").Array()) != 0 || usage.Get("usage.total_tokens").Int() == 0 {
		t.Errorf("usage chunk %s", usage.Raw)
	}
	want := gjson.ParseBytes(plain).Get("choices.0.message")
	if content != want.Get("content").String() || reasoning != want.Get("reasoning").String() || finish != "stop" {
		t.Errorf("stream content %q reasoning %q finish %q; want %q, %q", content, reasoning, finish, want.Get("content"), want.Get("reasoning"))
	}
	if usage.Get("usage").Raw != gjson.ParseBytes(plain).Get("usage").Raw {
		t.Errorf("stream usage %s, plain %s", usage.Get("usage").Raw, gjson.ParseBytes(plain).Get("usage").Raw)
	}
}

func TestModelsAndAuth(t *testing.T) {
	cfg := Default()
	cfg.APIKey = "sk-sim"
	_, url := startSim(t, cfg)
	resp := do(t, "GET", url+"/v1/models", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: %d", resp.StatusCode)
	}
	code, _, body := post(t, url+"/v1/chat/completions", chatBody(nil), "Authorization", "Bearer wrong")
	if code != http.StatusUnauthorized || gjson.GetBytes(body, "error.code").Int() != 401 || gjson.GetBytes(body, "error.message").String() == "" {
		t.Fatalf("wrong key: %d %s", code, body)
	}
	code, _, _ = post(t, url+"/generate", map[string]any{"input_ids": []int{1}}, "Authorization", "Bearer sk-sim")
	if code != 200 {
		t.Fatalf("right key: %d", code)
	}
	if code, _ := get(t, url+"/health"); code != 200 {
		t.Fatalf("/health needs no key, got %d", code)
	}
	resp = do(t, "GET", url+"/v1/models", nil, "Authorization", "Bearer sk-sim")
	models, _ := readAllErr(resp)
	m := gjson.GetBytes(models, "data.0")
	if gjson.GetBytes(models, "object").String() != "list" || m.Get("id").String() != cfg.ModelName ||
		m.Get("pricing.prompt").String() != "0.0000001" || m.Get("context_length").Int() != int64(cfg.ContextLength) {
		t.Fatalf("models: %s", models)
	}
}
