package backend

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestSGLangRequestBody(t *testing.T) {
	req := &Request{
		ID: "rec-7", Attempt: 3, InputIDs: []int{101, 102, 103},
		Params: Params{MaxTokens: 2048, Sampling: Sampling{
			Temperature:  ptr(0.7),
			TopP:         ptr(0.95),
			TopK:         ptr(40),
			MinP:         ptr(0.05),
			Stop:         []string{"</answer>"},
			StopTokenIDs: []int{151645},
			Seed:         ptr(int64(42)),
		}},
	}
	rid := RID("rec-7", 3)
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			s := newStub(t, answerJSON(200, `{"text":"","output_ids":[],"meta_info":{"finish_reason":{"type":"length","length":0}}}`))
			b := NewSGLang(Options{Stream: stream})
			if _, err := b.Do(ctxTimeout(t), s.URL, req); err != nil {
				t.Fatal(err)
			}
			streamField := ""
			if stream {
				streamField = `,"stream":true`
			}
			assertJSONEqual(t, s.lastBody(t), `{"input_ids":[101,102,103],"rid":"`+rid+`","sampling_params":{
				"max_new_tokens":2048,"temperature":0.7,"top_p":0.95,"top_k":40,"min_p":0.05,
				"stop":["</answer>"],"stop_token_ids":[151645],"sampling_seed":42,
				"skip_special_tokens":false,"no_stop_trim":true}`+streamField+`}`)
			if s.paths[0] != "/generate" {
				t.Fatalf("posted to %s", s.paths[0])
			}
		})
	}
}

func TestSGLangMinimalBodyAndExtra(t *testing.T) {
	s := newStub(t, answerJSON(200, `{"text":"","output_ids":[],"meta_info":{"finish_reason":{"type":"length","length":0}}}`))
	req := sglangReq()
	req.Params.Extra = json.RawMessage(`{"sampling_params":{"repetition_penalty":1.1,"no_stop_trim":false},"return_logprob":true}`)
	if _, err := NewSGLang(Options{}).Do(ctxTimeout(t), s.URL+"/", req); err != nil {
		t.Fatal(err)
	}
	assertJSONEqual(t, s.lastBody(t), `{"input_ids":[1,2,3],"rid":"`+RID("rec-1", 1)+`","return_logprob":true,
		"sampling_params":{"max_new_tokens":16,"skip_special_tokens":false,"no_stop_trim":false,"repetition_penalty":1.1}}`)
}

func TestSGLangRefusesWhatItCannotSend(t *testing.T) {
	b := NewSGLang(Options{})
	for name, req := range map[string]*Request{
		"no ids":        {ID: "a", Attempt: 1, Params: Params{MaxTokens: 5}},
		"no max tokens": {ID: "a", Attempt: 1, InputIDs: []int{1}},
		"bad extra":     {ID: "a", Attempt: 1, InputIDs: []int{1}, Params: Params{MaxTokens: 5, Extra: json.RawMessage(`[1]`)}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := b.Do(ctxTimeout(t), "http://127.0.0.1:1", req)
			asError(t, err, KindRequest, false)
		})
	}
}

func TestRIDsDifferPerAttempt(t *testing.T) {
	a, b := RID("x", 1), RID("x", 2)
	if a == b || !strings.HasPrefix(a, "x#1.") || !strings.HasPrefix(b, "x#2.") {
		t.Fatalf("rids %q %q", a, b)
	}
}

func TestSGLangFinishReasons(t *testing.T) {
	for _, tc := range []struct {
		name       string
		finish     string
		want       string // normalized finish reason, or "" for an error
		kind       string
		retryable  bool
		wantStatus int
	}{
		{name: "stop on EOS id", finish: `{"type":"stop","matched":151645}`, want: "stop"},
		{name: "stop on string", finish: `{"type":"stop","matched":"</answer>"}`, want: "stop"},
		{name: "length", finish: `{"type":"length","length":16}`, want: "length"},
		{name: "plain string", finish: `"length"`, want: "length"},
		{name: "abort without status", finish: `{"type":"abort","message":"server shutting down"}`, kind: KindAbort, retryable: true},
		{name: "abort 503", finish: `{"type":"abort","message":"out of memory","status_code":503}`, kind: KindAbort, retryable: true, wantStatus: 503},
		{name: "abort 400", finish: `{"type":"abort","message":"input too long","status_code":400}`, kind: KindAbort, retryable: false, wantStatus: 400},
		{name: "null", finish: `null`, kind: KindProtocol, retryable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStub(t, answerJSON(200, `{"text":" hi</s>","output_ids":[7,8,2],"meta_info":{"id":"`+RID("rec-1", 1)+`","finish_reason":`+tc.finish+`,
				"prompt_tokens":3,"completion_tokens":3,"cached_tokens":1,"num_retractions":2}}`))
			res, err := NewSGLang(Options{}).Do(ctxTimeout(t), s.URL, sglangReq())
			if tc.kind != "" {
				e := asError(t, err, tc.kind, tc.retryable)
				if e.Status != tc.wantStatus {
					t.Fatalf("status %d, want %d", e.Status, tc.wantStatus)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.FinishReason != tc.want || string(res.NativeFinishReason) != tc.finish {
				t.Fatalf("finish %q native %s", res.FinishReason, res.NativeFinishReason)
			}
			if !slices.Equal(res.OutputIDs, []int{7, 8, 2}) || res.Text != " hi</s>" {
				t.Fatalf("output %v %q", res.OutputIDs, res.Text)
			}
			if res.PromptTokens != 3 || res.CompletionTokens != 3 || res.CachedTokens != 1 || res.Retractions != 2 {
				t.Fatalf("accounting %+v", res)
			}
			assertJSONEqual(t, res.Usage, `{"prompt_tokens":3,"completion_tokens":3,"cached_tokens":1,"retractions":2}`)
		})
	}
}

func TestSGLangAccountingFallbacks(t *testing.T) {
	// An older server: total_retractions, no token counts.
	s := newStub(t, answerJSON(200, `{"text":"ab","output_ids":[5,6],"meta_info":{"finish_reason":{"type":"stop","matched":2},"total_retractions":4}}`))
	res, err := NewSGLang(Options{}).Do(ctxTimeout(t), s.URL, sglangReq())
	if err != nil {
		t.Fatal(err)
	}
	if res.PromptTokens != 3 || res.CompletionTokens != 2 || res.Retractions != 4 {
		t.Fatalf("accounting %+v", res)
	}
}

func TestSGLangDuplicateRIDIsRetryable(t *testing.T) {
	s := newStub(t, answerJSON(400, `{"error":{"message":"Duplicate request ID detected: rid=x is already in flight."}}`))
	_, err := NewSGLang(Options{}).Do(ctxTimeout(t), s.URL, sglangReq())
	asError(t, err, KindHTTP, true)
}

func TestSGLangStreamModes(t *testing.T) {
	final := `"meta_info":{"finish_reason":{"type":"stop","matched":2},"prompt_tokens":3,"completion_tokens":%d}`
	mid := `"meta_info":{"finish_reason":null,"prompt_tokens":3,"completion_tokens":%d}`
	chunk := func(text string, ids string, n int, meta string) string {
		return `{"text":"` + text + `","output_ids":[` + ids + `],` + fmt.Sprintf(meta, n) + `}`
	}
	noCount := func(text, ids string, last bool) string {
		fr := "null"
		if last {
			fr = `{"type":"stop","matched":2}`
		}
		return `{"text":"` + text + `","output_ids":[` + ids + `],"meta_info":{"finish_reason":` + fr + `}}`
	}
	cumulative := sseOf(chunk(" a", "5", 1, mid), chunk(" a b", "5,6", 2, mid), chunk(" a b</s>", "5,6,2", 3, final), "[DONE]")
	incremental := sseOf(chunk(" a", "5", 1, mid), chunk(" b", "6", 2, mid), chunk("</s>", "2", 3, final), "[DONE]")
	for _, tc := range []struct {
		name   string
		mode   StreamMode
		stream string
	}{
		{"cumulative detected", StreamAuto, cumulative},
		{"incremental detected", StreamAuto, incremental},
		{"cumulative forced", StreamCumulative, cumulative},
		{"incremental forced", StreamIncremental, incremental},
		{"incremental with empty final chunk", StreamAuto, sseOf(chunk(" a", "5", 1, mid), chunk(" b</s>", "6,2", 3, mid), chunk("", "", 3, final), "[DONE]")},
		{"cumulative with repeating ids", StreamAuto, sseOf(chunk(" a", "5", 1, mid), chunk(" a a", "5,5", 2, mid), chunk(" a a</s>", "5,5,2", 3, final), "[DONE]")},
		{"incremental without counts", StreamAuto, sseOf(noCount(" a", "5", false), noCount(" b", "6", false), noCount("</s>", "2", true), "[DONE]")},
		{"cumulative without counts", StreamAuto, sseOf(noCount(" a", "5", false), noCount(" a b", "5,6", false), noCount(" a b</s>", "5,6,2", true), "[DONE]")},
		// Deltas that repeat a token read alike as snapshots that add nothing:
		// they once collapsed into one token.
		{"incremental repeating without counts", StreamAuto, sseOf(noCount(" a", "5", false), noCount(" a", "5", false), noCount("</s>", "2", true), "[DONE]")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStub(t, answerSSE(tc.stream))
			res, err := NewSGLang(Options{Stream: true, SGLangStreamMode: tc.mode}).Do(ctxTimeout(t), s.URL, sglangReq())
			if err != nil {
				t.Fatal(err)
			}
			wantIDs, wantText := []int{5, 6, 2}, " a b</s>"
			if strings.Contains(tc.name, "repeating") {
				wantIDs, wantText = []int{5, 5, 2}, " a a</s>"
			}
			if !slices.Equal(res.OutputIDs, wantIDs) || res.Text != wantText || res.FinishReason != "stop" {
				t.Fatalf("got %v %q %q", res.OutputIDs, res.Text, res.FinishReason)
			}
			if res.FirstToken <= 0 || res.FirstToken > res.Latency {
				t.Fatalf("first token %v, latency %v", res.FirstToken, res.Latency)
			}
		})
	}
}

func TestSGLangStreamFailures(t *testing.T) {
	ok := `{"text":" a","output_ids":[5],"meta_info":{"finish_reason":null,"completion_tokens":1}}`
	ok2 := `{"text":" a b","output_ids":[5,6],"meta_info":{"finish_reason":null,"completion_tokens":2}}`
	for _, tc := range []struct {
		name      string
		stream    string
		kind      string
		retryable bool
	}{
		{"error chunk", sseOf(ok, `{"error":{"message":"CUDA error: an illegal memory access"}}`, "[DONE]"), KindStream, true},
		{"no [DONE]", sseOf(ok), KindConnect, true},
		{"no finish reason", sseOf(ok, "[DONE]"), KindStream, true},
		{"cut inside an event", "data: " + ok[:20], KindConnect, true},
		{"garbage event", sseOf("<<not json>>"), KindProtocol, true},
		{"abort chunk", sseOf(ok, `{"text":" a","output_ids":[5],"meta_info":{"finish_reason":{"type":"abort","message":"retracted too often","status_code":500}}}`, "[DONE]"), KindAbort, true},
		{"bad ids", sseOf(`{"text":"","output_ids":["x"],"meta_info":{}}`), KindProtocol, true},
		// Once a stream is known to be cumulative, snapshots are skipped
		// unparsed; errors and the final chunk are still caught.
		{"error after snapshots", sseOf(ok, ok2, ok2, `{"error":{"message":"boom"}}`, "[DONE]"), KindStream, true},
		{"broken final chunk after snapshots", sseOf(ok, ok2, `{"text":" a b","output_ids":[5,6],"meta_info":{"finish_reason":{"type":"stop"`, "[DONE]"), KindProtocol, true},
		{"no final chunk after snapshots", sseOf(ok, ok2, ok2, "[DONE]"), KindStream, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStub(t, answerSSE(tc.stream))
			_, err := NewSGLang(Options{Stream: true}).Do(ctxTimeout(t), s.URL, sglangReq())
			asError(t, err, tc.kind, tc.retryable)
		})
	}
}

func TestSGLangStreamRequestAnsweredWithJSON(t *testing.T) {
	s := newStub(t, answerJSON(200, `{"text":" a","output_ids":[5,2],"meta_info":{"finish_reason":{"type":"stop","matched":2}}}`))
	res, err := NewSGLang(Options{Stream: true}).Do(ctxTimeout(t), s.URL, sglangReq())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.OutputIDs, []int{5, 2}) || res.FirstToken != 0 {
		t.Fatalf("got %+v", res)
	}
}

func TestSGLangLongAnswer(t *testing.T) {
	// 16k ids in one answer, and cumulative stream chunks longer than the
	// SSE read buffer.
	ids := make([]string, 16384)
	for i := range ids {
		ids[i] = fmt.Sprint(1000 + i)
	}
	list := strings.Join(ids, ",")
	body := `{"text":"` + strings.Repeat("x", 70000) + `","output_ids":[` + list + `],"meta_info":{"finish_reason":{"type":"length","length":16384},"completion_tokens":16384}}`
	for _, stream := range []bool{false, true} {
		handler := answerJSON(200, body)
		if stream {
			handler = answerSSE(sseOf(body, "[DONE]"))
		}
		s := newStub(t, handler)
		res, err := NewSGLang(Options{Stream: stream}).Do(ctxTimeout(t), s.URL, sglangReq())
		if err != nil {
			t.Fatal(err)
		}
		if len(res.OutputIDs) != 16384 || res.OutputIDs[16383] != 1000+16383 || len(res.Text) != 70000 {
			t.Fatalf("stream=%v: %d ids, %d bytes of text", stream, len(res.OutputIDs), len(res.Text))
		}
	}
}

func TestSGLangServerInfo(t *testing.T) {
	current := `{"model_path":"m","context_length":32768,"max_running_requests":null,"max_total_num_tokens":159277,
		"incremental_streaming_output":true,"version":"0.5.5",
		"internal_states":[{"memory_usage":{"kvcache":1.2,"token_capacity":80000},"effective_max_running_requests_per_dp":256},
		                   {"memory_usage":{"kvcache":1.2,"token_capacity":79277},"effective_max_running_requests_per_dp":256}]}`
	t.Run("server_info", func(t *testing.T) {
		s := newStubPaths(t, map[string]http.HandlerFunc{"/server_info": answerJSON(200, current)})
		info, err := NewSGLang(Options{}).ServerInfo(ctxTimeout(t), s.URL)
		if err != nil {
			t.Fatal(err)
		}
		// No /model_info: the model is server_args' model_path.
		want := ServerInfo{MaxTotalTokens: 159277, MaxRunningRequests: 512, ContextLength: 32768, TokenCapacity: 159277, IncrementalStreaming: true, Version: "0.5.5", Model: "m"}
		info.Raw = nil
		if !reflect.DeepEqual(*info, want) {
			t.Fatalf("got %+v, want %+v", *info, want)
		}
	})
	t.Run("older get_server_info", func(t *testing.T) {
		old := `{"context_length":null,"max_req_input_len":8191,"max_running_requests":null,"max_total_num_tokens":50000,
			"internal_states":{"token_capacity":50000,"max_running_requests":256}}`
		s := newStubPaths(t, map[string]http.HandlerFunc{"/get_server_info": answerJSON(200, old)})
		info, err := NewSGLang(Options{}).ServerInfo(ctxTimeout(t), s.URL)
		if err != nil {
			t.Fatal(err)
		}
		if info.ContextLength != 8192 || info.MaxRunningRequests != 256 || info.MaxTotalTokens != 50000 || info.TokenCapacity != 50000 || len(info.Raw) == 0 {
			t.Fatalf("got %+v", info)
		}
		if !slices.Equal(s.paths, []string{"/server_info", "/get_server_info", "/model_info", "/get_model_info"}) {
			t.Fatalf("asked %v", s.paths)
		}
	})
	// The model it serves is /model_info's model_path (SGLang's http_server.py),
	// or the older /get_model_info's.
	for _, path := range []string{"/model_info", "/get_model_info"} {
		t.Run("model from "+path, func(t *testing.T) {
			s := newStubPaths(t, map[string]http.HandlerFunc{
				"/server_info": answerJSON(200, current),
				path:           answerJSON(200, `{"model_path":"moonshotai/Kimi-K2.5","tokenizer_path":"moonshotai/Kimi-K2.5","is_generation":true}`),
			})
			info, err := NewSGLang(Options{}).ServerInfo(ctxTimeout(t), s.URL)
			if err != nil {
				t.Fatal(err)
			}
			if info.Model != "moonshotai/Kimi-K2.5" {
				t.Fatalf("model %q, want /model_info's model_path (asked %v)", info.Model, s.paths)
			}
		})
	}
	t.Run("down", func(t *testing.T) {
		s := newStub(t, answerJSON(503, `{"object":"error","message":"starting","code":503}`))
		_, err := NewSGLang(Options{}).ServerInfo(ctxTimeout(t), s.URL)
		asError(t, err, KindHTTP, true)
	})
}

// sglangRequest is the /generate body as a struct: json.Marshal of it is
// what appendSGLangBody must write.
type sglangRequest struct {
	InputIDs       []int          `json:"input_ids"`
	RID            string         `json:"rid"`
	SamplingParams sglangSampling `json:"sampling_params"`
	Stream         bool           `json:"stream,omitempty"`
}

type sglangSampling struct {
	MaxNewTokens      int      `json:"max_new_tokens"`
	Temperature       *float64 `json:"temperature,omitempty"`
	TopP              *float64 `json:"top_p,omitempty"`
	TopK              *int     `json:"top_k,omitempty"`
	MinP              *float64 `json:"min_p,omitempty"`
	Stop              []string `json:"stop,omitempty"`
	StopTokenIDs      []int    `json:"stop_token_ids,omitempty"`
	SamplingSeed      *int64   `json:"sampling_seed,omitempty"`
	SkipSpecialTokens bool     `json:"skip_special_tokens"`
	NoStopTrim        bool     `json:"no_stop_trim"`
}

func TestSGLangBodyIsMarshal(t *testing.T) {
	cases := []struct {
		name string
		req  Request
	}{
		{"bare", Request{ID: "b1", Attempt: 1, InputIDs: []int{1}, Params: Params{MaxTokens: 16}}},
		{"big ids", Request{ID: "x", Attempt: 12, InputIDs: []int{0, 151645, 1 << 40, 7}, Params: Params{MaxTokens: 1 << 20}}},
		{"id to escape", Request{ID: "a\"b\\c<d>&e\u00e9\u2028\x01", Attempt: 2, InputIDs: []int{5, 6}, Params: Params{MaxTokens: 3}}},
		{"every parameter", Request{ID: "rec-7", Attempt: 3, InputIDs: []int{101, 102, 103}, Params: Params{
			MaxTokens: 2048, Sampling: Sampling{Temperature: ptr(0.7), TopP: ptr(0.95), TopK: ptr(40), MinP: ptr(1e-7),
				Stop: []string{"</answer>", "\n\n"}, StopTokenIDs: []int{151645}, Seed: ptr(int64(-42))},
		}}},
		{"zero temperature", Request{ID: "z", Attempt: 1, InputIDs: []int{9}, Params: Params{MaxTokens: 1, Sampling: Sampling{Temperature: ptr(0.0)}}}},
		{"seed alone", Request{ID: "s", Attempt: 1, InputIDs: []int{9}, Params: Params{MaxTokens: 1, Sampling: Sampling{Seed: ptr(int64(0))}}}},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				rid := RID(tc.req.ID, tc.req.Attempt)
				p := &tc.req.Params
				want, err := json.Marshal(sglangRequest{
					InputIDs: tc.req.InputIDs, RID: rid, Stream: stream,
					SamplingParams: sglangSampling{MaxNewTokens: p.MaxTokens, Temperature: p.Temperature, TopP: p.TopP, TopK: p.TopK, MinP: p.MinP,
						Stop: p.Stop, StopTokenIDs: p.StopTokenIDs, SamplingSeed: p.Seed, NoStopTrim: true},
				})
				if err != nil {
					t.Fatal(err)
				}
				got, err := appendSGLangBody(nil, &tc.req, rid, stream)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != string(want) {
					t.Errorf("body\n got %s\nwant %s", got, want)
				}
			})
		}
	}
}

// TestAppendIDs: appendIDs, with jsonl.AppendInts' scan of plain digits
// first (tested in lib/jsonl), gives what the general path (gjson's
// numbers) gives on every array, the ones the scan leaves to it among them.
func TestAppendIDs(t *testing.T) {
	for _, raw := range []string{
		`[]`, `[ ]`, `[0]`, `[1,2,3]`, ` [ 12 , 7 ,0 ] `, "[1,\n2]", `[999999999999999]`, `[10,100]`,
		`[9007199254740992]`, `[9007199254740993]`, `[1.0]`, `[1e3]`, `[-1]`, `[-0]`, `[1.5]`,
		`[1,"2"]`, `[null]`, `[[1]]`, `[1,]`, `[1 2]`, `[01]`, `[1,007]`, `[2147483648]`, `[1000000000000000]`,
	} {
		arr := gjson.Parse(raw)
		general, generalOK := []int{42}, true
		arr.ForEach(func(_, v gjson.Result) bool {
			if v.Type != gjson.Number || v.Num < 0 || v.Num != float64(int64(v.Num)) || v.Num > 1<<53 {
				generalOK = false
				return false
			}
			general = append(general, int(v.Num))
			return true
		})
		got, ok := appendIDs([]int{42}, arr)
		if ok != generalOK || (ok && !slices.Equal(got, general)) {
			t.Errorf("%s: got %v %v, want %v %v", raw, got, ok, general, generalOK)
		}
	}
}

// TestPickSGLangMeta: the one pass over meta_info picks what a lookup by
// name finds, the first of a key written twice, an escaped key, null.
func TestPickSGLangMeta(t *testing.T) {
	for _, raw := range []string{
		`{"id":"r1","finish_reason":{"type":"length","length":16},"prompt_tokens":3,"num_retractions":0,"reasoning_tokens":0,"completion_tokens":16,"cached_tokens":2}`,
		`{"completion_tokens":1,"completion_tokens":2,"id":null,"\u0069d":"x","retraction_count":4,"total_retractions":null}`,
		`{"output_token_logprobs":[[-0.1,5,null]],"finish_reason":"stop","total_retractions":3,"retraction_count":4}`,
		`{"prompt_tokens":"5","completion_tokens":true,"cached_tokens":"7","reasoning_tokens":2.0}`,
		`{}`, `[]`, `null`, `7`, ``,
	} {
		meta := gjson.Parse(raw)
		m := pickSGLangMeta(meta)
		for name, got := range map[string]gjson.Result{
			"id": m.id, "finish_reason": m.finishReason, "prompt_tokens": m.promptTokens,
			"completion_tokens": m.completionTokens, "cached_tokens": m.cachedTokens, "reasoning_tokens": m.reasoningTokens,
		} {
			if want := meta.Get(name); got.Raw != want.Raw || got.Type != want.Type {
				t.Errorf("%s: %s is %q, a lookup finds %q", raw, name, got.Raw, want.Raw)
			}
		}
		if got, want := m.retractions(), firstOf(meta, "num_retractions", "total_retractions", "retraction_count"); got.Raw != want.Raw {
			t.Errorf("%s: the retractions are %q, want %q", raw, got.Raw, want.Raw)
		}
		given := func(v gjson.Result) givenInt { return givenInt{int(v.Int()), v.Type == gjson.Number} }
		want := sglangCounts{
			prompt: given(meta.Get("prompt_tokens")), completion: given(meta.Get("completion_tokens")),
			cached: int(meta.Get("cached_tokens").Int()), reasoning: int(meta.Get("reasoning_tokens").Int()),
			retractions: int(firstOf(meta, "num_retractions", "total_retractions", "retraction_count").Int()),
		}
		if got := m.counts(); got != want {
			t.Errorf("%s: the counts are %+v, want %+v", raw, got, want)
		}
	}
}

// TestSGLangUsage: the usage record written by hand is what encoding/json
// writes of its fields.
func TestSGLangUsage(t *testing.T) {
	for _, res := range []Result{
		{}, {PromptTokens: 3, CompletionTokens: 16, CachedTokens: 2, ReasoningTokens: 5, Retractions: 1},
		{PromptTokens: 1 << 40, CompletionTokens: -1, ReasoningTokens: -7},
	} {
		want, _ := json.Marshal(struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			CachedTokens     int `json:"cached_tokens"`
			ReasoningTokens  int `json:"reasoning_tokens,omitempty"`
			Retractions      int `json:"retractions"`
		}{res.PromptTokens, res.CompletionTokens, res.CachedTokens, res.ReasoningTokens, res.Retractions})
		if got := sglangUsage(&res); string(got) != string(want) {
			t.Errorf("%+v: %s, want %s", res, got, want)
		}
	}
}
