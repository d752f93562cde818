package estimate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stubSGLang answers /server_info with a small KV cache and /metrics with
// the given Prometheus text ("" for 404, as SGLang without
// --enable-metrics).
func stubSGLang(t *testing.T, metrics string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /server_info", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"max_total_num_tokens":100000,"max_running_requests":64,"context_length":8192}`)
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if metrics == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, metrics)
	})
	mux.HandleFunc("GET /api/v1/models", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-right" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"code":401,"message":"User not found."}}`)
			return
		}
		fmt.Fprint(w, `{"data":[{"id":"a/b","pricing":{"prompt":"0.000001","completion":"0.000002"}}]}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func gauge(name string, v float64) string {
	return fmt.Sprintf("# TYPE sglang:%s gauge\nsglang:%s{model_name=\"m\"} %g\n", name, name, v)
}

// Five answers of 100 tokens side by side are 100 decode steps. Their time
// comes from the server's own figures.
func TestSpeedFromMetrics(t *testing.T) {
	dir := t.TempDir()
	todo := filepath.Join(dir, "todo.jsonl")
	os.WriteFile(todo, []byte(strings.Repeat(`{"prompt_tokens":10}`+"\n", 5)), 0o644)
	for _, tc := range []struct {
		name, metrics string
		seconds       float64 // 0: no speed known
		source        string
	}{
		// Busy: 10 running requests make 500 tok/s, a step takes 20 ms.
		{"busy server", gauge("gen_throughput", 500) + gauge("num_running_reqs", 10), 2, "/metrics: 500 tok/s with 10 running"},
		// Idle: 500 tok/s when last busy, read as the full batch's rate:
		// a step of this run's 5 requests takes 10 ms.
		{"idle server", gauge("gen_throughput", 500) + gauge("num_running_reqs", 0), 1, "/metrics: 500 tok/s when last busy"},
		{"no metrics", "", 0, ""},
		{"never busy", gauge("gen_throughput", 0) + gauge("num_running_reqs", 0), 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := stubSGLang(t, tc.metrics)
			var stdout, stderr bytes.Buffer
			code := Main([]string{"estimate", "--json", "--lengths", "fixed:100", "--url", url, todo}, strings.NewReader(""), &stdout, &stderr)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			var rep struct {
				Backends []struct {
					RateSource string `json:"rate_source"`
				} `json:"backends"`
				Total struct {
					Backends []struct {
						Seconds *float64 `json:"seconds"`
						Steps   int64    `json:"steps"`
					} `json:"backends"`
				} `json:"total"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			got := rep.Total.Backends[0]
			switch {
			case tc.seconds == 0 && got.Seconds != nil:
				t.Errorf("%g s with no speed known", *got.Seconds)
			case tc.seconds == 0 && !strings.Contains(stderr.String(), "no speed known: give --rate"):
				t.Errorf("stderr %q, want the hint", stderr.String())
			case tc.seconds > 0 && (got.Seconds == nil || *got.Seconds < tc.seconds*0.999 || *got.Seconds > tc.seconds*1.001 || got.Steps != 100):
				t.Errorf("seconds %v, steps %d; want %g s, 100 steps", got.Seconds, got.Steps, tc.seconds)
			}
			if rep.Backends[0].RateSource != tc.source {
				t.Errorf("rate source %q, want %q", rep.Backends[0].RateSource, tc.source)
			}
		})
	}
}

// The price list's key comes from OPENROUTER_API_KEY; a refused key stops
// the estimate with 77 and is never printed.
func TestPriceListKey(t *testing.T) {
	url := stubSGLang(t, "")
	dir := t.TempDir()
	todo := filepath.Join(dir, "todo.jsonl")
	os.WriteFile(todo, []byte(`{"prompt_tokens":1000}`+"\n"), 0o644)
	args := []string{"estimate", "--json", "--lengths", "fixed:1000", "--model", "a/b", "--openrouter-url", url + "/api/v1", todo}

	t.Setenv(apiKeyEnv, "sk-wrong")
	var stdout, stderr bytes.Buffer
	if code := Main(args, strings.NewReader(""), &stdout, &stderr); code != 77 || strings.Contains(stderr.String(), "sk-wrong") {
		t.Fatalf("exit %d, stderr %q; want 77 without the key", code, stderr.String())
	}

	t.Setenv(apiKeyEnv, "sk-right")
	stdout.Reset()
	if code := Main(args, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	// 1,000 prompt tokens at $1 and 1,000 completion at $2 per million.
	if !strings.Contains(stdout.String(), `"usd": 0.003`) {
		t.Errorf("want $0.003 in\n%s", stdout.String())
	}
}
