package estimate

import (
	"math"

	"github.com/synthpipe/synthpipe/lib/capacity"
)

// job is one request of a simulated run: its prompt and answer in tokens.
type job struct{ prompt, answer int }

// batchRun is the outcome of a simulated run on one server, in decode steps:
// a step gives one token to every running request, whatever their number,
// so the steps, not the requests, are the clock.
type batchRun struct {
	steps       int64
	tokens      int64 // generated
	fullSteps   int64 // steps with a request left waiting: the batch was as full as the server allows
	fullTokens  int64 // tokens generated in those steps
	retractions int64
	concurrency int // the requests in flight the client keeps
}

// fullBatch is the mean batch while the server was saturated: the batch at
// which a measured throughput (tokens per second) was most likely taken.
func (r batchRun) fullBatch() float64 {
	if r.fullSteps > 0 {
		return float64(r.fullTokens) / float64(r.fullSteps)
	}
	if r.steps > 0 {
		return float64(r.tokens) / float64(r.steps)
	}
	return 1
}

// sizes is how many requests generate --concurrency auto keeps in flight
// against a server of capacity kv for jobs, under --max-tokens maxTokens:
// first before any answer is known, settled once they all are. It is
// capacity.KV.RunSizes, the steps generate's dispatcher takes.
func sizes(jobs []job, kv capacity.KV, maxTokens int) (first, settled int) {
	prompts, answers := make([]int, len(jobs)), make([]int, len(jobs))
	for i, j := range jobs {
		prompts[i], answers[i] = j.prompt, j.answer
	}
	f, s := kv.RunSizes(prompts, answers, maxTokens)
	return f.N, s.N
}

// client is how generate feeds a server: conc requests in flight at most
// and, under --token-budget, a reservation of prompt plus --max-tokens for
// each: a request starts only if the answers done plus the reservations in
// flight plus its own fit in the budget, and when nothing is in flight and
// the next still does not fit, the run ends. A budget small beside
// --max-tokens throttles the run, most of all at its end.
type client struct {
	conc    int
	budget  int64 // tokens left for this run; <0: no --token-budget
	reserve int   // --max-tokens; 0: no reservation modelled
	// warmup is generate's first second: it sizes its requests in flight
	// before any answer is known, from --max-tokens (answers assumed
	// uniform up to it), and only re-sizes once a second. warmupConc 0:
	// not modelled; step turns steps into the seconds it lasts.
	warmupConc int
	step       stepTiming
	// follows[i] (nil: none) says jobs[i] is the next turn of the
	// conversation of jobs[i-1]: it is sent as soon as that one is
	// answered, in the request slot the conversation holds, never before.
	follows []bool
}

// followsAt reports whether jobs[i] is a later turn of a conversation.
func (cl client) followsAt(i int) bool { return i < len(cl.follows) && cl.follows[i] }

// tuneInterval is how often generate re-sizes its requests in flight.
const tuneInterval = 1.0

// orDefaultMaxTokens is n, or generate's default when n is 0.
func orDefaultMaxTokens(n int) int {
	if n > 0 {
		return n
	}
	return capacity.DefaultMaxTokens
}

func (cl client) reserving() bool { return cl.budget >= 0 && cl.reserve > 0 }

// simRequest is a job inside the simulated server.
type simRequest struct {
	job
	index     int
	generated int
	held      int // KV tokens held while running
	// The run's step and token counts when it arrived.
	arrivedSteps, arrivedTokens int64
}

// life is what one request lived through on the server, from its arrival
// to its answer: decode steps, and the tokens the whole batch generated in
// them. Its latency is about steps times the fixed part of a step plus
// tokens times the part that grows with the batch.
type life struct{ steps, tokens int64 }

// simulateBatch runs jobs through a model of SGLang's scheduler as llm-sim
// imitates it: the client keeps conc requests in flight; the server admits
// waiting requests first come, first served while their prompt (and what
// they generated before a retraction) fits in the free KV cache and fewer
// than maxRunning run; when the running requests would outgrow the cache,
// the newest is pushed back to the queue to be recomputed later, and
// nothing new is admitted until a request finishes. Between two events
// (a request finishing, the cache filling up) nothing changes but the
// token counts, so the model jumps from event to event: its cost grows
// with the number of requests, not of tokens. When lives is not nil, it
// receives each job's life (lives[i] for jobs[i]).
func simulateBatch(jobs []job, c capacity.KV, cl client, lives []life) batchRun {
	conc := cl.conc
	if cl.warmupConc > 0 && cl.step.known() {
		conc = cl.warmupConc
	}
	now := 0.0 // seconds, when cl.step is known
	run := batchRun{concurrency: cl.conc}
	var spent, reserved int64 // under a budget: answers done, reservations in flight
	kv := c.Tokens
	maxRunning := c.MaxRunning
	if maxRunning <= 0 {
		maxRunning = math.MaxInt
	}
	var waiting, running []*simRequest
	next, inSystem, used := 0, 0, 0
	hold := false
	for {
		for inSystem < conc && next < len(jobs) {
			if cl.followsAt(next) {
				next++ // sent when the turn before it is answered
				continue
			}
			j := jobs[next]
			if cl.reserving() {
				own := int64(j.prompt + cl.reserve)
				if spent+reserved+own > cl.budget {
					if inSystem == 0 {
						next = len(jobs) // the budget is reached
					}
					break
				}
				reserved += own
			}
			next++
			// A request that cannot fit even alone is refused by the
			// server (prompt plus answer past the cache): not simulated.
			if j.prompt+1 > kv {
				continue
			}
			j.answer = min(max(j.answer, 1), kv-j.prompt)
			waiting = append(waiting, &simRequest{job: j, index: next - 1, arrivedSteps: run.steps, arrivedTokens: run.tokens})
			inSystem++
		}
		for len(waiting) > 0 && len(running) < maxRunning && !hold {
			r := waiting[0]
			need := r.prompt + r.generated
			if need+1 > kv-used {
				break
			}
			waiting = waiting[1:]
			r.held = need
			used += need
			running = append(running, r)
		}
		for used+len(running) > kv && len(running) > 1 {
			r := running[len(running)-1]
			running = running[:len(running)-1]
			used -= r.held
			r.held = 0
			waiting = append([]*simRequest{r}, waiting...)
			hold = true
			run.retractions++
		}
		if len(running) == 0 {
			if len(waiting) == 0 && next >= len(jobs) {
				return run
			}
			// Only a request too large for the cache could be left
			// waiting with nothing running; it was refused above.
			return run
		}
		b := len(running)
		k := (kv - used) / b
		for _, r := range running {
			k = min(k, r.answer-r.generated)
		}
		k = max(k, 1)
		full := len(waiting) > 0
		for _, r := range running {
			r.generated += k
			r.held += k
		}
		used += b * k
		now += float64(k)*cl.step.fixed + float64(b*k)*cl.step.perRequest
		if now >= tuneInterval {
			conc = cl.conc
		}
		run.steps += int64(k)
		run.tokens += int64(b * k)
		if full {
			run.fullSteps += int64(k)
			run.fullTokens += int64(b * k)
		}
		kept := running[:0]
		for _, r := range running {
			if r.generated >= r.answer {
				if lives != nil {
					lives[r.index] = life{run.steps - r.arrivedSteps, run.tokens - r.arrivedTokens}
				}
				used -= r.held
				inSystem--
				if cl.reserving() {
					spent += int64(r.prompt + r.answer)
					reserved -= int64(r.prompt + cl.reserve)
				}
				hold = false
				if i := r.index + 1; cl.followsAt(i) && jobs[i].prompt+1 <= kv {
					// The conversation's next turn, in its slot (generate
					// booked it when the conversation started).
					j := jobs[i]
					j.answer = min(max(j.answer, 1), kv-j.prompt)
					waiting = append(waiting, &simRequest{job: j, index: i, arrivedSteps: run.steps, arrivedTokens: run.tokens})
					inSystem++
					if cl.reserving() {
						reserved += int64(j.prompt + cl.reserve)
					}
				}
				continue
			}
			kept = append(kept, r)
		}
		clear(running[len(kept):])
		running = kept
	}
}

// Concurrency is what the estimate takes generate --concurrency auto to
// keep in flight against a server of capacity kv for requests of these
// prompt and answer lengths (in pairs): warmup before any answer is known
// (maxTokens its limit), settled once they all are. It is the path the
// estimate's simulations take (sizes); generate's tests hold it to what
// generate's dispatcher does.
func Concurrency(kv capacity.KV, prompts, answers []int, maxTokens int) (warmup, settled int) {
	jobs := make([]job, len(prompts))
	for i := range prompts {
		jobs[i] = job{prompt: prompts[i], answer: answers[i]}
	}
	return sizes(jobs, kv, maxTokens)
}
