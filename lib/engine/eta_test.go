package engine

import (
	"math"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/record"
)

func TestLimitsNameTheLongestWait(t *testing.T) {
	now := time.Unix(0, 0)
	clock := func() time.Time { return now }
	l := newLimits(clock)
	var mark limitMark
	step := func(h holdBack, d time.Duration) { l.enter(h); now = now.Add(d) }
	step(heldByInput, 100*time.Millisecond)
	step(heldByBudget, 800*time.Millisecond)
	step(heldByNothing, 100*time.Millisecond)
	if got := l.limiting(&mark); got != heldByBudget {
		t.Fatalf("800 ms of 1 s waiting on the budget: %v", got)
	}
	step(heldByServer, 300*time.Millisecond)
	step(heldByNothing, 700*time.Millisecond)
	if got := l.limiting(&mark); got != heldByNothing {
		t.Fatalf("starting requests 70%% of the time: %v, want no limit", got)
	}
	step(heldByServer, 2*time.Second)
	if got := l.limiting(&mark); got != heldByServer {
		t.Fatalf("waiting on the servers: %v", got)
	}
	var other limitMark // another reader measures from its own last look
	if got := l.limiting(&other); got != heldByServer {
		t.Fatalf("from the start: %v, want the server (2.3 s of 4)", got)
	}
}

// A budget that keeps few requests in flight says so on the progress line,

// and the server's concurrency target, which changes nothing then, is

// logged once, when it is first sized.

// Under a token budget the run ends when the next request's worst case no

// longer fits, not when the budget is spent: the ETA counts the requests

// that still start to that point.

func TestBudgetStartsStopAtTheLastWorstCase(t *testing.T) {
	s := &scheduler{cfg: &Config{CountMode: record.CountTotal}}
	s.cfg.Params.MaxTokens = 4096
	est := capacity.LengthEstimate{Mean: 1000, InFlightDone: 500, InFlightLeft: 1500}
	// 30,000 left; the 2 in flight take 2 x 300 + 2,000; the last start
	// needs 4,396 free; each start takes 1,300.
	got := s.budgetStarts(30000, 2, est, 300)
	if want := (30000.0-2600-4396)/1300 + 1; math.Abs(got-want) > 1e-9 {
		t.Fatalf("%.2f more starts, want %.2f", got, want)
	}
	if got := s.budgetStarts(6000, 2, est, 300); got != 0 {
		t.Fatalf("a worst case that no longer fits: %.2f more starts, want 0", got)
	}
}

// Under a token budget the last requests run few at a time: each holds

// its worst case (29 + 1,500 tokens) of what is left, so 40,000 tokens run

// 26 at once, then 18, 13, 10, 7, 5, 3, 3, 2, 1, 1, 1: twelve answers'

// times, where the rate of 26 in flight would say four.

func TestBudgetWavesThinOutAtTheEnd(t *testing.T) {
	if got := budgetWaves(40000, 429, 1529, math.Inf(1), 84); got != 12 {
		t.Fatalf("%v waves, want 12", got)
	}
	if got := budgetWaves(40000, 429, 1529, math.Inf(1), 4); got != 26 {
		t.Fatalf("4 at most at once: %v waves, want 26 (the servers hold it first)", got)
	}
	if got := budgetWaves(1e9, 429, 1529, 10, 84); got != 1 {
		t.Fatalf("10 records left, a budget far away: %v waves, want 1", got)
	}
	if got := budgetWaves(1000, 429, 1529, 10, 84); got != 0 {
		t.Fatalf("no worst case fits: %v waves, want 0", got)
	}
}

// The ETA the progress line and the status file give knows the budget's

// tail: with 40,000 tokens left, answers of 400 tokens at 100 tokens/s

// each and 84 requests allowed at once, twelve answers' times (48 s), not

// the 36 s that the rate now (1,000 tokens/s) would give for the 90

// answers the budget still pays for.

func TestETAKnowsTheBudgetsTail(t *testing.T) {
	cfg := &Config{CountMode: record.CountTotal, TokenBudget: 40000}
	cfg.Params.MaxTokens = 1500
	s := &scheduler{cfg: cfg, budget: newBudget(cfg, 0, 0),
		dispatcher: &dispatcher{pool: newPool([]*server{{url: "http://a", limiter: capacity.Fixed(84)}}, time.Minute)}}
	est := capacity.LengthEstimate{Mean: 400, DecodeRate: 100}
	eta, ok := s.eta(tally{completionTokens: 10000}, 0, 0, est, 29, 10*time.Second)
	if !ok || eta != 48*time.Second {
		t.Fatalf("ETA %v (%v), want 48s: twelve waves of a 4 s answer", eta, ok)
	}
}
