package engine

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/runpool"
)

// workers run the requests, one goroutine each: a worker attempts its
// request until it succeeds, fails for good or the run is cancelled, and
// hands the outcome to the collector. A worker owns its job; what workers
// share is fixed when the run is built, apart from wg.
type workers struct {
	cfg       *Config // --retries, the first retry delay (options), --timeout
	be        backend.Backend
	pool      *pool
	retok     *retokenizer // nil without --tokenizer
	usage     *usageCheck
	stops     *Stops
	flight    *flight
	collector *collector
	budget    *budget     // what failed attempts were charged is spent
	turns     *turnRunner // nil unless --turns all
	wg        sync.WaitGroup
	// retries counts the attempts after a record's first, rateLimited the
	// attempts answered 429, for the progress line.
	retries, rateLimited atomic.Int64
}

// maxMoves bounds how often one request moves to another server after a
// refused connection without using a retry: enough to get past every
// server of a run going away, not a loop.
const maxMoves = 32

// start runs j, which holds a server slot, in a worker of its own, on a
// goroutine of runpool's: preparing and sending a request grows a new
// goroutine's stack twice.
func (w *workers) start(j *job) {
	w.wg.Add(1)
	runpool.Go(func() { w.work(j) })
}

// wait returns when every worker has handed in its outcome.
func (w *workers) wait() { w.wg.Wait() }

func (w *workers) work(j *job) {
	o := &outcome{job: j}
	if w.turns != nil {
		w.turns.walk(w, j, o)
		w.finish(j, o)
		return
	}
	w.send(&sending{j: j, o: o, holding: true, done: func() { w.finish(j, o) }})
}

// finish hands in j's outcome o.
func (w *workers) finish(j *job, o *outcome) {
	w.flight.end(j)
	w.collector.submit(o)
	w.wg.Done()
}

// sending is a record's request from one attempt to the next. No
// goroutine waits for an attempt's answer in the worker's frames: the
// attempt is sent, and what follows (settling it, the next attempt) runs on
// the goroutine on which backend.Call.OnAnswer reports the answer, so that
// a request in flight holds that goroutine's small stack, not a worker's.
type sending struct {
	j *job
	o *outcome
	// holding: j holds a server slot already for its first attempt;
	// otherwise it waits for one first.
	holding bool
	attempt int
	// refused is the server a connection to was just refused: the
	// request never reached it, so it moves to another server without a
	// back-off and without using one of its retries (up to maxMoves
	// times).
	refused *server
	moves   int
	last    *backend.Error // the attempt before, which failed
	done    func()         // called once j's attempts have ended
}

// send attempts j's request until it succeeds (o.res), fails for good
// (o.err) or is cancelled, then calls s.done.
func (w *workers) send(s *sending) {
	if !w.next(s) {
		s.done()
		return
	}
	call := w.be.Start(w.stops.run, s.j.server.base, &s.j.req)
	call.OnAnswer(func() {
		if w.settle(s, call) {
			w.send(s)
		} else {
			s.done()
		}
	})
}

// sendWait is send for a caller that goes on once j's attempts have
// ended: a conversation's next turn.
func (w *workers) sendWait(j *job, o *outcome, holding bool) {
	ended := make(chan struct{})
	w.send(&sending{j: j, o: o, holding: holding, done: func() { close(ended) }})
	<-ended
}

// next readies s's next attempt: a server slot when it needs one; false
// when the attempts have ended.
func (w *workers) next(s *sending) bool {
	j, o := s.j, s.o
	s.attempt++
	if s.attempt > 1 || s.refused != nil || !s.holding {
		retry := s.attempt > 1 && s.refused == nil // a move is not a retry
		if !w.takeServer(j, o, s.refused) {
			return false
		}
		// The wait for a server may have let other attempts reach the
		// cost budget: a retry charged too would pass it.
		if retry && w.costReached(o, s.last) {
			w.pool.release(j.server, j.kvTokens, attemptCancelled, 0, "")
			return false
		}
		if retry {
			w.retries.Add(1)
		}
	}
	j.req.Attempt, o.attempts = s.attempt, s.attempt
	j.req.Timeout = w.cfg.Timeout
	return true
}

// settle takes the answer of s's attempt call; true when another attempt
// follows.
func (w *workers) settle(s *sending, call *backend.Call) bool {
	j, o := s.j, s.o
	res, err := w.result(call)
	if err == nil {
		w.answered(j, o, res)
		return false
	}
	s.last = err
	moved, done := w.failed(j, o, err, s.moves < maxMoves)
	if moved {
		// Not this record's failure, nor an attempt: a server went
		// away, and another may be up. When none is, the pool gives
		// up on them all (errNoServer) and a later run does it.
		s.moves++
		s.attempt--
		s.refused = j.server
		return true
	}
	s.refused = nil
	return !done && w.again(o, err, s.attempt)
}

// takeServer waits for a server for j, other than refused; false when
// none comes (o is then cancelled).
func (w *workers) takeServer(j *job, o *outcome, refused *server) bool {
	// A signal ends the wait for a server as it ends a back-off.
	srv, err := w.pool.acquire(w.stops.retries, j.kvTokens, refused)
	if errors.Is(err, errNoServer) {
		// Not this record's failure: a later run does it.
		w.stops.stop("no server reachable", w.pool.unreachable(), true)
	}
	if err != nil {
		o.cancelled = true
		return false
	}
	j.server = srv
	return true
}

// answered settles j's successful attempt res: the server's slot, the
// output ids and the usage it reported.
func (w *workers) answered(j *job, o *outcome, res *backend.Result) {
	if k, ok := j.server.limiter.(*capacity.KVSizer); ok {
		k.Answered(res.Latency, res.CompletionTokens) // for the probes' rule
	}
	w.pool.release(j.server, j.kvTokens, attemptOK, 0, "")
	serverIDs := res.OutputIDs != nil
	if w.retok != nil && !serverIDs {
		res.OutputIDs = w.retok.outputIDs(j, res)
	}
	w.usage.check(j, res, serverIDs, j.server.url)
	o.res = res
}

// failed settles j's failed attempt e: its charge and its server's slot.
// moved: the server could not be reached and the request moves to another
// (canMove: it may still); done: o has ended (cancelled or failed for good).
func (w *workers) failed(j *job, o *outcome, e *backend.Error, canMove bool) (moved, done bool) {
	w.charge(o, e)
	if w.stops.run.Err() != nil {
		w.pool.release(j.server, j.kvTokens, attemptCancelled, 0, "")
		o.cancelled = true
		return false, true
	}
	if e.Kind == backend.KindRate {
		w.rateLimited.Add(1)
	}
	kind := poolOutcome(e)
	if e.Fatal {
		// Stopped before the slot is free, so that no other request
		// takes it to the same refusal.
		w.stops.stop("stopped: "+e.Message, fatalError(j.server.url, e), true)
	}
	w.pool.release(j.server, j.kvTokens, kind, min(e.RetryAfter, w.cfg.MaxRetryWait), shortCause(e))
	if kind == attemptUnreachable && canMove {
		return true, false
	}
	if e.Fatal {
		o.err = e
		return false, true
	}
	return false, false
}

// again decides whether the request that failed with e at attempt is
// tried again, and waits its back-off; false when o has ended.
func (w *workers) again(o *outcome, e *backend.Error, attempt int) bool {
	if !e.Retryable || attempt > w.cfg.Retries {
		o.err = e
		o.exhausted = e.Retryable
		return false
	}
	if w.costReached(o, e) {
		return false
	}
	if !w.sleep(backoffDelay(attempt, w.cfg.Backoff, min(e.RetryAfter, w.cfg.MaxRetryWait), w.cfg.MaxRetryWait)) {
		o.cancelled = true
		return false
	}
	return !w.costReached(o, e) // while it waited
}

// charge counts what a failed attempt was charged, when the server said
// (an error chunk or body with usage.cost): it is spent against the cost
// budget, and written with the record's error. An amount that is not one
// (negative, not finite) is not counted.
func (w *workers) charge(o *outcome, e *backend.Error) {
	if e.Cost == nil || math.IsNaN(*e.Cost) || math.IsInf(*e.Cost, 0) || *e.Cost <= 0 {
		return
	}
	o.chargedUSD += *e.Cost
	if w.budget.chargeFailed(*e.Cost) {
		w.stops.stop(w.budget.stopReason(), nil, false)
	}
}

// costReached ends the retries of a failed record once the spending has
// reached --cost-budget: another attempt may be charged too. The record
// fails with e, paid for, and a later run does it.
func (w *workers) costReached(o *outcome, e *backend.Error) bool {
	if !w.budget.costReached() {
		return false
	}
	e.Message += fmt.Sprintf(" (not retried: --%s reached)", FlagCostBudget)
	o.err = e
	return true
}

// result is the answer of an attempt, or its failure.
func (w *workers) result(call *backend.Call) (*backend.Result, *backend.Error) {
	res, err := call.Result()
	if err == nil {
		return res, nil
	}
	e := classify(err, w.stops.run)
	switch {
	case errors.Is(e, backend.ErrRequestTimeout):
		// The flag, not the backend's words.
		e.Message = fmt.Sprintf("no complete answer within --%s %v", FlagTimeout, w.cfg.Timeout)
	case errors.Is(e, backend.ErrIdleTimeout):
		e.Message = fmt.Sprintf("the server sent nothing for --%s %v", FlagIdleTimeout, w.cfg.Idle)
	case errors.Is(e, backend.ErrAnswerMemory):
		e.Message += fmt.Sprintf(" (--%s)", FlagMaxAnswerMemory)
	}
	return nil, e
}

// sleep waits d before a retry unless retrying ends first (a signal, the
// run's cancellation).
func (w *workers) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.stops.retries.Done():
		return false
	}
}

// giveUpAfter is how long requests wait while every server is down: as long
// as the retries of one request would have waited, plus one sideline for a
// probe to go through.
func giveUpAfter(cfg *Config) time.Duration {
	d := firstSideline
	for a := 1; a <= cfg.Retries; a++ {
		d += min(cfg.Backoff<<min(a-1, 16), maxBackoff, cfg.MaxRetryWait)
	}
	return d
}

// fatalError is the run's error for a refusal that no retry can fix.
func fatalError(url string, e *backend.Error) error {
	hint := ""
	switch e.Kind {
	case backend.KindAuth:
		hint = " (check the API key: $OPENROUTER_API_KEY, $OPENAI_API_KEY or --api-key-file)"
	case backend.KindCredits:
		hint = " (add credits, then re-run: finished records are kept)"
	}
	return exitcode.NoPermf("%s: HTTP %d: %s%s", url, e.Status, e.Message, hint)
}
