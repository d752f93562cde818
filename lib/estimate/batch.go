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
	s := newBatchSim(jobs, c, cl, lives)
	for {
		s.send()
		s.admit()
		s.retract()
		if len(s.running) == 0 {
			// All done; or only a request too large for the cache could be
			// left waiting with nothing running, and it was refused when
			// sent.
			return s.run
		}
		s.decode()
		s.finish()
	}
}

// batchSim is simulateBatch's run in progress: the client's side (what it
// has sent, what it has left under the budget) and the server's (its
// queue, its running batch, the KV cache they use).
type batchSim struct {
	jobs       []job
	cl         client
	lives      []life
	kv         int // the cache, in tokens
	maxRunning int
	conc       int     // the requests in flight the client keeps now
	now        float64 // seconds, when cl.step is known
	run        batchRun
	// Under a budget: answers done, reservations in flight.
	spent, reserved  int64
	waiting, running []*simRequest
	next             int // the next job to send
	inSystem         int // sent and not answered
	used             int // KV tokens the running requests hold
	// hold: a request was retracted; nothing new is admitted until one
	// finishes.
	hold bool
}

func newBatchSim(jobs []job, c capacity.KV, cl client, lives []life) *batchSim {
	s := &batchSim{jobs: jobs, cl: cl, lives: lives, kv: c.Tokens, maxRunning: c.MaxRunning, conc: cl.conc, run: batchRun{concurrency: cl.conc}}
	if cl.warmupConc > 0 && cl.step.known() {
		s.conc = cl.warmupConc
	}
	if s.maxRunning <= 0 {
		s.maxRunning = math.MaxInt
	}
	return s
}

// send is the client sending jobs in order while it has fewer than conc
// in flight and, under a budget, their reservations fit.
func (s *batchSim) send() {
	for s.inSystem < s.conc && s.next < len(s.jobs) {
		if s.cl.followsAt(s.next) {
			s.next++ // sent when the turn before it is answered
			continue
		}
		j := s.jobs[s.next]
		if s.cl.reserving() {
			own := int64(j.prompt + s.cl.reserve)
			if s.spent+s.reserved+own > s.cl.budget {
				if s.inSystem == 0 {
					s.next = len(s.jobs) // the budget is reached
				}
				return
			}
			s.reserved += own
		}
		s.next++
		// A request that cannot fit even alone is refused by the
		// server (prompt plus answer past the cache): not simulated.
		if j.prompt+1 > s.kv {
			continue
		}
		s.enqueue(j, s.next-1)
	}
}

// enqueue puts jobs[i] (j) in the server's queue, its answer cut to what
// the cache leaves of it.
func (s *batchSim) enqueue(j job, i int) {
	j.answer = min(max(j.answer, 1), s.kv-j.prompt)
	s.waiting = append(s.waiting, &simRequest{job: j, index: i, arrivedSteps: s.run.steps, arrivedTokens: s.run.tokens})
	s.inSystem++
}

// admit moves waiting requests to the running batch, first come first
// served, while their prompt (and what they generated before a
// retraction) fits in the free cache and fewer than maxRunning run.
func (s *batchSim) admit() {
	for len(s.waiting) > 0 && len(s.running) < s.maxRunning && !s.hold {
		r := s.waiting[0]
		need := r.prompt + r.generated
		if need+1 > s.kv-s.used {
			return
		}
		s.waiting = s.waiting[1:]
		r.held = need
		s.used += need
		s.running = append(s.running, r)
	}
}

// retract pushes the newest running requests back to the head of the
// queue while the batch's next tokens would outgrow the cache.
func (s *batchSim) retract() {
	for s.used+len(s.running) > s.kv && len(s.running) > 1 {
		r := s.running[len(s.running)-1]
		s.running = s.running[:len(s.running)-1]
		s.used -= r.held
		r.held = 0
		s.waiting = append([]*simRequest{r}, s.waiting...)
		s.hold = true
		s.run.retractions++
	}
}

// decode runs the batch to its next event, a request finishing or the
// cache filling up: k steps, each giving every running request a token.
func (s *batchSim) decode() {
	b := len(s.running)
	k := (s.kv - s.used) / b
	for _, r := range s.running {
		k = min(k, r.answer-r.generated)
	}
	k = max(k, 1)
	full := len(s.waiting) > 0
	for _, r := range s.running {
		r.generated += k
		r.held += k
	}
	s.used += b * k
	s.now += float64(k)*s.cl.step.fixed + float64(b*k)*s.cl.step.perRequest
	if s.now >= tuneInterval {
		s.conc = s.cl.conc
	}
	s.run.steps += int64(k)
	s.run.tokens += int64(b * k)
	if full {
		s.run.fullSteps += int64(k)
		s.run.fullTokens += int64(b * k)
	}
}

// finish takes the requests whose answer is complete out of the batch.
func (s *batchSim) finish() {
	kept := s.running[:0]
	for _, r := range s.running {
		if r.generated >= r.answer {
			s.answered(r)
			continue
		}
		kept = append(kept, r)
	}
	clear(s.running[len(kept):])
	s.running = kept
}

// answered frees what r held, records its life, and sends its
// conversation's next turn.
func (s *batchSim) answered(r *simRequest) {
	if s.lives != nil {
		s.lives[r.index] = life{s.run.steps - r.arrivedSteps, s.run.tokens - r.arrivedTokens}
	}
	s.used -= r.held
	s.inSystem--
	if s.cl.reserving() {
		s.spent += int64(r.prompt + r.answer)
		s.reserved -= int64(r.prompt + s.cl.reserve)
	}
	s.hold = false
	if i := r.index + 1; s.cl.followsAt(i) && s.jobs[i].prompt+1 <= s.kv {
		// The conversation's next turn, in its slot (generate booked it
		// when the conversation started).
		s.enqueue(s.jobs[i], i)
		if s.cl.reserving() {
			s.reserved += int64(s.jobs[i].prompt + s.cl.reserve)
		}
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
