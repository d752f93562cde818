package generate

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/sim"
)

// How a test's server reports its load.
const (
	viaMetrics = "/metrics"  // SGLang with --enable-metrics
	viaLoads   = "/v1/loads" // SGLang without (its default)
	viaGetLoad = "/get_load" // an older SGLang without
	viaNothing = ""          // a server that reports no load
)

// shareRuns runs n generates at once against a fresh KV-limited simulator
// that reports its load via the given source, the records dealt out among
// them as the datasets of scripts/fanout.sh would be, and returns what the
// server counted.
func shareRuns(t *testing.T, n int, records []string, via string, shared bool) sim.Stats {
	t.Helper()
	// Beside others, a run that reads the server's load says so when it
	// first sees their requests; alone, it says nothing of sharing.
	says, saysNot := "): sized from its "+via+" (running + queued)", ""
	switch {
	case via == viaNothing && shared:
		says = "shares the server with other runs by probes of its queue"
	case via == viaNothing:
		says = "sized as if no other run used it"
	case n == 1:
		says, saysNot = "", "shar"
	}
	srv, url := startSim(t, func(c *sim.Config) {
		c.NoMetrics = via != viaMetrics
		switch via {
		case viaGetLoad:
			c.LoadReports = sim.LoadReportsGetLoad
		case viaNothing:
			c.LoadReports = sim.LoadReportsNone
		}
		c.MaxTotalTokens = 6000
		c.Lengths = sim.LengthDist{Kind: sim.LengthLognormal, Median: 200, Sigma: 0.6, Max: 800}
		c.StepTime = 500 * time.Microsecond
		c.Seed = 7
	})
	parts := make([]strings.Builder, n)
	for i, r := range records {
		parts[i%n].WriteString(r)
	}
	var wg sync.WaitGroup
	for i := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := strings.Count(parts[i].String(), "\n")
			args := []string{"--url", url, "--max-tokens", "800", "--progress-interval", "0"}
			if shared {
				args = append(args, "--shared") // as scripts/fanout.sh runs them
			}
			r := runGenerate(t, parts[i].String(), args...)
			if r.code != 0 || len(r.lines(t)) != want {
				t.Errorf("run %d of %d: exit %d, %d of %d records written\n%s", i+1, n, r.code, len(r.lines(t)), want, r.stderr)
			}
			if !strings.Contains(r.stderr, says) {
				t.Errorf("run %d of %d does not say %q:\n%s", i+1, n, says, r.stderr)
			}
			if saysNot != "" && strings.Contains(r.stderr, saysNot) {
				t.Errorf("run %d of %d, alone, speaks of sharing the server:\n%s", i+1, n, r.stderr)
			}
		}()
	}
	wg.Wait()
	return srv.Stats()
}

func queuePerRunning(st sim.Stats) float64 {
	return float64(st.QueuedSteps) / float64(max(st.RunningSteps, 1))
}

func describe(st sim.Stats) string {
	return fmt.Sprintf("%d retractions, queue %.1f / running %.1f on average (%.3f), at most %d queued",
		st.Retractions, float64(st.QueuedSteps)/float64(max(st.Steps, 1)), float64(st.RunningSteps)/float64(max(st.Steps, 1)), queuePerRunning(st), st.MaxQueued)
}

// TestRunsShareAServer: 4 and 10 runs at once against one KV-limited server,
// over the prompts one run would send, keep its queue about as short as the
// one run does and have it retract about as few requests: what the server
// counted, with generous bounds (how full the batch stays depends on this
// machine; the benchmark scripts/bench/shared.sh measures the throughput).
// Runs that each sized themselves as if alone queued their N loads: 4 runs
// queued more than one request per request running.
func TestRunsShareAServer(t *testing.T) {
	testRunsShare(t, viaMetrics, 4, 10)
}

// TestRunsShareAServerByItsLoadReports: the same without /metrics, as
// SGLang runs by default: its /v1/loads (recent releases) or /get_load
// (older ones) say as much of the queue.
func TestRunsShareAServerByItsLoadReports(t *testing.T) {
	testRunsShare(t, viaLoads, 10)
	testRunsShare(t, viaGetLoad, 4)
}

// TestRunsShareAServerWithoutMetrics: ten runs with --shared against a
// server that reports no load (not SGLang) share it by probes of its
// queue. How closely is the benchmark's to say (scripts/bench/shared.sh:
// probes read time, which a loaded machine bends); what holds on any
// machine is the difference from ten runs each sized as if alone, which
// queue their ten loads: several times fewer queued, a lower peak.
func TestRunsShareAServerWithoutMetrics(t *testing.T) {
	records := shareRecords()
	one := shareRuns(t, 1, records, viaNothing, true)
	t.Logf("1 run: %s", describe(one))
	shared := shareRuns(t, 10, records, viaNothing, true)
	t.Logf("10 runs, --shared: %s", describe(shared))
	alone := shareRuns(t, 10, records, viaNothing, false)
	t.Logf("10 runs, each as if alone: %s", describe(alone))
	if shared.Completed < int64(len(records)) { // and the probes
		t.Errorf("%d of %d requests completed", shared.Completed, len(records))
	}
	if q, limit := queuePerRunning(shared), queuePerRunning(alone)/3; q > limit {
		t.Errorf("10 runs sharing: %.3f requests queued per request running, each as if alone %.3f (bound %.3f)", q, queuePerRunning(alone), limit)
	}
	if shared.MaxQueued >= alone.MaxQueued {
		t.Errorf("10 runs sharing: %d queued at the peak, each as if alone %d", shared.MaxQueued, alone.MaxQueued)
	}
}

// shareRecords are the prompts the sharing tests deal out among their runs.
func shareRecords() []string {
	var records []string
	for _, l := range strings.SplitAfter(sglangRequests(400, 60), "\n") {
		if l != "" {
			records = append(records, l)
		}
	}
	return records
}

func testRunsShare(t *testing.T, via string, runs ...int) {
	records := shareRecords()
	one := shareRuns(t, 1, records, via, false)
	t.Logf("1 run, %s: %s", via, describe(one))
	for _, n := range runs {
		st := shareRuns(t, n, records, via, false)
		t.Logf("%d runs, %s: %s", n, via, describe(st))
		if st.Completed != int64(len(records)) {
			t.Errorf("%d runs: %d of %d requests completed", n, st.Completed, len(records))
		}
		if limit := 2*one.Retractions + int64(len(records))/10; st.Retractions > limit {
			t.Errorf("%d runs: %d retractions, one run %d (bound %d)", n, st.Retractions, one.Retractions, limit)
		}
		if q, limit := queuePerRunning(st), max(2*queuePerRunning(one), 0.25); q > limit {
			t.Errorf("%d runs: %.3f requests queued per request running, one run %.3f (bound %.3f)", n, q, queuePerRunning(one), limit)
		}
		if limit := 2*one.MaxQueued + 20; st.MaxQueued > limit {
			t.Errorf("%d runs: %d requests queued at the peak, one run %d (bound %d)", n, st.MaxQueued, one.MaxQueued, limit)
		}
	}
}

// A run alone on a server that reports its load says nothing of sharing
// it; the same run beside another run's requests (held on the server
// until the test ends) says so once, with what the server held. Events,
// not timing: the other run holds more requests than this run has
// records, before it starts, and the server's load is read when a run
// starts, so even the first reading shows requests that are not this
// run's.
func TestSaysItSharesOnlyBesideAnotherRun(t *testing.T) {
	const records = 4
	in := sglangRequests(records, 8)
	srv, url := startSim(t, func(c *sim.Config) {
		c.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: 50}
		c.StepTime = time.Millisecond // the other run's requests last 30 s
	})
	args := []string{"--url", url, "--max-tokens", "64", "--progress-interval", "0"}
	alone := runGenerate(t, in, args...)
	if alone.code != 0 || strings.Contains(alone.stderr, "shar") {
		t.Errorf("alone: exit %d, and the log speaks of sharing the server:\n%s", alone.code, alone.stderr)
	}
	for range records + 1 {
		holdOtherRequest(t, url)
	}
	if st := srv.Stats(); st.Running+st.Queued <= records {
		t.Fatalf("the other run's requests are not on the server: %+v", st)
	}
	beside := runGenerate(t, in, args...)
	says := regexp.MustCompile(`: shares the server with other runs \(it held [0-9]+ requests, [0-9]+ of them this run's\): sized from its /metrics \(running \+ queued\) every 500ms\n`)
	if beside.code != 0 || len(says.FindAllString(beside.stderr, -1)) != 1 {
		t.Errorf("beside another run: exit %d, and the log does not say once that it shares the server:\n%s", beside.code, beside.stderr)
	}
}

// holdOtherRequest puts a request on the SGLang server at url that stands
// for another run's: it runs (ignore_eos, 30,000 tokens) until the test
// ends. It returns once the server streams its first tokens.
func holdOtherRequest(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"input_ids":[9,9,9,9],"sampling_params":{"max_new_tokens":30000,"ignore_eos":true},"stream":true}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/generate", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
	})
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatalf("the other run's request: %s: %v", resp.Status, err)
	}
}
