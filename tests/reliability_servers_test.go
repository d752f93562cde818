package tests

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/sim"
	"github.com/synthpipe/synthpipe/lib/simtest"
)

// The server tests take inference servers away under a running generate:
// one of three dies for good, or the only one restarts on the same port.
// Either way the run must complete with every record answered once.

// Server test settings: answers take up to serverMaxTokens steps of
// serverStep, so that a few hundred records keep the servers busy for a
// couple of seconds and the failure lands mid-run.
const (
	serverMaxTokens = 64
	serverStep      = 4 * time.Millisecond
	serverDowntime  = time.Second
	// serverTimeout bounds one attempt. Only a hang may reach it: a dead
	// server's requests fail at once. Answers of a few steps can take
	// seconds on a loaded machine, and attempts cut short there trip the
	// breaker as if the server were down, until generate gives up on it.
	serverTimeout = 2 * time.Minute
)

// serverSimConfig is the configuration of every server of these tests,
// and of the one restarted in a dead one's place.
func serverSimConfig() sim.Config {
	cfg := quickSimConfig()
	cfg.Lengths.Max = serverMaxTokens
	cfg.StepTime = serverStep
	cfg.MaxRunningRequests = 64
	return cfg
}

func TestReliabilityServerDeath(t *testing.T) {
	requireTools(t, "generate")
	t.Parallel() // mostly waiting on servers and pipes: it runs beside the other reliability tests
	for _, tc := range []struct {
		backend string
		stream  bool
	}{{"sglang", false}, {"sglang", true}, {"openai", false}, {"openai", true}} {
		name := tc.backend + map[bool]string{false: "_whole", true: "_stream"}[tc.stream]
		t.Run("one_of_three_dies_"+name, func(t *testing.T) {
			serverOutage(t, tc.backend, tc.stream, 3, false)
		})
		// A restart costs a downtime and the backoff after it: make test
		// restarts under two of the four combinations, make stress all.
		if stressRun() || tc.stream == (tc.backend == "sglang") {
			t.Run("restart_same_port_"+name, func(t *testing.T) {
				serverOutage(t, tc.backend, tc.stream, 1, true)
			})
		}
	}
	t.Run("every_request_fails", serverAlwaysFails)
}

// serverAlwaysFails: a server that answers every request with HTTP 500 is
// a server that "kept failing after the retries": generate must say try
// again later (75), not success, and put every record in the errors file
// or count it as not done.
func serverAlwaysFails(t *testing.T) {
	dir := t.TempDir()
	rs := syntheticRequests(t, dir, 40, 500)
	cfg := quickSimConfig()
	cfg.Faults.HTTP500 = 1
	srv := simtest.Start(t, cfg)
	outPath, errPath := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "errors.jsonl")
	args := generateArgs("sglang", []string{srv.URL}, serverMaxTokens, errPath, "--retries", "2", rs.path)
	run := runWatched(testDeadline(t, time.Minute), nil, outPath, "generate", args...)
	if run.code != 75 {
		t.Errorf("generate exited %d when every request failed with HTTP 500 after its retries, want 75 (try again later)\nstderr:\n%s",
			run.code, tail(string(run.stderr), 2000))
	}
	o := checkOutcome(t, rs, answerChecker{srv: srv.Server, backend: "sglang"}, outPath, errPath, false)
	if sum, err := parseSummary(string(run.stderr)); err != nil {
		t.Error(err)
	} else {
		o.checkAccounted(t, rs, sum)
	}
	if len(o.okIDs) > 0 {
		t.Errorf("%d records succeeded against a server that fails every request", len(o.okIDs))
	}
}

// serverOutage runs generate over n servers and, once a third of the
// records are answered, closes the first: for good, or (restart) for
// serverDowntime before a new server takes its port.
func serverOutage(t *testing.T, backend string, stream bool, n int, restart bool) {
	dir := t.TempDir()
	rs := syntheticRequests(t, dir, scale(300, 3000), uint64(n))
	var servers []*simtest.Server
	var urls []string
	for range n {
		s := simtest.Start(t, serverSimConfig())
		servers = append(servers, s)
		urls = append(urls, s.URL)
	}
	outPath, errPath := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "errors.jsonl")
	args := generateArgs(backend, urls, serverMaxTokens, errPath, "--timeout", serverTimeout.String(), "--progress-interval", "0")
	if stream {
		args = append(args, "--stream")
	}
	done := make(chan watchedRun, 1)
	go func() {
		done <- runWatched(testDeadline(t, 5*time.Minute), nil, outPath, "generate", append(args, rs.path)...)
	}()

	answered := func() int64 {
		var sum int64
		for _, s := range servers {
			sum += s.Stats().Completed
		}
		return sum
	}
	for deadline := time.Now().Add(30 * time.Second); answered() < int64(len(rs.byID)/3) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	victim := servers[0]
	inFlight := victim.Stats().Running + victim.Stats().Queued
	victim.Close()
	if restart {
		time.Sleep(serverDowntime)
		s, err := simtest.StartAt(serverSimConfig(), victim.Addr)
		if err != nil {
			t.Fatalf("restart on %s: %v", victim.Addr, err)
		}
		t.Cleanup(func() { s.Close() })
		servers[0] = s
	}
	run := <-done
	t.Logf("closed %s with %d requests in flight (restart: %v); generate took %v, exit %d", victim.URL, inFlight, restart,
		run.elapsed.Round(10*time.Millisecond), run.code)

	if run.timedOut || run.code != 0 {
		t.Errorf("generate exited %d (timed out: %v), want 0: the run must complete on the servers left\nstderr:\n%s",
			run.code, run.timedOut, tail(string(run.stderr), 3000))
	}
	ans := answerChecker{srv: servers[len(servers)-1].Server, backend: backend, maxTokens: serverMaxTokens}
	o := checkOutcome(t, rs, ans, outPath, errPath, false)
	if sum, err := parseSummary(string(run.stderr)); err != nil {
		t.Error(err)
	} else {
		o.checkAccounted(t, rs, sum)
	}
	if len(o.errIDs) > 0 {
		kinds := map[string]int{}
		for _, e := range o.errIDs {
			kinds[e.Error.Kind]++
		}
		t.Errorf("%d records failed because a server went away: %v (first: %s)", len(o.errIDs), kinds,
			strings.TrimSpace(o.errIDs[sortedKeys(o.errIDs)[0]].Error.Message))
	}
}
