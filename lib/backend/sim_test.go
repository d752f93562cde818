package backend

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/sim"
	"github.com/synthpipe/synthpipe/lib/simtest"
)

// startSim runs the project's simulated server on loopback.
func startSim(t testing.TB, cfg sim.Config) (*sim.Server, string) {
	t.Helper()
	s := simtest.Start(t, cfg)
	return s.Server, s.URL
}

// faultClient sends every request with the simulator's fault header.
func faultClient(fault string) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set(sim.FaultHeader, fault)
		return SharedClient().Transport.RoundTrip(r)
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestSGLangAgainstSimulator(t *testing.T) {
	for _, tc := range []struct {
		stream, incremental bool
	}{{false, false}, {true, false}, {true, true}} {
		t.Run(fmt.Sprintf("stream=%v incremental=%v", tc.stream, tc.incremental), func(t *testing.T) {
			cfg := sim.Default()
			cfg.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: 40}
			cfg.StepTime = 100 * time.Microsecond
			cfg.IncrementalStreaming = tc.incremental
			srv, url := startSim(t, cfg)
			b := NewSGLang(Options{Stream: tc.stream, Timeout: 10 * time.Second})

			info, err := b.ServerInfo(ctxTimeout(t), url)
			if err != nil {
				t.Fatal(err)
			}
			if info.MaxTotalTokens != cfg.MaxTotalTokens || info.TokenCapacity != cfg.MaxTotalTokens ||
				info.ContextLength != cfg.ContextLength || info.IncrementalStreaming != tc.incremental {
				t.Fatalf("server info %+v", info)
			}

			// Concurrent requests: every answer must belong to its prompt.
			var wg sync.WaitGroup
			errs := make(chan error, 32)
			for i := range 32 {
				wg.Go(func() {
					req := &Request{ID: fmt.Sprint("rec-", i), Attempt: 1, InputIDs: []int{10 + i, 20, 30, i}, Params: Params{MaxTokens: 100}}
					res, err := b.Do(ctxTimeout(t), url, req)
					if err != nil {
						errs <- err
						return
					}
					want := append(srv.ExpectedOutputIDs(req.InputIDs, 40), cfg.EOSTokenID)
					if !slices.Equal(res.OutputIDs, want) || res.FinishReason != "stop" || res.CompletionTokens != 41 || res.PromptTokens != 4 {
						errs <- fmt.Errorf("request %d: got %v %q %d", i, res.OutputIDs, res.FinishReason, res.CompletionTokens)
					}
					if fr := gjson.ParseBytes(res.NativeFinishReason); fr.Get("type").Str != "stop" || fr.Get("matched").Int() != int64(cfg.EOSTokenID) {
						errs <- fmt.Errorf("native finish reason %s", res.NativeFinishReason)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}

			short := &Request{ID: "short", Attempt: 1, InputIDs: []int{1, 2}, Params: Params{MaxTokens: 10}}
			res, err := b.Do(ctxTimeout(t), url, short)
			if err != nil || res.FinishReason != "length" || len(res.OutputIDs) != 10 {
				t.Fatalf("length: %+v %v", res, err)
			}
		})
	}
}

func TestSGLangSimulatorFaults(t *testing.T) {
	for _, tc := range []struct {
		fault     string
		stream    bool
		abortCode int
		kind      string
		retryable bool
	}{
		{fault: "http500", kind: KindHTTP, retryable: true},
		{fault: "rate_limit", kind: KindRate, retryable: true},
		{fault: "reset", kind: KindConnect, retryable: true},
		{fault: "reset", stream: true, kind: KindConnect, retryable: true},
		{fault: "garbage", kind: KindProtocol, retryable: true},
		{fault: "html", kind: KindHTTP, retryable: true},
		{fault: "mid_stream_error", kind: KindHTTP, retryable: true},
		{fault: "mid_stream_error", stream: true, kind: KindStream, retryable: true},
		{fault: "abort", kind: KindAbort, retryable: true},
		{fault: "abort", stream: true, kind: KindAbort, retryable: true},
		{fault: "abort", stream: true, abortCode: 400, kind: KindAbort, retryable: false},
		{fault: "abort", abortCode: 400, kind: KindRequest, retryable: false},
		{fault: "abort", abortCode: 503, kind: KindHTTP, retryable: true},
	} {
		t.Run(fmt.Sprintf("%s stream=%v code=%d", tc.fault, tc.stream, tc.abortCode), func(t *testing.T) {
			cfg := sim.Default()
			cfg.Faults.AbortStatusCode = tc.abortCode
			_, url := startSim(t, cfg)
			b := NewSGLang(Options{Stream: tc.stream, Timeout: 10 * time.Second, Client: faultClient(tc.fault)})
			_, err := b.Do(ctxTimeout(t), url, sglangReq())
			e := asError(t, err, tc.kind, tc.retryable)
			if tc.fault == "rate_limit" && e.RetryAfter != time.Second {
				t.Fatalf("retry after %v", e.RetryAfter)
			}
		})
	}
}

func TestOpenAIAgainstSimulator(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			cfg := sim.Default()
			cfg.APIKey = "sk-sim-key"
			cfg.ProcessingCommentInterval = time.Millisecond
			cfg.StepTime = 100 * time.Microsecond
			_, url := startSim(t, cfg)
			b := NewOpenAI(Options{Stream: stream, APIKey: "sk-sim-key", Model: cfg.ModelName, Timeout: 10 * time.Second})
			req := chatReq()
			req.Params.MaxTokens = 200
			req.Params.ReasoningEffort = "medium"
			res, err := b.Do(ctxTimeout(t), url+"/v1", req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Text == "" || res.Reasoning == "" || res.FinishReason != "stop" || res.CompletionTokens != 65 ||
				res.ReasoningTokens == 0 || res.Cost == nil || *res.Cost <= 0 || res.Model != cfg.ModelName {
				t.Fatalf("got %+v", res)
			}

			tools := chatReq()
			tools.Tools = []byte(`[{"type":"function","function":{"name":"search","parameters":{"type":"object"}}}]`)
			tools.Params.Extra = []byte(`{"tool_choice":{"type":"function","function":{"name":"search"}}}`)
			res, err = b.Do(ctxTimeout(t), url+"/v1", tools)
			if err != nil {
				t.Fatal(err)
			}
			if res.FinishReason != "tool_calls" || len(res.ToolCalls) == 0 {
				t.Fatalf("tool call: %+v", res)
			}

			info, err := b.ServerInfo(ctxTimeout(t), url+"/v1")
			if err != nil || info == nil || info.ContextLength != cfg.ContextLength {
				t.Fatalf("server info %+v %v", info, err)
			}

			_, err = NewOpenAI(Options{Stream: stream, APIKey: "wrong-key", Model: cfg.ModelName}).Do(ctxTimeout(t), url+"/v1", chatReq())
			if e := asError(t, err, KindAuth, false); !e.Fatal {
				t.Fatalf("401 not fatal: %+v", e)
			}
		})
	}
}

func TestOpenAISimulatorFaults(t *testing.T) {
	for _, tc := range []struct {
		fault     string
		stream    bool
		kind      string
		retryable bool
		fatal     bool
	}{
		{fault: "http500", kind: KindHTTP, retryable: true},
		{fault: "rate_limit", stream: true, kind: KindRate, retryable: true},
		{fault: "reset", kind: KindConnect, retryable: true},
		{fault: "reset", stream: true, kind: KindConnect, retryable: true},
		{fault: "garbage", kind: KindProtocol, retryable: true},
		{fault: "html", kind: KindHTTP, retryable: true},
		{fault: "mid_stream_error", kind: KindStream, retryable: true},
		{fault: "mid_stream_error", stream: true, kind: KindStream, retryable: true},
		{fault: "no_credits", kind: KindCredits, fatal: true},
		{fault: "moderation", kind: KindRequest},
	} {
		t.Run(fmt.Sprintf("%s stream=%v", tc.fault, tc.stream), func(t *testing.T) {
			cfg := sim.Default()
			_, url := startSim(t, cfg)
			b := NewOpenAI(Options{Stream: tc.stream, Model: cfg.ModelName, Timeout: 10 * time.Second, Client: faultClient(tc.fault)})
			_, err := b.Do(ctxTimeout(t), url+"/v1", chatReq())
			if e := asError(t, err, tc.kind, tc.retryable); e.Fatal != tc.fatal {
				t.Fatalf("fatal %v: %+v", e.Fatal, e)
			}
		})
	}
}

func TestPricingAgainstSimulator(t *testing.T) {
	cfg := sim.Default()
	_, url := startSim(t, cfg)
	p, c, err := Pricing(ctxTimeout(t), url+"/v1", cfg.ModelName)
	if err != nil || p != cfg.PromptPrice || c != cfg.CompletionPrice {
		t.Fatalf("pricing %v %v %v", p, c, err)
	}
}
