package servermetrics

import (
	"context"
	"encoding/base64"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// One scheduler, as SGLang 0.5 writes it with --enable-metrics (histograms
// and counters around the gauges).
const oneRank = `# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{engine_type="unified",model_name="qwen",pp_rank="0",tp_rank="0"} 48.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{engine_type="unified",model_name="qwen",pp_rank="0",tp_rank="0"} 3.0
# TYPE sglang:token_usage gauge
sglang:token_usage{engine_type="unified",model_name="qwen",pp_rank="0",tp_rank="0"} 0.91
# TYPE sglang:gen_throughput gauge
sglang:gen_throughput{engine_type="unified",model_name="qwen",pp_rank="0",tp_rank="0"} 1250.4
# TYPE sglang:num_used_tokens gauge
sglang:num_used_tokens{engine_type="unified",model_name="qwen",pp_rank="0",tp_rank="0"} 36400.0
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{engine_type="unified",model_name="qwen",pp_rank="0",tp_rank="0"} 0.25
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="qwen"} 8.128902e+06
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_sum{model_name="qwen"} 2.35
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="qwen"} 1.0
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="qwen"} 3.0
sglang:time_to_first_token_seconds_count{model_name="qwen"} 3.0
`

// Two data-parallel ranks, each a tensor-parallel pair that repeats its
// figures: each rank counts once, the ranks add up.
const twoRanksTP = `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{dp_rank="0",model_name="m",tp_rank="0"} 30
sglang:num_running_reqs{dp_rank="0",model_name="m",tp_rank="1"} 30
sglang:num_running_reqs{dp_rank="1",model_name="m",tp_rank="0"} 10
sglang:num_running_reqs{dp_rank="1",model_name="m",tp_rank="1"} 10
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{dp_rank="0",model_name="m",tp_rank="0"} 5
sglang:num_queue_reqs{dp_rank="0",model_name="m",tp_rank="1"} 5
sglang:num_queue_reqs{dp_rank="1",model_name="m",tp_rank="0"} 0
sglang:num_queue_reqs{dp_rank="1",model_name="m",tp_rank="1"} 0
# TYPE sglang:token_usage gauge
sglang:token_usage{dp_rank="0",model_name="m",tp_rank="0"} 0.98
sglang:token_usage{dp_rank="0",model_name="m",tp_rank="1"} 0.98
sglang:token_usage{dp_rank="1",model_name="m",tp_rank="0"} 0.40
sglang:token_usage{dp_rank="1",model_name="m",tp_rank="1"} 0.40
# TYPE sglang:gen_throughput gauge
sglang:gen_throughput{dp_rank="0",model_name="m",tp_rank="0"} 900
sglang:gen_throughput{dp_rank="0",model_name="m",tp_rank="1"} 900
sglang:gen_throughput{dp_rank="1",model_name="m",tp_rank="0"} 300
sglang:gen_throughput{dp_rank="1",model_name="m",tp_rank="1"} 300
`

// Two models behind one endpoint (a router): one is read at a time.
const twoModels = `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="a"} 7
sglang:num_running_reqs{model_name="b"} 2
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="a"} 1
sglang:num_queue_reqs{model_name="b"} 4
`

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, text, model string
		want              Snapshot
		line              string
	}{
		{
			name: "one rank", text: oneRank,
			want: Snapshot{Running: 48, Queued: 3, TokenUsage: 0.91, MaxTokenUsage: 0.91, GenThroughput: 1250.4, UsedTokens: 36400, CacheHitRate: 0.25, Ranks: 1, Model: "qwen"},
			line: "48 running, 3 queued, KV 91%, 1,250 tok/s, cache hits 25%",
		},
		{
			name: "data-parallel ranks over tensor-parallel pairs", text: twoRanksTP,
			want: Snapshot{Running: 40, Queued: 5, TokenUsage: 0.69, MaxTokenUsage: 0.98, GenThroughput: 1200, Ranks: 2, Model: "m"},
			line: "40 running, 5 queued, KV 69% (fullest rank 98%), 1,200 tok/s, 2 ranks",
		},
		{
			name: "the model asked for", text: twoModels, model: "b",
			want: Snapshot{Running: 2, Queued: 4, Ranks: 1, Model: "b"},
			line: "2 running, 4 queued",
		},
		{
			name: "a model not served: every series", text: twoModels, model: "zzz",
			want: Snapshot{Running: 9, Queued: 5, Ranks: 1},
			line: "9 running, 5 queued",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tc.text), tc.model)
			if err != nil {
				t.Fatal(err)
			}
			w := tc.want
			if !near(got.Running, w.Running) || !near(got.Queued, w.Queued) || !near(got.TokenUsage, w.TokenUsage) ||
				!near(got.MaxTokenUsage, w.MaxTokenUsage) || !near(got.GenThroughput, w.GenThroughput) ||
				!near(got.UsedTokens, w.UsedTokens) || !near(got.CacheHitRate, w.CacheHitRate) ||
				got.Ranks != w.Ranks || got.Model != w.Model {
				t.Errorf("got %+v\nwant %+v", got, w)
			}
			if s := got.String(); s != tc.line {
				t.Errorf("String() = %q, want %q", s, tc.line)
			}
		})
	}
}

func TestParseNoMetrics(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"json counters", `{"requests": 3, "running": 1}`},
		{"other gauges only", "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 3.5\n"},
		{"empty", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse(strings.NewReader(tc.text), ""); !errors.Is(err, ErrNoMetrics) {
				t.Errorf("err = %v, want ErrNoMetrics", err)
			}
		})
	}
}

func TestFetch(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /withkey/metrics", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k" || !strings.Contains(r.Header.Get("Accept"), "text/plain") {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Write([]byte(oneRank))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s, err := Fetch(context.Background(), srv.URL+"/withkey/", Options{Client: srv.Client(), APIKey: "k"})
	if err != nil || s.Running != 48 {
		t.Fatalf("Fetch = %+v, %v", s, err)
	}
	// A server without /metrics: ErrNoMetrics, and the status is named.
	_, err = Fetch(context.Background(), srv.URL, Options{Client: srv.Client()})
	if !errors.Is(err, ErrNoMetrics) || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("no /metrics: err = %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{oneRank, twoRanksTP, twoModels, "", "x{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(strings.NewReader(text), "")
		if err == nil && (len(s.Has) == 0 || s.Ranks < 1) {
			t.Errorf("accepted %q with nothing in it: %+v", text, s)
		}
		checkSane(t, text, s)
		_ = s.String()
	})
}

// checkSane fails when a snapshot holds a figure that is not a finite
// count, rate or ratio: what generate shares a server by is computed from
// them, and one NaN would make its limit NaN for the rest of the run.
func checkSane(t *testing.T, input string, s Snapshot) {
	t.Helper()
	for name, v := range map[string]float64{"Running": s.Running, "Queued": s.Queued, "TokenUsage": s.TokenUsage,
		"MaxTokenUsage": s.MaxTokenUsage, "GenThroughput": s.GenThroughput, "UsedTokens": s.UsedTokens, "CacheHitRate": s.CacheHitRate} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Errorf("%s is %v from %q", name, v, input)
		}
	}
}

// TestInsaneReadingsIgnored: NaN, Inf and negative gauges (a broken
// exporter) are no reading; the sane ones beside them are kept.
func TestInsaneReadingsIgnored(t *testing.T) {
	text := "sglang:num_running_reqs NaN\nsglang:num_queue_reqs +Inf\nsglang:token_usage -3\nsglang:gen_throughput 120\n"
	s, err := Parse(strings.NewReader(text), "")
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, text, s)
	if s.Has[NumRunningReqs] || s.Has[NumQueueReqs] || s.Has[TokenUsage] || s.GenThroughput != 120 {
		t.Fatalf("insane readings kept, or the sane one lost: %+v", s)
	}
	// Each is named, for the caller to count and say once.
	if got, want := s.UnusableText(), "sglang:num_queue_reqs +Inf, sglang:num_running_reqs NaN, sglang:token_usage -3"; got != want {
		t.Errorf("UnusableText() = %q, want %q", got, want)
	}
	// A gauge one rank of which is insane is left out whole: the sum of
	// the others would be wrong without saying so.
	s, err = Parse(strings.NewReader("sglang:num_running_reqs{dp_rank=\"0\"} 5\nsglang:num_running_reqs{dp_rank=\"1\"} NaN\nsglang:num_queue_reqs 0\n"), "")
	if err != nil || s.Has[NumRunningReqs] || s.Running != 0 || len(s.Unusable) != 1 {
		t.Errorf("one rank's NaN: %+v, %v; want running left out, one unusable", s, err)
	}
	// Nothing sane at all: ErrUnusable (read again later), not
	// ErrNoMetrics (never read again).
	if _, err := Parse(strings.NewReader("sglang:num_running_reqs NaN\n"), ""); !errors.Is(err, ErrUnusable) || errors.Is(err, ErrNoMetrics) {
		t.Errorf("only a NaN: %v, want ErrUnusable", err)
	}
	for _, tc := range []struct{ source, body string }{
		{SourceLoads, `{"loads":[{"num_running_reqs":1e999,"num_waiting_reqs":0}]}`},
		{SourceLoads, `{"loads":[{"num_running_reqs":3,"num_waiting_reqs":-1e999}]}`},
		{SourceGetLoad, `[{"num_reqs": 2, "num_waiting_reqs": 5}]`},
	} {
		if s, err := parseLoadReport(strings.NewReader(tc.body), tc.source); !errors.Is(err, ErrUnusable) || len(s.Unusable) == 0 {
			t.Errorf("%s %s: %+v, %v; want ErrUnusable naming the reading", tc.source, tc.body, s, err)
		}
	}
	s, err = parseLoadReport(strings.NewReader(`{"loads":[{"num_running_reqs":3,"num_waiting_reqs":0,"token_usage":0.5},{"num_running_reqs":3,"num_waiting_reqs":0,"token_usage":"NaN"},{"num_running_reqs":3,"num_waiting_reqs":0,"token_usage":-1}]}`), SourceLoads)
	if err != nil || s.Has[TokenUsage] || s.TokenUsage != 0 || s.Running != 9 {
		t.Errorf("one rank's token_usage -1: %+v, %v; want token_usage left out, the counts kept", s, err)
	}
}

func FuzzParseLoadReport(f *testing.F) {
	for _, s := range []string{loadsTwoRanks, getLoadTwoRanks, `{"loads":[{"num_running_reqs":1e999,"num_waiting_reqs":0}]}`, "[]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, src := range []string{SourceLoads, SourceGetLoad} {
			s, err := parseLoadReport(strings.NewReader(body), src)
			if err == nil {
				checkSane(t, body, s)
			}
		}
	})
}

// TestURLCredentialsNeverShown: a user and password in the base URL are
// sent as Basic authentication and appear in no error, whether the server
// answers 404 or cannot be reached.
func TestURLCredentialsNeverShown(t *testing.T) {
	var auth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		http.NotFound(w, r)
	}))
	defer srv.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	for _, base := range []string{srv.URL, dead.URL} {
		withCreds := strings.Replace(base, "http://", "http://alice:url-secret@", 1)
		_, err := Fetch(context.Background(), withCreds, Options{})
		_, kerr := FetchKey(context.Background(), withCreds, Options{})
		for _, e := range []error{err, kerr} {
			if e == nil || strings.Contains(e.Error(), "alice") || strings.Contains(e.Error(), "url-secret") || !strings.Contains(e.Error(), base) {
				t.Errorf("error %v: want one that names %s without the credentials", e, base)
			}
		}
	}
	if got := auth.Load(); got != "Basic "+base64.StdEncoding.EncodeToString([]byte("alice:url-secret")) {
		t.Errorf("Authorization %q, want Basic with the URL's user and password", got)
	}
}
