package generate

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/engine"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/sim"
)

func TestTokenBudgetNeverPassed(t *testing.T) {
	for _, drain := range []bool{false, true} {
		name := map[bool]string{false: "cancel", true: "drain"}[drain]
		t.Run(name, func(t *testing.T) {
			_, url := startSim(t, func(c *sim.Config) {
				c.Lengths = sim.LengthDist{Kind: sim.LengthUniform, Min: 5, Max: 60}
				c.StepTime = 200 * time.Microsecond
			})
			dir := t.TempDir()
			already := dir + "/already.jsonl"
			os.WriteFile(already, []byte(`{"id":"old","prompt_tokens":400,"completion_tokens":600}`+"\n"), 0o644)
			args := []string{"--url", url, "--max-tokens", "50", "--token-budget", "5000", "--already", already, "--concurrency", "16"}
			if drain {
				args = append(args, "--drain")
			}
			r := runGenerate(t, sglangRequests(500, 10), args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			total := int64(1000)
			for _, l := range r.lines(t) {
				total += l.Get("prompt_tokens").Int() + l.Get("completion_tokens").Int()
			}
			if total > 5000 {
				t.Fatalf("%d tokens written with the already spent, budget 5000", total)
			}
			if total < 5000-16*60-60 {
				t.Fatalf("only %d tokens of 5000: the budget stopped far too early", total)
			}
			if !strings.Contains(r.stderr, "budget reached") || !strings.Contains(r.stderr, "500 records read") && !strings.Contains(r.stderr, "records read") {
				t.Fatalf("summary: %s", r.stderr)
			}
			checkSummaryAddsUp(t, r.stderr)
		})
	}
}

// TestTokenBudgetWaitsForRequestsInFlight: reservations (prompt +
// --max-tokens) far above what answers use must not end the run while the
// requests in flight may still leave room. 130 answers of 110 tokens fit in
// 40k; only 26 worst cases of 1,510 do.
func TestTokenBudgetWaitsForRequestsInFlight(t *testing.T) {
	for _, tc := range []struct {
		name       string
		completion int
		wantAll    bool
	}{
		{"everything fits", 100, true},
		{"budget runs out", 400, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := startSim(t, func(c *sim.Config) {
				c.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: tc.completion}
				c.StepTime = 100 * time.Microsecond
			})
			r := runGenerate(t, sglangRequests(130, 10), "--url", url, "--max-tokens", "1500", "--token-budget", "40k", "--concurrency", "64")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			lines := r.lines(t)
			var total int64
			for _, l := range lines {
				total += l.Get("prompt_tokens").Int() + l.Get("completion_tokens").Int()
			}
			if total > 40000 {
				t.Fatalf("%d tokens written, budget 40000", total)
			}
			perRecord := int64(10 + tc.completion)
			if tc.wantAll {
				if len(lines) != 130 || strings.Contains(r.stderr, "budget reached") {
					t.Fatalf("%d of 130 records written (all fit in the budget): %s", len(lines), r.stderr)
				}
			} else {
				// It stops only when no request is in flight and one more
				// worst case (1,510) does not fit.
				if total < 40000-1510-perRecord || !strings.Contains(r.stderr, "budget reached") {
					t.Fatalf("%d records, %d tokens of 40000: stopped early: %s", len(lines), total, r.stderr)
				}
			}
			checkSummaryAddsUp(t, r.stderr)
		})
	}
}

func TestCostBudget(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) { c.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: 50} })
	// Each answer costs about 6e-6 + 50*4e-7 = 2.6e-5 USD.
	r := runGenerate(t, chatRequests(400), "--backend", "openai", "--url", url+"/v1", "--model", "sim/llm-sim-8b",
		"--max-tokens", "60", "--cost-budget", "0.002")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var usd float64
	lines := r.lines(t)
	for _, l := range lines {
		usd += l.Get("usage.cost").Float()
	}
	if usd > 0.002 || len(lines) < 40 {
		t.Fatalf("%d answers cost $%f, budget $0.002", len(lines), usd)
	}

	// Without a price the worst case of a request is unknown: refused,
	// for now when the list cannot be read (see TestModelsTimeout).
	dead := closedPort(t)
	r = runGenerate(t, chatRequests(1), "--backend", "openai", "--url", dead, "--model", "m", "--cost-budget", "1")
	if r.code != exitcode.TempFail || !strings.Contains(r.stderr, "--max-price") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}

// closedPort is the URL of a loopback port nobody listens on.
func closedPort(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// pipeWriter fails with EPIPE after n lines, as stdout does when head exits.
type pipeWriter struct {
	mu    sync.Mutex
	n     int
	buf   bytes.Buffer
	shut  time.Time
	lines int
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lines >= p.n {
		if p.shut.IsZero() {
			p.shut = time.Now()
		}
		return 0, syscall.EPIPE
	}
	p.lines += bytes.Count(b, []byte("\n"))
	return p.buf.Write(b)
}

func (p *pipeWriter) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

func TestDownstreamCloses(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) {
		c.Lengths = sim.LengthDist{Kind: sim.LengthUniform, Min: 50, Max: 2000}
		c.StepTime = time.Millisecond
	})
	out := &pipeWriter{n: 5}
	r := runGenerateTo(t, sglangRequests(2000, 10), out, "--url", url, "--max-tokens", "2000", "--concurrency", "100")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// It stopped instead of answering everything: what was in flight was
	// aborted on the server, and most records were never sent. (How long
	// that took depends on the machine: the benchmarks measure it.)
	t.Logf("generate ended %v after the pipe closed", time.Since(out.shut))
	for deadline := time.Now().Add(time.Minute); srv.Stats().Running > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if st := srv.Stats(); st.Running > 0 || st.Aborted == 0 || st.Completed >= 2000 {
		t.Fatalf("requests were not cancelled on the server: %+v", st)
	}
}

func TestOrderedOutput(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) {
		c.Lengths = sim.LengthDist{Kind: sim.LengthUniform, Min: 1, Max: 300}
	})
	r := runGenerate(t, sglangRequests(300, 5), "--url", url, "--max-tokens", "300", "--ordered", "--reorder-window", "64")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := r.lines(t)
	if len(lines) != 300 {
		t.Fatalf("%d results", len(lines))
	}
	for i, l := range lines {
		if l.Get("meta.n").Int() != int64(i) {
			t.Fatalf("line %d is record %s", i, l.Get("id"))
		}
	}
}

func TestSeveralURLsOneDead(t *testing.T) {
	srv, url := startSim(t, nil)
	dead := closedPort(t)
	r := runGenerate(t, sglangRequests(300, 5), "--url", dead, "--url", url, "--max-tokens", "20")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := r.lines(t)
	if len(lines) != 300 {
		t.Fatalf("%d results: %s", len(lines), r.stderr)
	}
	for _, l := range lines {
		if l.Get("gen.endpoint").String() != url {
			t.Fatalf("answered by %s", l.Get("gen.endpoint"))
		}
	}
	checkOwnOutput(t, srv, lines, 5)
}

func TestAllServersDead(t *testing.T) {
	r := runGenerate(t, sglangRequests(5, 5), "--url", closedPort(t), "--url", closedPort(t), "--max-tokens", "20", "--retries", "3")
	if r.code != exitcode.TempFail {
		t.Fatalf("exit %d, want 75: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "no server is reachable") {
		t.Fatalf("stderr: %s", r.stderr)
	}
	checkSummaryAddsUp(t, r.stderr)
}

// TestErrorsFileRefed: feeding the errors file back retries exactly those
// records.
func TestErrorsFileRefed(t *testing.T) {
	_, flaky := startSim(t, func(c *sim.Config) { c.Faults.HTTP500 = 0.4 })
	dir := t.TempDir()
	input := sglangRequests(100, 6)
	first := runGenerate(t, input, "--url", flaky, "--max-tokens", "10", "--retries", "0", "--errors", dir+"/err.jsonl")
	if first.code != 0 {
		t.Fatalf("exit %d: %s", first.code, first.stderr)
	}
	failed := readLines(t, dir+"/err.jsonl")
	if len(failed) == 0 || len(failed)+len(first.lines(t)) != 100 {
		t.Fatalf("%d failed + %d ok, want 100 with some failures", len(failed), len(first.lines(t)))
	}
	errBytes, _ := os.ReadFile(dir + "/err.jsonl")

	srv, clean := startSim(t, nil)
	second := runGenerate(t, string(errBytes), "--url", clean, "--max-tokens", "10", "--errors", dir+"/err2.jsonl")
	if second.code != 0 {
		t.Fatalf("exit %d: %s", second.code, second.stderr)
	}
	got := second.lines(t)
	if len(got) != len(failed) {
		t.Fatalf("%d retried, want %d", len(got), len(failed))
	}
	want := map[string]bool{}
	for _, f := range failed {
		want[f.Get("id").String()] = true
	}
	for _, l := range got {
		if !want[l.Get("id").String()] || l.Get("error").Exists() {
			t.Fatalf("bad retried record: %s", l.Raw)
		}
	}
	checkOwnOutput(t, srv, got, 6)
}

// TestAutoConcurrencyFitsTheKVCache: against a small KV cache, auto
// concurrency is sized from what the cache holds, and generate never has more
// requests on the server than that. How full the batch stays depends on how
// fast this machine is: the test logs it, the benchmarks measure it.
func TestAutoConcurrencyFitsTheKVCache(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) {
		c.MaxTotalTokens = 6000
		c.Lengths = sim.LengthDist{Kind: sim.LengthUniform, Min: 20, Max: 180}
		c.StepTime = 500 * time.Microsecond
	})
	done := make(chan result)
	go func() { done <- runGenerate(t, sglangRequests(800, 100), "--url", url, "--max-tokens", "200") }()
	var running, queued, samples float64
	most := 0
	var r result
	for finished := false; !finished; {
		select {
		case r = <-done:
			finished = true
		case <-time.After(10 * time.Millisecond):
			st := srv.Stats()
			most = max(most, st.Running+st.Queued)
			if st.Running+st.Queued > 20 { // not the drain at the end
				running += float64(st.Running)
				queued += float64(st.Queued)
				samples++
			}
		}
	}
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// The KV cache holds about 6000 / (100 + 61) = 37 requests; the limit
	// adds a queue margin and follows the answer lengths it learns (small
	// changes are not logged), but even answers all of the shortest length
	// (20) would not raise it past 6000 / (100 + 20) + 10% = 55.
	const ceiling = 55
	limits := regexp.MustCompile(`concurrency (\d+): KV`).FindAllStringSubmatch(r.stderr, -1)
	if len(limits) == 0 {
		t.Fatalf("no log line about the concurrency: %s", r.stderr)
	}
	for _, m := range limits {
		if n, _ := strconv.Atoi(m[1]); n < 20 || n > ceiling {
			t.Errorf("concurrency %d for a KV cache that holds about 37 requests", n)
		}
	}
	if most > ceiling {
		t.Errorf("%d requests on the server at once: the KV cache holds at most %d", most, ceiling)
	}
	t.Logf("limits %v, at most %d on the server; mean running %.1f, mean queued %.1f over %.0f samples", limits, most, running/max(samples, 1), queued/max(samples, 1), samples)
}

// checkSummaryAddsUp parses the summary and checks its counts add up to the
// records read.
func checkSummaryAddsUp(t testing.TB, stderr string) {
	t.Helper()
	loc := regexp.MustCompile(`records? read:`).FindStringIndex(stderr)
	if loc == nil {
		t.Fatalf("no summary: %s", stderr)
	}
	i := loc[0]
	line := stderr[strings.LastIndex(stderr[:i], "\n")+1:]
	line = line[:strings.IndexByte(line, ';')]
	var read, ok, errs, cut, cancelled, notStarted int
	num := func(word string) int {
		m := regexp.MustCompile(`([\d,]+) ` + word).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("summary without %q: %s", word, line)
		}
		n, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
		return n
	}
	read, ok, errs = num("records? read"), num("ok"), num("errors?")
	cut, cancelled, notStarted = num("cut by budget"), num("cancelled in flight"), num("not started")
	lost := 0 // answers that never reached stdout, when there are any
	if strings.Contains(line, " lost (answered") {
		lost = num(`lost \(answered`)
	}
	if ok+lost+errs+cut+cancelled+notStarted != read {
		t.Fatalf("summary does not add up: %s", line)
	}
}

// gatedWriter blocks every write until the gate opens, like a reader that
// has stopped reading for a while.
type gatedWriter struct {
	gate chan struct{}
	syncBuffer
}

func (w *gatedWriter) Write(b []byte) (int, error) {
	<-w.gate
	return w.syncBuffer.Write(b)
}

// TestSlowReaderHoldsBackDispatch: while stdout takes nothing, answers do
// not pile up: dispatching stops once maxUnwritten answers wait. What is
// certain while the gate is shut bounds what was sent: the backlog, the
// requests in flight, and the records the output buffer took before its
// first write blocked (how many depends on when the collector flushed).
func TestSlowReaderHoldsBackDispatch(t *testing.T) {
	const records, concurrency = 3000, 32
	srv, url := startSim(t, func(c *sim.Config) { c.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: 4} })
	out := &gatedWriter{gate: make(chan struct{})}
	done := make(chan result)
	go func() {
		done <- runGenerateTo(t, sglangRequests(records, 20), out, "--url", url, "--max-tokens", "8", "--concurrency", strconv.Itoa(concurrency))
	}()
	// Wait until dispatching has filled the backlog (an event: it must
	// happen, however slow the machine), then give a dispatcher that does
	// not hold back the time to overshoot.
	for srv.Stats().Requests < engine.MaxUnwritten {
		select {
		case r := <-done:
			t.Fatalf("generate ended before stdout took anything: exit %d: %s", r.code, r.stderr)
		case <-time.After(5 * time.Millisecond):
		}
	}
	time.Sleep(200 * time.Millisecond)
	sent := srv.Stats().Requests
	close(out.gate)
	if r := <-done; r.code != 0 || strings.Count(out.String(), "\n") != records {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	shortest := len(out.String())
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		shortest = min(shortest, len(line)+1)
	}
	buffered := int64(jsonl.DefaultWriteBuffer/shortest + 1)
	if limit := engine.MaxUnwritten + concurrency + buffered; sent > limit {
		t.Errorf("%d requests sent while stdout took nothing, more than the %d backlog + %d in flight + %d in the output buffer",
			sent, engine.MaxUnwritten, concurrency, buffered)
	}
}

// A run with nothing to send contacts no server: not with an empty input,
// nor when the budget cannot pay for the first request. The server is
// asked for its capacity once there is a request for it.
func TestNothingToSendContactsNoServer(t *testing.T) {
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	if r := runGenerate(t, "", "--url", srv.URL, "--max-tokens", "16"); r.code != 0 {
		t.Fatalf("empty input: exit %d\n%s", r.code, r.stderr)
	}
	r := runGenerate(t, sglangRequests(3, 8), "--url", srv.URL, "--max-tokens", "100", "--token-budget", "50")
	if r.code != 0 || !strings.Contains(r.stderr, "budget reached") {
		t.Fatalf("a budget that pays for no request: exit %d\n%s", r.code, r.stderr)
	}
	if n := asked.Load(); n != 0 {
		t.Fatalf("%d HTTP requests to the server, want none", n)
	}
}
