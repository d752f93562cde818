package sim

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

func generateBody(stream bool) map[string]any {
	return map[string]any{"input_ids": []int{5, 6, 7}, "stream": stream, "sampling_params": map[string]any{"max_new_tokens": 100}}
}

func TestEarlyFaults(t *testing.T) {
	cfg := Default()
	cfg.Faults.RetryAfter = 2500 * time.Millisecond
	s, url := startSim(t, cfg)
	cases := []struct {
		fault, path string
		status      int
		check       func(h http.Header, body []byte) bool
	}{
		{"http500", "/generate", 500, func(h http.Header, b []byte) bool { return string(b) == "Internal Server Error" }},
		{"http500", "/v1/chat/completions", 500, func(h http.Header, b []byte) bool { return gjson.GetBytes(b, "error.code").Int() == 500 }},
		{"rate_limit", "/generate", 429, func(h http.Header, b []byte) bool { return h.Get("Retry-After") == "3" }},
		{"rate_limit", "/v1/chat/completions", 429, func(h http.Header, b []byte) bool {
			return h.Get("Retry-After") == "3" && gjson.GetBytes(b, "error.code").Int() == 429
		}},
		{"garbage", "/generate", 200, func(h http.Header, b []byte) bool { return !gjson.ValidBytes(b) }},
		{"html", "/v1/chat/completions", 502, func(h http.Header, b []byte) bool {
			return strings.HasPrefix(h.Get("Content-Type"), "text/html") && strings.Contains(string(b), "502 Bad Gateway")
		}},
		{"no_credits", "/v1/chat/completions", 402, func(h http.Header, b []byte) bool { return gjson.GetBytes(b, "error.code").Int() == 402 }},
		{"moderation", "/v1/chat/completions", 403, func(h http.Header, b []byte) bool {
			return gjson.GetBytes(b, "error.metadata.reasons.0").Exists() && gjson.GetBytes(b, "error.metadata.model_slug").Exists()
		}},
	}
	for _, c := range cases {
		var body any = generateBody(false)
		if strings.Contains(c.path, "chat") {
			body = chatBody(nil)
		}
		code, hdr, resp := post(t, url+c.path, body, FaultHeader, c.fault)
		if code != c.status || !c.check(hdr, resp) {
			t.Errorf("%s on %s: status %d headers %v body %q", c.fault, c.path, code, hdr, resp)
		}
	}
	st := s.Stats()
	if st.Faults[FaultHTTP500] != 2 || st.Faults[FaultRateLimit] != 2 || st.Requests != 0 {
		t.Errorf("stats %+v", st)
	}
	if code, _, _ := post(t, url+"/generate", generateBody(false), FaultHeader, "nonsense"); code != 400 {
		t.Errorf("unknown fault name: %d", code)
	}
}

func TestResetFault(t *testing.T) {
	_, url := startSim(t, Default())
	for _, stream := range []bool{false, true} {
		req, _ := http.NewRequest("POST", url+"/generate", stringsReader(`{"input_ids":[1],"stream":`+map[bool]string{false: "false", true: "true"}[stream]+`}`))
		req.Header.Set(FaultHeader, "reset")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = readAllErr(resp)
		}
		if err == nil {
			t.Errorf("stream=%v: reset fault read a complete body", stream)
		}
	}
}

func TestHangAndSlowFirstToken(t *testing.T) {
	cfg := Default()
	cfg.Faults.SlowFirstTokenDelay = 150 * time.Millisecond
	s, url := startSim(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/generate", stringsReader(`{"input_ids":[1]}`))
	req.Header.Set(FaultHeader, "hang")
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("hang fault answered")
	}

	for _, stream := range []bool{false, true} {
		start := time.Now()
		code, _, _ := post(t, url+"/generate", generateBody(stream), FaultHeader, "slow_first_token")
		if d := time.Since(start); code != 200 || d < 150*time.Millisecond {
			t.Errorf("slow first token (stream=%v): status %d after %v", stream, code, d)
		}
	}
	if st := s.Stats(); st.Faults[FaultHang] != 1 || st.Faults[FaultSlowFirstToken] != 2 {
		t.Errorf("stats %+v", st)
	}
}

func TestMidStreamErrorFault(t *testing.T) {
	cfg := Default()
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 60}
	cfg.StepTime = 200 * time.Microsecond
	s, url := startSim(t, cfg)

	_, _, body := post(t, url+"/generate", generateBody(true), FaultHeader, "mid_stream_error")
	events, _ := sseEvents(body)
	if n := len(events); n < 2 || events[n-1] != "[DONE]" || gjson.Get(events[n-2], "error.message").String() == "" {
		t.Errorf("generate stream: %q", events)
	}
	if code, _, body := post(t, url+"/generate", generateBody(false), FaultHeader, "mid_stream_error"); code != 500 || gjson.GetBytes(body, "message").String() == "" {
		t.Errorf("generate: %d %s", code, body)
	}

	_, _, body = post(t, url+"/v1/chat/completions", chatBody(map[string]any{"stream": true}), FaultHeader, "mid_stream_error")
	events, _ = sseEvents(body)
	last := gjson.Parse(events[len(events)-1])
	if last.Get("error.message").String() == "" || last.Get("choices.0.finish_reason").String() != "error" {
		t.Errorf("chat stream: %q", events)
	}
	if code, _, body := post(t, url+"/v1/chat/completions", chatBody(nil), FaultHeader, "mid_stream_error"); code != 200 || gjson.GetBytes(body, "error.code").Int() != 502 {
		t.Errorf("chat: %d %s", code, body)
	}
	if st := s.Stats(); st.Aborted != 4 || st.KVUsed != 0 || st.Faults[FaultMidStreamError] != 4 {
		t.Errorf("stats %+v", st)
	}
}

func TestAbortFault(t *testing.T) {
	for _, status := range []int{0, 400, 503} {
		cfg := Default()
		cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 40}
		cfg.Faults.AbortStatusCode = status
		_, url := startSim(t, cfg)
		code, _, body := post(t, url+"/generate", generateBody(false), FaultHeader, "abort")
		switch status {
		case 0:
			fr := gjson.GetBytes(body, "meta_info.finish_reason")
			if code != 200 || fr.Get("type").String() != "abort" || fr.Get("status_code").Exists() || gjson.GetBytes(body, "meta_info.completion_tokens").Int() != 20 {
				t.Errorf("graceful abort: %d %s", code, body)
			}
		case 400:
			if code != 400 || gjson.GetBytes(body, "error.message").String() == "" {
				t.Errorf("abort 400: %d %s", code, body)
			}
		case 503:
			if code != 503 || gjson.GetBytes(body, "code").Int() != 503 {
				t.Errorf("abort 503: %d %s", code, body)
			}
		}
		_, _, body = post(t, url+"/generate", generateBody(true), FaultHeader, "abort")
		events, _ := sseEvents(body)
		fr := gjson.Get(events[len(events)-2], "meta_info.finish_reason")
		if fr.Get("type").String() != "abort" || (status != 0) != fr.Get("status_code").Exists() {
			t.Errorf("status %d: stream abort chunk %s", status, events[len(events)-2])
		}
	}
}

// TestFaultDrawIsDeterministic checks the probability draw: two servers with
// the same seed inject the same faults into the same request sequence, and
// a retried request gets a fresh draw.
func TestFaultDrawIsDeterministic(t *testing.T) {
	run := func() []int {
		cfg := Default()
		cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 2}
		cfg.Faults.HTTP500 = 0.3
		cfg.Faults.RateLimit = 0.2
		_, url := startSim(t, cfg)
		var codes []int
		for i := range 60 {
			code, _, _ := post(t, url+"/generate", map[string]any{"input_ids": []int{i % 20}})
			codes = append(codes, code)
		}
		return codes
	}
	a, b := run(), run()
	count := map[int]int{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("request %d: %d vs %d", i, a[i], b[i])
		}
		count[a[i]]++
	}
	if count[500] < 8 || count[429] < 4 || count[200] < 15 {
		t.Fatalf("implausible fault mix %v", count)
	}
	// The same 20 prompts were sent three times each; attempts differ.
	for i := 0; i < 20; i++ {
		if a[i] != 200 && a[i] == a[i+20] && a[i] == a[i+40] {
			continue
		}
		return
	}
	t.Fatal("retries never changed the outcome")
}
