package backend

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
)

// answerOffline runs a parser over raw as if a server had answered it with
// status 200, as one JSON body or as an event stream.
func answerOffline(raw []byte, stream bool, p answerParser) (*Result, *Error) {
	c := newClient(Options{Stream: stream, MaxResponseBytes: 1 << 20}, SGLang)
	ctx := context.Background()
	header := http.Header{"Content-Type": {"application/json"}}
	if stream {
		header.Set("Content-Type", "text/event-stream")
	}
	x := &exchange{parent: ctx, ctx: ctx, resp: &http.Response{StatusCode: 200, Header: header, Body: io.NopCloser(bytes.NewReader(raw))}}
	return c.answer(x, p)
}

// checkOutcome asserts that a parse gave exactly a result or an error, and
// that either is well formed.
func checkOutcome(t *testing.T, res *Result, e *Error) {
	t.Helper()
	switch {
	case res == nil && e == nil:
		t.Fatal("neither a result nor an error")
	case res != nil && e != nil:
		t.Fatalf("both a result and an error: %+v %+v", res, e)
	case e != nil && (e.Kind == "" || e.Message == ""):
		t.Fatalf("unclassified error %+v", e)
	}
}

var sglangSeeds = []string{
	`{"text":" a</s>","output_ids":[5,2],"meta_info":{"finish_reason":{"type":"stop","matched":2},"prompt_tokens":3,"completion_tokens":2,"cached_tokens":0,"num_retractions":0}}`,
	`{"text":"","output_ids":[],"meta_info":{"finish_reason":{"type":"abort","message":"x","status_code":503}}}`,
	`{"text":"a","output_ids":[1],"meta_info":{"finish_reason":{"type":"length","length":1}}}`,
	"data: {\"text\":\" a\",\"output_ids\":[5],\"meta_info\":{\"finish_reason\":null,\"completion_tokens\":1}}\n\n" +
		"data: {\"text\":\" b\",\"output_ids\":[6],\"meta_info\":{\"finish_reason\":{\"type\":\"stop\",\"matched\":2},\"completion_tokens\":2}}\n\ndata: [DONE]\n\n",
	"data: {\"text\":\" a\",\"output_ids\":[5],\"meta_info\":{\"finish_reason\":null,\"completion_tokens\":1}}\n\n" +
		"data: {\"text\":\" a b\",\"output_ids\":[5,6],\"meta_info\":{\"finish_reason\":null,\"completion_tokens\":2}}\n\n" +
		"data: {\"text\":\" a b c\",\"output_ids\":[5,6,7],\"meta_info\":{\"finish_reason\":null,\"completion_tokens\":3}}\n\n" +
		"data: {\"text\":\" a b c\",\"output_ids\":[5,6,7,2],\"meta_info\":{\"finish_reason\":{\"type\":\"stop\",\"matched\":2},\"completion_tokens\":4}}\n\ndata: [DONE]\n\n",
	"data: {\"error\":{\"message\":\"boom\"}}\n\ndata: [DONE]\n\n",
	`[{"text":"batch"}]`,
	"\x00\x1f{\"text\": \"unterminated",
}

func FuzzSGLangResponse(f *testing.F) {
	for _, s := range sglangSeeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, stream bool) {
		res, e := answerOffline(raw, stream, &sglangAnswer{promptTokens: 3})
		checkOutcome(t, res, e)
		if res != nil && res.FinishReason == "" {
			t.Fatalf("result without a finish reason: %+v", res)
		}
	})
}

var openAISeeds = []string{
	chatAnswerOK,
	`{"choices":[{"index":0,"message":{"content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
	`{"error":{"code":502,"message":"Provider returned error","metadata":{"raw":"x"}}}`,
	": OPENROUTER PROCESSING\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\",\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"r\",\"index\":0}]},\"finish_reason\":null}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\"}}]},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"cost\":0.1}}\n\ndata: [DONE]\n\n",
	"data: {\"error\":{\"code\":\"server_error\",\"message\":\"x\"},\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"error\"}]}\n\n",
	"<html><title>502</title></html>",
}

func FuzzOpenAIResponse(f *testing.F) {
	for _, s := range openAISeeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, stream bool) {
		res, e := answerOffline(raw, stream, &chatAnswer{})
		checkOutcome(t, res, e)
	})
}
