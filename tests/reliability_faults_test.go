package tests

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/sim"
	"github.com/synthpipe/synthpipe/lib/simtest"
)

// The fault storm test runs generate against simulators that inject one
// kind of fault into a share of the requests, for each kind, at 10% and 30%,
// with both backends, streaming and not. Every record must end either in
// the output, with the answer to its own prompt, or in the errors file with
// its reason; at 10% with the default retries almost all must succeed; the
// run must end in bounded time and in bounded memory.

// stormFaults are the kinds injected, each alone. The slowest to ride out
// (Retry-After pauses, hangs that end at the timeout) come first, so that
// they start first and the runs after them fill the time they take.
var stormFaults = []sim.FaultKind{
	sim.FaultRateLimit, sim.FaultHang, sim.FaultReset, sim.FaultHTTP500,
	sim.FaultMidStreamError, sim.FaultGarbage, sim.FaultHTML, sim.FaultSlowFirstToken,
}

// Storm settings. The attempt timeout is what ends a hang, so it is short;
// a slow first token stays well inside it and must not be taken for a hang.
const (
	stormMaxTokens      = 64
	stormTimeout        = 2 * time.Second
	stormSlowFirst      = 300 * time.Millisecond
	stormParallelRuns   = 16               // generate processes at once: they mostly sleep in backoff
	stormRSSCapKiB      = 256 << 10        // generate must stay far below this whatever the faults
	stormRunLimit       = 3 * time.Minute  // one combination, quick size
	stormStressRunTime  = 20 * time.Minute // one combination, stress size
	stormMinSuccessAt10 = 0.999
)

// stormCase is one combination and, once run, what happened.
type stormCase struct {
	fault   sim.FaultKind
	rate    float64
	backend string
	stream  bool

	dir     string
	rs      requestSet
	srv     *simtest.Server
	run     watchedRun
	outPath string
	errPath string
}

func (c *stormCase) name() string {
	mode := "whole"
	if c.stream {
		mode = "stream"
	}
	return fmt.Sprintf("%s_%d%%_%s_%s", c.fault, int(c.rate*100), c.backend, mode)
}

func TestReliabilityFaultStorm(t *testing.T) {
	requireTools(t, "generate")
	t.Parallel() // mostly waiting on servers and pipes: it runs beside the other reliability tests
	records := scale(150, 2000)
	limit := stormRunLimit
	if stressRun() {
		limit = stormStressRunTime
	}

	var cases []*stormCase
	for _, rate := range []float64{0.3, 0.1} {
		for _, fault := range stormFaults {
			for _, backend := range []string{"sglang", "openai"} {
				for _, stream := range []bool{false, true} {
					cases = append(cases, &stormCase{fault: fault, rate: rate, backend: backend, stream: stream})
				}
			}
		}
	}

	// Start every combination's server first (a testing.T is needed for
	// that), then run the generate processes many at a time: most of their
	// time is spent waiting out backoffs and Retry-After, not computing.
	for i, c := range cases {
		c.dir = t.TempDir()
		c.rs = syntheticRequests(t, c.dir, records, uint64(i)+1)
		cfg := quickSimConfig()
		cfg.Seed = uint64(i) + 1
		cfg.Faults.SlowFirstTokenDelay = stormSlowFirst
		setFaultRate(&cfg.Faults, c.fault, c.rate)
		c.srv = simtest.Start(t, cfg)
		c.outPath, c.errPath = filepath.Join(c.dir, "out.jsonl"), filepath.Join(c.dir, "errors.jsonl")
	}
	sem := make(chan struct{}, stormParallelRuns)
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			args := generateArgs(c.backend, []string{c.srv.URL}, stormMaxTokens, c.errPath,
				"--timeout", stormTimeout.String(), "--progress-interval", "0")
			if c.stream {
				args = append(args, "--stream")
			}
			// Each combination has limit from its own start: the
			// last ones run after the others, later still on a busy
			// machine.
			c.run = runWatched(testDeadline(t, limit), nil, c.outPath, "generate", append(args, c.rs.path)...)
		}()
	}
	wg.Wait()

	var table strings.Builder
	fmt.Fprintf(&table, "%-40s %8s %6s %6s %6s %8s %8s\n", "combination", "injected", "ok", "errors", "lost", "seconds", "peakMiB")
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			o := checkStorm(t, c)
			lost := len(c.rs.byID) - len(o.okIDs) - len(o.errIDs)
			fmt.Fprintf(&table, "%-40s %8d %6d %6d %6d %8.1f %8.1f\n", c.name(), c.srv.Stats().Faults[c.fault],
				len(o.okIDs), len(o.errIDs), max(lost, 0), c.run.elapsed.Seconds(), float64(c.run.peakKiB)/1024)
		})
	}
	t.Logf("fault storm, %d records per combination:\n%s", records, table.String())
}

// checkStorm judges one combination after its run.
func checkStorm(t *testing.T, c *stormCase) outcome {
	if c.run.err != nil {
		t.Fatalf("generate did not start: %v", c.run.err)
	}
	if c.run.timedOut {
		t.Errorf("generate still ran after %v: killed\nstderr:\n%s", c.run.elapsed.Round(time.Second), tail(string(c.run.stderr), 3000))
	}
	ans := answerChecker{srv: c.srv.Server, backend: c.backend, maxTokens: stormMaxTokens}
	o := checkOutcome(t, c.rs, ans, c.outPath, c.errPath, false)
	if c.run.code == 0 {
		o.checkPartition(t, c.rs)
	}
	// Whatever the exit, what is in neither file must be counted as not
	// done by the summary; anything else is lost.
	if sum, err := parseSummary(string(c.run.stderr)); err != nil {
		t.Error(err)
	} else {
		o.checkAccounted(t, c.rs, sum)
	}
	for _, id := range sortedKeys(o.errIDs) {
		e := o.errIDs[id].Error
		if e.Attempts < 1 {
			t.Errorf("id %s: error record says %d attempts", id, e.Attempts)
		}
	}
	// The server answers most requests all along: nothing justifies
	// giving up on it (75), whatever a few records' retries came to.
	if c.run.code != 0 {
		t.Errorf("generate exited %d against a server that answers %.0f%% of requests, want 0\nstderr:\n%s",
			c.run.code, 100*(1-c.rate), tail(string(c.run.stderr), 3000))
	}
	if injected := c.srv.Stats().Faults[c.fault]; injected == 0 {
		t.Errorf("the server injected no %s fault: the combination tested nothing", c.fault)
	}
	if c.rate <= 0.1 {
		if ok := float64(len(o.okIDs)) / float64(len(c.rs.byID)); ok < stormMinSuccessAt10 {
			kinds := map[string]int{}
			for _, e := range o.errIDs {
				kinds[e.Error.Kind+": "+tail(e.Error.Message, 100)]++
			}
			t.Errorf("only %.2f%% of the records succeeded at a %.0f%% %s rate with the default retries, want at least %.1f%%; errors: %v",
				100*ok, 100*c.rate, c.fault, 100*stormMinSuccessAt10, kinds)
		}
	}
	if c.run.peakKiB > stormRSSCapKiB {
		t.Errorf("generate's peak RSS was %d MiB, over the %d MiB cap", c.run.peakKiB>>10, stormRSSCapKiB>>10)
	}
	if c.run.peakKiB == 0 {
		t.Logf("peak RSS not sampled (the run was too short)")
	}
	return o
}

// setFaultRate sets the probability of one fault kind.
func setFaultRate(f *sim.FaultConfig, kind sim.FaultKind, p float64) {
	rates := map[sim.FaultKind]*float64{
		sim.FaultHTTP500: &f.HTTP500, sim.FaultRateLimit: &f.RateLimit, sim.FaultReset: &f.Reset,
		sim.FaultHang: &f.Hang, sim.FaultSlowFirstToken: &f.SlowFirstToken, sim.FaultMidStreamError: &f.MidStreamError,
		sim.FaultGarbage: &f.Garbage, sim.FaultHTML: &f.HTML, sim.FaultAbort: &f.Abort,
	}
	ptr, ok := rates[kind]
	if !ok {
		panic("no rate for fault " + kind.String())
	}
	*ptr = p
}
