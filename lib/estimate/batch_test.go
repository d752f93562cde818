package estimate

import (
	"math/rand/v2"
	"testing"
)

func TestSimulateBatch(t *testing.T) {
	for _, tc := range []struct {
		name        string
		jobs        []job
		cap         capacity
		conc        int
		steps       int64
		retractions int64
	}{
		// Room for all: the run lasts as long as the longest answer.
		{"room for all", []job{{10, 10}, {10, 20}, {10, 30}, {10, 40}}, capacity{1000, 100}, 4, 40, 0},
		// One request at a time: the answers add up.
		{"one at a time", []job{{10, 10}, {10, 20}, {10, 30}}, capacity{1000, 1}, 3, 60, 0},
		{"client sends one", []job{{10, 10}, {10, 20}, {10, 30}}, capacity{1000, 100}, 1, 60, 0},
		// Two requests of 80+20 fit in 200 tokens; the third's prompt
		// does not fit beside them, so it waits for both.
		{"KV bound", []job{{80, 20}, {80, 20}, {80, 20}}, capacity{200, 100}, 3, 40, 0},
		// Three prompts of 50 fit (150 + 3 < 200), but their answers
		// outgrow the cache: the newest is retracted and redone later.
		{"retraction", []job{{50, 40}, {50, 40}, {50, 40}}, capacity{200, 100}, 3, 40 + 40 - 16, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := simulateBatch(tc.jobs, tc.cap, tc.conc, nil)
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
		c := capacity{kvTokens: 2000 + rng.IntN(50000), maxRunning: 1 + rng.IntN(300)}
		var jobs []job
		longest, tokens := 0, 0
		for range 1 + rng.IntN(400) {
			j := job{prompt: 1 + rng.IntN(500), answer: 1 + rng.IntN(1500)}
			jobs = append(jobs, j)
			longest = max(longest, j.answer)
			tokens += j.answer
		}
		run := simulateBatch(jobs, c, clientConcurrency(jobs, c), nil)
		if run.tokens != int64(tokens) {
			t.Fatalf("trial %d: %d tokens generated, want %d", trial, run.tokens, tokens)
		}
		if run.steps < int64(longest) || run.steps < int64(tokens/c.maxRunning) || run.steps > int64(tokens) {
			t.Fatalf("trial %d: %d steps for %d tokens, longest %d, %d running at most", trial, run.steps, tokens, longest, c.maxRunning)
		}
	}
}

func TestClientConcurrency(t *testing.T) {
	jobs := []job{{100, 100}, {100, 300}}
	// Held per request: 100 prompt + E[L^2]/2E[L] = (1e4+9e4)/(2*400) = 125.
	if got := clientConcurrency(jobs, capacity{kvTokens: 22000}); got != 108 {
		t.Errorf("concurrency %d, want 22,000/225 = 97.8 plus 10%%, rounded up", got)
	}
	if got := clientConcurrency(jobs, capacity{kvTokens: 22000, maxRunning: 45}); got != 50 {
		t.Errorf("concurrency %d, want max_running 45 plus 10%%, rounded up", got)
	}
}
