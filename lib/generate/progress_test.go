package generate

import (
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/record"
	"github.com/synthpipe/synthpipe/lib/sim"
)

func TestRenderBar(t *testing.T) {
	running := progressView{done: 812, total: 1800, ok: 800, errors: 12, truncated: 3, reqPerSec: 14.2, tokPerSec: 9811,
		inFlight: 48, eta: 12*time.Minute + 20*time.Second, hasETA: true}
	unknownTotal := running
	unknownTotal.total = 0
	early := running
	early.hasETA, early.etaLater = false, true
	limited := running
	limited.limit = "budget"
	almost := running
	almost.done, almost.total = 2986, 3000
	budgeted := limited
	budgeted.standing = standing{tokenBudget: 30000, tokensSpent: 2400}
	numbers := "45% 812/1,800 ok 800 err 12 trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight | ETA 12m"
	for _, tc := range []struct {
		name   string
		view   progressView
		width  int
		colour bool
		want   string
	}{
		{"a fifth of 120 columns for the bar", running, 119, false,
			"[" + strings.Repeat("#", 10) + strings.Repeat(".", 13) + "]  " + numbers},
		{"the default width: the rates go first", running, defaultColumns - 1, false,
			"[" + strings.Repeat("#", 8) + strings.Repeat(".", 11) + "]  45% 812/1,800 ok 800 err 12 trunc 3 | 48 in flight | ETA 12m"},
		{"a wide terminal: the bar stops at 40", running, 250, false,
			"[" + strings.Repeat("#", 18) + strings.Repeat(".", 22) + "]  " + numbers},
		{"what holds the requests in flight", limited, 159, false,
			"[" + strings.Repeat("#", 13) + strings.Repeat(".", 18) + "]  45% 812/1,800 ok 800 err 12 trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight (limit: budget) | ETA 12m"},
		{"the budget's share outlasts the rates", budgeted, 119, false,
			"[" + strings.Repeat("#", 10) + strings.Repeat(".", 13) + "]  45% 812/1,800 ok 800 err 12 trunc 3 | 48 in flight (limit: budget) | ETA 12m | budget 8%"},
		{"too narrow for a bar: the numbers stay", running, 49, false, "45% 812/1,800 ok 800 err 12 trunc 3 | ETA 12m"},
		{"narrower still: the ETA goes", running, 40, false, "45% 812/1,800 ok 800 err 12 trunc 3"},
		{"tiny: cut at the edge", running, 10, false, "45% 812/1,"},
		{"no total: no bar, no percentage", unknownTotal, 120, false,
			"812 done ok 800 err 12 trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight | ETA 12m"},
		{"no ETA yet", early, 119, false,
			"[" + strings.Repeat("#", 10) + strings.Repeat(".", 13) + "]  45% 812/1,800 ok 800 err 12 trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight | ETA ..."},
		{"99% and a bar short of full until the end", almost, 119, false,
			"[" + strings.Repeat("#", 22) + ".]  99% 2,986/3,000 ok 800 err 12 trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight | ETA 12m"},
		{"colour", running, 119, true,
			"[\x1b[32m" + strings.Repeat("#", 10) + "\x1b[0m" + strings.Repeat(".", 13) + "]  45% 812/1,800 ok 800 err \x1b[31m12\x1b[0m trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight | ETA 12m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := renderBar(tc.view, tc.width, tc.colour)
			if got != tc.want {
				t.Fatalf("width %d:\n got %q\nwant %q", tc.width, got, tc.want)
			}
			if !tc.colour {
				if n := utf8.RuneCountInString(got); n > tc.width {
					t.Fatalf("%d columns, more than %d", n, tc.width)
				}
				if strings.Contains(got, "\x1b") {
					t.Fatalf("escapes without colour: %q", got)
				}
			}
		})
	}
}

func TestPercentDone(t *testing.T) {
	for _, tc := range []struct{ done, total, want int64 }{
		{0, 3000, 0}, {29, 3000, 0}, {30, 3000, 1}, {2986, 3000, 99}, {2999, 3000, 99}, {3000, 3000, 100}, {3001, 3000, 100},
	} {
		if got := percentDone(tc.done, tc.total); got != tc.want {
			t.Errorf("%d of %d: %d%%, want %d%%", tc.done, tc.total, got, tc.want)
		}
	}
}

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

func TestProgressMode(t *testing.T) {
	for _, tc := range []struct {
		name         string
		terminal     bool
		term         string
		noColor      string
		live, colour bool
	}{
		{"terminal", true, "xterm-256color", "", true, true},
		{"terminal with NO_COLOR", true, "xterm-256color", "1", true, false},
		{"dumb terminal", true, "dumb", "", false, false},
		{"a log file", false, "xterm-256color", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if live, colour := progressMode(tc.terminal, tc.term, tc.noColor); live != tc.live || colour != tc.colour {
				t.Fatalf("live %v colour %v, want %v %v", live, colour, tc.live, tc.colour)
			}
		})
	}
}

// A budget that keeps few requests in flight says so on the progress line,
// and the server's concurrency target, which changes nothing then, is
// logged once, when it is first sized.
func TestProgressNamesTheBudgetAsTheLimit(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) {
		c.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: 64}
		c.StepTime = 10 * time.Millisecond
		c.MaxTotalTokens = 2000
	})
	// 30 prompts of 10 tokens, max_tokens 300: a worst case of 310 tokens,
	// answers of 75 (64 and the EOS, with the prompt). 1,000 tokens start
	// about 10 of them, two or three at a time. The server's target moves
	// from 20 (sized for answers of 150) to about 50 as answers come in,
	// a change worth a line were the server the limit.
	r := runGenerate(t, sglangRequests(30, 10), "--url", url, "--max-tokens", "300", "--token-budget", "1000",
		"--progress-interval", "50ms")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var limited, sized int
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, " in flight (limit: budget)") {
			limited++
		}
		if strings.Contains(l, ": concurrency ") {
			sized++
		}
	}
	if limited == 0 {
		t.Errorf("no progress line names the budget as the limit:\n%s", r.stderr)
	}
	if sized != 1 {
		t.Errorf("%d concurrency lines, want 1 (the first sizing): the budget, not the server, held the run\n%s", sized, r.stderr)
	}
}

// Under a token budget the run ends when the next request's worst case no
// longer fits, not when the budget is spent: the ETA counts the requests
// that still start to that point.
func TestBudgetStartsStopAtTheLastWorstCase(t *testing.T) {
	s := &scheduler{cfg: &config{countMode: record.CountTotal}}
	s.cfg.params.MaxTokens = 4096
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
	cfg := &config{countMode: record.CountTotal, tokenBudget: 40000}
	cfg.params.MaxTokens = 1500
	s := &scheduler{cfg: cfg, budget: newBudget(cfg, 0, 0),
		dispatcher: &dispatcher{pool: newPool([]*server{{url: "http://a", limiter: capacity.Fixed(84)}}, time.Minute)}}
	est := capacity.LengthEstimate{Mean: 400, DecodeRate: 100}
	eta, ok := s.eta(tally{completionTokens: 10000}, 0, 0, est, 29, 10*time.Second)
	if !ok || eta != 48*time.Second {
		t.Fatalf("ETA %v (%v), want 48s: twelve waves of a 4 s answer", eta, ok)
	}
}
