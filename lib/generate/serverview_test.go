package generate

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/engine"
	"github.com/synthpipe/synthpipe/lib/sim"
	"github.com/synthpipe/synthpipe/lib/statusfile"
)

// quickView is the test options with a server view that reads often and
// calls the server the limit after three readings in a row at least full.
func quickView(full float64) options {
	o := testOptions
	o.tuning = engine.Tuning{MetricsEvery: 5 * time.Millisecond, MinMetricsEvery: time.Millisecond,
		LimitPolls: 3, LimitFor: time.Nanosecond, KVFull: full}
	return o
}

// A server with two data-parallel ranks whose small KV caches a fixed
// concurrency of 100 overfills, read at /metrics or (SGLang's default, no
// --enable-metrics) at /v1/loads: the progress lines show the server's
// view, the hint that the server is the limit comes once, the summary gives
// its load while busy, and the status file has the figures and their
// source.
func TestServerViewMetrics(t *testing.T) {
	for _, via := range []string{viaMetrics, viaLoads} {
		t.Run(strings.TrimPrefix(via, "/"), func(t *testing.T) { testServerView(t, via) })
	}
}

func testServerView(t *testing.T, via string) {
	opt := quickView(0.5)
	_, url := startSim(t, func(c *sim.Config) {
		c.NoMetrics = via != viaMetrics
		c.DataParallel = 2
		c.MaxTotalTokens = 800
		c.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: 80}
		c.StepTime = time.Millisecond
	})
	status := filepath.Join(t.TempDir(), "status.json")
	r := runGenerateWith(t, opt, sglangRequests(120, 10), "--url", url, "--max-tokens", "100", "--concurrency", "100",
		"--progress-interval", "20ms", "--status-file", status)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "; server: ") || !strings.Contains(r.stderr, "2 ranks") {
		t.Errorf("no server view in the progress lines:\n%s", r.stderr)
	}
	if n := strings.Count(r.stderr, "the server is the limit"); n != 1 {
		t.Errorf("the limit hint %d times, want once:\n%s", n, r.stderr)
	}
	if !strings.Contains(r.stderr, "another server as one more --url") {
		t.Errorf("the hint does not say what would help:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "server (mean while busy): ") {
		t.Errorf("no server view in the summary:\n%s", r.stderr)
	}
	checkSummaryAddsUp(t, r.stderr)
	st, err := statusfile.Read(status)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != statusfile.StateFinished || st.Exit == nil || st.Exit.Code != 0 || st.Records.OK != 120 ||
		st.Records.Done != 120 || st.Records.Total != 0 && st.Records.Total != 120 || st.Tokens.Completion != 120*81 {
		t.Errorf("status: %+v exit %+v", st, st.Exit)
	}
	if len(st.Servers) != 1 || st.Servers[0].Metrics == nil || st.Servers[0].Metrics.Ranks != 2 || st.Servers[0].Metrics.Source != via {
		t.Errorf("status servers: %+v", st.Servers)
	}
}

// A server that reports no load (no /metrics, /v1/loads or /get_load):
// generate asks each once, then never again, and prints what it printed
// before.
func TestServerViewNoLoad(t *testing.T) {
	opt := quickView(0.9)
	s, err := sim.New(sim.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The answers wait until the load has been asked at all three places:
	// else a run of 200 short answers can end, and cancel its first reading
	// of the load, before that reading reaches the third (a loaded machine).
	var asked atomic.Int64
	allAsked := make(chan struct{})
	inner := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics", "/v1/loads", "/get_load":
			if asked.Add(1) == 3 {
				close(allAsked)
			}
			http.NotFound(w, r)
			return
		case "/generate":
			select {
			case <-allAsked:
			case <-r.Context().Done():
				return
			}
		}
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	status := filepath.Join(t.TempDir(), "status.json")
	r := runGenerateWith(t, opt, sglangRequests(200, 10), "--url", srv.URL, "--max-tokens", "64", "--progress-interval", "5ms", "--status-file", status)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "server:") || strings.Contains(r.stderr, "server (mean") {
		t.Errorf("a server view without metrics:\n%s", r.stderr)
	}
	if n := asked.Load(); n != 3 {
		t.Errorf("the load asked for %d times, want once at each of three places", n)
	}
	st, err := statusfile.Read(status)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Servers) != 1 || st.Servers[0].Metrics != nil || st.Records.OK != 200 {
		t.Errorf("status: %+v", st)
	}
}

// An OpenRouter-style key: its limit and credit are read at the start; a
// --cost-budget above what it can still spend is refused (77) unless
// --over-key-limit; the progress shows what is left.
func TestKeyLimit(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) {
		c.APIKey = "sk-test"
		c.KeyLimit, c.KeyUsage, c.KeyRateLimit = 2, 0.5, 50
		c.PromptPrice, c.CompletionPrice = 1e-6, 2e-6
	})
	keyFile := filepath.Join(t.TempDir(), "key")
	os.WriteFile(keyFile, []byte("sk-test\n"), 0o600)
	base := []string{"--backend", "openai", "--model", "m", "--url", url + "/api/v1", "--api-key-file", keyFile, "--max-tokens", "32", "--max-price", "3"}

	status := filepath.Join(t.TempDir(), "status.json")
	r := runGenerate(t, chatRequests(5), append(base, "--cost-budget", "5", "--status-file", status)...)
	if st, err := statusfile.Read(status); err != nil || st.State != statusfile.StateFailed || st.Exit == nil || st.Exit.Code != 77 ||
		!strings.Contains(st.Exit.Error, "more than the API key can still spend") {
		t.Errorf("status of the refused run: %+v, %v", st, err)
	}
	if r.code != 77 || !strings.Contains(r.stderr, "--cost-budget $5.00 is more than the API key can still spend: $1.50 of its $2.00 limit is left") ||
		!strings.Contains(r.stderr, "--over-key-limit") || r.stdout != "" {
		t.Fatalf("over the key's credit: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}

	r = runGenerate(t, chatRequests(5), append(base, "--cost-budget", "5", "--over-key-limit", "--progress-interval", "1ms")...)
	if r.code != 0 || len(r.lines(t)) != 5 {
		t.Fatalf("--over-key-limit: exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"key: $0.50 of $2.00 spent, $1.50 left; rate limit 50 requests per 10s", "the run may stop when the key runs out", " left"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}

	r = runGenerate(t, chatRequests(5), append(base, "--cost-budget", "1")...)
	if r.code != 0 || len(r.lines(t)) != 5 {
		t.Fatalf("a budget the key covers: exit %d\n%s", r.code, r.stderr)
	}
}

// A server that cannot be reached is sidelined, and the progress lines say
// so while the run goes on with the other.
func TestProgressShowsServersDown(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) {
		c.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: 20}
		c.StepTime = time.Millisecond
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there any more: connections are refused
	r := runGenerate(t, sglangRequests(30, 5), "--url", url, "--url", dead, "--max-tokens", "32", "--concurrency", "4", "--progress-interval", "1ms")
	if r.code != 0 || len(r.lines(t)) != 30 {
		t.Fatalf("exit %d, %d lines:\n%s", r.code, len(r.lines(t)), r.stderr)
	}
	if !regexp.MustCompile(`(?m)^generate: [0-9].* done.*servers down`).MatchString(r.stderr) {
		t.Errorf("no progress line says a server is down:\n%s", r.stderr)
	}
}

// A server whose /metrics answers NaN, Inf and negative gauges now and then
// (a broken exporter): each such reading is left out (the run stays sized
// from the sane ones and keeps sharing by them), said once with what was
// read, and counted in the summary.
func TestServerViewUnusableReadings(t *testing.T) {
	opt := quickView(0.9)
	s, err := sim.New(sim.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var asked atomic.Int64
	enough := make(chan struct{})
	inner := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			n := asked.Add(1)
			if n == 4 {
				close(enough)
			}
			if n%2 == 1 { // the first, third, ... readings
				w.Write([]byte("sglang:num_running_reqs NaN\nsglang:num_queue_reqs +Inf\nsglang:token_usage -3\n"))
				return
			}
		case "/generate":
			// Answers wait for four readings: the run sees both kinds.
			select {
			case <-enough:
			case <-r.Context().Done():
				return
			}
		}
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	r := runGenerateWith(t, opt, sglangRequests(20, 10), "--url", srv.URL, "--max-tokens", "16")
	if r.code != 0 || len(r.lines(t)) != 20 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	said := "its /metrics reported sglang:num_queue_reqs +Inf, sglang:num_running_reqs NaN, sglang:token_usage -3: no count, left out"
	if n := strings.Count(r.stderr, said); n != 1 {
		t.Errorf("the unusable reading said %d times, want once:\n%s", n, r.stderr)
	}
	if !regexp.MustCompile(`; [0-9,]+ load readings left out \(NaN, Inf or negative figures\)`).MatchString(r.stderr) {
		t.Errorf("the summary does not count the readings left out:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, "as if no other run used it") || strings.Contains(r.stderr, "NaN requests") {
		t.Errorf("an unusable reading changed how the server is shared:\n%s", r.stderr)
	}
}
