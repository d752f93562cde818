package estimate

import (
	"math/rand/v2"
	"testing"

	"github.com/synthpipe/synthpipe/lib/capacity"
)

func TestSimulateBatch(t *testing.T) {
	for _, tc := range []struct {
		name        string
		jobs        []job
		cap         capacity.KV
		conc        int
		steps       int64
		retractions int64
	}{
		// Room for all: the run lasts as long as the longest answer.
		{"room for all", []job{{10, 10}, {10, 20}, {10, 30}, {10, 40}}, capacity.KV{Tokens: 1000, MaxRunning: 100}, 4, 40, 0},
		// One request at a time: the answers add up.
		{"one at a time", []job{{10, 10}, {10, 20}, {10, 30}}, capacity.KV{Tokens: 1000, MaxRunning: 1}, 3, 60, 0},
		{"client sends one", []job{{10, 10}, {10, 20}, {10, 30}}, capacity.KV{Tokens: 1000, MaxRunning: 100}, 1, 60, 0},
		// Two requests of 80+20 fit in 200 tokens; the third's prompt
		// does not fit beside them, so it waits for both.
		{"KV bound", []job{{80, 20}, {80, 20}, {80, 20}}, capacity.KV{Tokens: 200, MaxRunning: 100}, 3, 40, 0},
		// Three prompts of 50 fit (150 + 3 < 200), but their answers
		// outgrow the cache: the newest is retracted and redone later.
		{"retraction", []job{{50, 40}, {50, 40}, {50, 40}}, capacity.KV{Tokens: 200, MaxRunning: 100}, 3, 40 + 40 - 16, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := simulateBatch(tc.jobs, tc.cap, client{conc: tc.conc, budget: -1}, nil)
			var tokens int64
			for _, j := range tc.jobs {
				tokens += int64(j.answer)
			}
			if run.tokens != tokens {
				t.Errorf("generated %d tokens, want every answer: %d", run.tokens, tokens)
			}
			if run.steps != tc.steps || run.retractions != tc.retractions {
				t.Errorf("%d steps, %d retractions; want %d, %d", run.steps, run.retractions, tc.steps, tc.retractions)
			}
		})
	}
}

// Whatever the lengths, a run takes at least as many steps as its longest
// answer and as its tokens spread over the widest batch the cache holds.
func TestSimulateBatchBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		c := capacity.KV{Tokens: 2000 + rng.IntN(50000), MaxRunning: 1 + rng.IntN(300)}
		var jobs []job
		longest, tokens := 0, 0
		for range 1 + rng.IntN(400) {
			j := job{prompt: 1 + rng.IntN(500), answer: 1 + rng.IntN(1500)}
			jobs = append(jobs, j)
			longest = max(longest, j.answer)
			tokens += j.answer
		}
		_, conc := sizes(jobs, c, 1500)
		run := simulateBatch(jobs, c, client{conc: conc, budget: -1}, nil)
		if run.tokens != int64(tokens) {
			t.Fatalf("trial %d: %d tokens generated, want %d", trial, run.tokens, tokens)
		}
		if run.steps < int64(longest) || run.steps < int64(tokens/c.MaxRunning) || run.steps > int64(tokens) {
			t.Fatalf("trial %d: %d steps for %d tokens, longest %d, %d running at most", trial, run.steps, tokens, longest, c.MaxRunning)
		}
	}
}

// Under generate --token-budget every request in flight reserves its
// prompt plus --max-tokens: a budget that holds two reservations runs two
// requests at a time, and the run ends when nothing is in flight and the
// next request's reservation does not fit.
func TestSimulateBatchBudgetReservations(t *testing.T) {
	jobs := []job{{10, 10}, {10, 10}, {10, 10}, {10, 10}, {10, 10}}
	c := capacity.KV{Tokens: 1000, MaxRunning: 100}
	free := simulateBatch(jobs, c, client{conc: 5, budget: -1}, nil)
	if free.steps != 10 {
		t.Errorf("without a budget: %d steps, want 10", free.steps)
	}
	// Reservations of 10+90: two fit in 220. Once their answers are done
	// (40 spent) only one more fits (40+100, not 40+200), and so on: the
	// run goes two, then one at a time.
	tight := simulateBatch(jobs, c, client{conc: 5, budget: 220, reserve: 90}, nil)
	if tight.steps != 40 || tight.tokens != 50 {
		t.Errorf("with reservations: %d steps, %d tokens; want 40 steps, every answer", tight.steps, tight.tokens)
	}
	// A budget of 110 holds one reservation; after its answer (20 spent)
	// the next reservation does not fit and nothing is in flight: the
	// budget is reached, though five answers of 20 tokens would fit.
	stopped := simulateBatch(jobs, c, client{conc: 5, budget: 110, reserve: 90}, nil)
	if stopped.tokens != 10 {
		t.Errorf("%d tokens generated, want the one answer whose reservation fit", stopped.tokens)
	}
}

func TestClientConcurrency(t *testing.T) {
	jobs := []job{{100, 100}, {100, 300}}
	// Held per request: 100 prompt + E[L^2]/2E[L] = (1e4+9e4)/(2*400) = 125.
	if _, got := sizes(jobs, capacity.KV{Tokens: 22000}, 4096); got != 108 {
		t.Errorf("concurrency %d, want 22,000/225 = 97.8 plus 10%%, rounded up", got)
	}
	if _, got := sizes(jobs, capacity.KV{Tokens: 22000, MaxRunning: 45}, 4096); got != 50 {
		t.Errorf("concurrency %d, want max_running 45 plus 10%%, rounded up", got)
	}
}

func TestMakespan(t *testing.T) {
	jobs := []job{{10, 100}, {10, 100}, {10, 100}, {10, 100}}
	// Two at a time, 1 s of overhead and 100 tokens at 100 tok/s each: two
	// waves of 2 s.
	if got := makespan(jobs, client{conc: 2, budget: -1}, 1, 100); got != 4 {
		t.Errorf("fixed concurrency: %g s, want 4", got)
	}
	// generate's adaptive window starts at 16: all four at once.
	if got := makespan(jobs, client{budget: -1}, 1, 100); got != 2 {
		t.Errorf("adaptive concurrency: %g s, want 2", got)
	}
	// Reservations of 10+190 in a budget of 550: two at first; when the
	// first answer is in (110 spent) a third; the fourth only when nothing
	// but answers is left to count (330 + 200 fits, 220 + 200 + 200 not).
	if got := makespan(jobs, client{budget: 550, reserve: 190}, 1, 100); got != 6 {
		t.Errorf("under a budget: %g s, want 6", got)
	}
	// In 450 the fourth never fits (330 + 200): the budget is reached
	// after three.
	if got := makespan(jobs, client{budget: 450, reserve: 190}, 1, 100); got != 4 {
		t.Errorf("budget reached: %g s, want 4", got)
	}
}

// A done run's latencies made by a server whose step takes 2 ms plus 10 us
// per running request give those two figures back.
func TestFitStepTiming(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	c := capacity.KV{Tokens: 159277, MaxRunning: 1024}
	truth := stepTiming{fixed: 0.002, perRequest: 10e-6}
	var jobs []job
	for range 400 {
		jobs = append(jobs, job{prompt: 100 + rng.IntN(200), answer: 50 + rng.IntN(1000)})
	}
	lives := make([]life, len(jobs))
	warmup, conc := sizes(jobs, c, 1500)
	simulateBatch(jobs, c, client{conc: conc, budget: -1, step: truth, warmupConc: warmup}, lives)
	run := timedRun{maxTokens: 1500}
	for i, j := range jobs {
		latency := 0.05 + truth.fixed*float64(lives[i].steps) + truth.perRequest*float64(lives[i].tokens)
		run.jobs = append(run.jobs, timedJob{j, latency})
	}
	got, ok := fitStepTiming([]timedRun{run}, c, -1)
	if !ok || !near(got.fixed, truth.fixed, 0.05) || !near(got.perRequest, truth.perRequest, 0.05) {
		t.Errorf("fitted %+v (ok %v), want %+v", got, ok, truth)
	}
	// Too few answers to fit.
	if _, ok := fitStepTiming([]timedRun{{jobs: run.jobs[:5]}}, c, -1); ok {
		t.Error("fitted a step time from 5 answers")
	}
}

// TestConversationTurnsInOrder: a conversation's later turns are sent only
// once the turn before is answered, in the slot the conversation holds, by
// the API model and the server model alike.
func TestConversationTurnsInOrder(t *testing.T) {
	// A conversation of three turns, then a record of one answer.
	jobs := []job{{10, 100}, {160, 100}, {310, 100}, {10, 100}}
	follows := []bool{false, true, true, false}
	// Two slots, 1 s of overhead and 100 tokens at 100 tok/s: the
	// conversation takes three 2 s turns one after another, the record one
	// 2 s turn beside it.
	if got := makespan(jobs, client{conc: 2, budget: -1, follows: follows}, 1, 100); got != 6 {
		t.Errorf("API: %g s, want 6 (three turns in turn)", got)
	}
	if got := makespan(jobs, client{conc: 2, budget: -1}, 1, 100); got != 4 {
		t.Errorf("API, independent requests: %g s, want 4", got)
	}
	// The server runs the record beside the first turn; the later turns
	// come one after another: 3 x 100 decode steps.
	run := simulateBatch(jobs, capacity.KV{Tokens: 10000, MaxRunning: 100}, client{conc: 2, budget: -1, follows: follows}, nil)
	if run.steps != 300 || run.tokens != 400 {
		t.Errorf("server: %d steps, %d tokens; want 300 and 400", run.steps, run.tokens)
	}
}
