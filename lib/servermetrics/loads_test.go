package servermetrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// /v1/loads as a recent SGLang with two data-parallel ranks answers it,
// whatever its flags.
const loadsTwoRanks = `{"timestamp": "2026-11-30T10:30:00+00:00", "version": "0.5.9", "dp_rank_count": 2,
 "loads": [
  {"dp_rank": 0, "num_running_reqs": 30, "num_waiting_reqs": 5, "num_total_reqs": 35, "num_used_tokens": 39000,
   "max_total_num_tokens": 40000, "token_usage": 0.98, "gen_throughput": 900.5, "cache_hit_rate": 0.2, "max_running_requests": 256},
  {"dp_rank": 1, "num_running_reqs": 10, "num_waiting_reqs": 0, "num_total_reqs": 10, "num_used_tokens": 16000,
   "max_total_num_tokens": 40000, "token_usage": 0.40, "gen_throughput": 300, "cache_hit_rate": 0.4, "max_running_requests": 256}],
 "aggregate": {"total_running_reqs": 40, "total_waiting_reqs": 5, "total_reqs": 45}}`

// /get_load as releases before /v1/loads answer it: num_reqs counts the
// running and the waiting requests.
const getLoadTwoRanks = `[{"dp_rank": 0, "num_reqs": 35, "num_waiting_reqs": 5, "num_tokens": 41000},
 {"dp_rank": 1, "num_reqs": 10, "num_waiting_reqs": 0, "num_tokens": 16000}]`

func TestParseLoadReports(t *testing.T) {
	s, err := parseLoadReport(strings.NewReader(loadsTwoRanks), SourceLoads)
	if err != nil {
		t.Fatal(err)
	}
	if s.Running != 40 || s.Queued != 5 || s.UsedTokens != 55000 || s.GenThroughput != 1200.5 || s.Ranks != 2 ||
		!near(s.TokenUsage, 0.69) || s.MaxTokenUsage != 0.98 || !near(s.CacheHitRate, 0.3) {
		t.Errorf("/v1/loads: %+v", s)
	}
	if got := s.String(); got != "40 running, 5 queued, KV 69% (fullest rank 98%), 1,201 tok/s, cache hits 30%, 2 ranks" {
		t.Errorf("String() = %q", got)
	}

	s, err = parseLoadReport(strings.NewReader(getLoadTwoRanks), SourceGetLoad)
	if err != nil {
		t.Fatal(err)
	}
	// num_tokens adds the waiting prompts to the cache: no occupancy.
	if s.Running != 40 || s.Queued != 5 || s.Ranks != 2 || s.Has[TokenUsage] || s.Has[NumUsedTokens] || s.Has[GenThroughput] {
		t.Errorf("/get_load: %+v", s)
	}
	if got := s.String(); got != "40 running, 5 queued, 2 ranks" {
		t.Errorf("String() = %q", got)
	}
}

// Answers that are not SGLang's reports are no reading: the caller goes on
// without, rather than sizing itself from a guess.
func TestParseLoadReportsRefuses(t *testing.T) {
	for _, tc := range []struct{ name, source, body string }{
		{"not JSON", SourceLoads, "<html>404</html>"},
		{"an object without loads", SourceLoads, `{"status": "ok"}`},
		{"no ranks", SourceLoads, `{"loads": []}`},
		{"no waiting count", SourceLoads, `{"loads": [{"dp_rank": 0, "num_running_reqs": 3}]}`},
		{"a count as a string", SourceLoads, `{"loads": [{"num_running_reqs": "3", "num_waiting_reqs": 0}]}`},
		{"one number for everything (early releases)", SourceGetLoad, `{"load": 12}`},
		{"a rank that is no object", SourceGetLoad, `[3]`},
		// gjson's validation recurses once per level: this overflowed the
		// stack (a hostile server's answer to every path).
		{"twelve megabytes of [", SourceLoads, strings.Repeat("[", 12<<20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s, err := parseLoadReport(strings.NewReader(tc.body), tc.source); !errors.Is(err, ErrNoMetrics) {
				t.Errorf("%s %s: %+v, %v; want ErrNoMetrics", tc.source, tc.body, s, err)
			}
		})
	}
}

// Fetch reads the first source a server serves, says which, and names what
// each answered when it serves none.
func TestFetchFallsBack(t *testing.T) {
	serve := func(paths map[string]string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, ok := paths[r.URL.Path]
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	for _, tc := range []struct {
		name    string
		paths   map[string]string
		source  string
		running float64
	}{
		{"metrics first", map[string]string{"/metrics": oneRank, "/v1/loads": loadsTwoRanks, "/get_load": getLoadTwoRanks}, SourceMetrics, 48},
		{"without --enable-metrics", map[string]string{"/v1/loads": loadsTwoRanks, "/get_load": getLoadTwoRanks}, SourceLoads, 40},
		{"an older release", map[string]string{"/get_load": getLoadTwoRanks}, SourceGetLoad, 40},
		{"metrics that are not SGLang's", map[string]string{"/metrics": "go_goroutines 7\n", "/get_load": getLoadTwoRanks}, SourceGetLoad, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(tc.paths)
			s, err := Fetch(context.Background(), srv.URL, Options{Client: srv.Client()})
			if err != nil || s.Source != tc.source || s.Running != tc.running {
				t.Errorf("Fetch = %+v, %v; want %v running from %s", s, err, tc.running, tc.source)
			}
			again, err := FetchFrom(context.Background(), srv.URL, tc.source, Options{Client: srv.Client()})
			if err != nil || again.Running != s.Running || again.Source != tc.source {
				t.Errorf("FetchFrom(%s) = %+v, %v", tc.source, again, err)
			}
		})
	}
	srv := serve(map[string]string{"/get_load": `{"load": 3}`})
	_, err := Fetch(context.Background(), srv.URL, Options{Client: srv.Client()})
	if !errors.Is(err, ErrNoMetrics) {
		t.Fatalf("a server with no report: %v, want ErrNoMetrics", err)
	}
	for _, want := range []string{srv.URL + "/metrics: HTTP 404 (start SGLang with --enable-metrics)", srv.URL + "/v1/loads: HTTP 404", srv.URL + "/get_load: no per-rank load list"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
