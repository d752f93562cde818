package sim

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// errDuplicateRID is returned when a request reuses the rid of one still in
// flight; SGLang rejects that with HTTP 400.
var errDuplicateRID = errors.New("duplicate request id")

// errClosed is returned once the server is shutting down.
var errClosed = errors.New("server is shutting down")

type reqState uint8

const (
	stateWaiting reqState = iota
	stateRunning
	stateFinished
)

// request is one generation inside the engine. Handlers create it, the engine
// moves it between the waiting queue and the running batch, and the handler
// reads its progress and result.
type request struct {
	rid          string
	promptTokens int
	// promptIDs are the prompt's token ids (pseudo ids for chat prompts),
	// what the prefix cache matches; nil keeps the request out of it.
	promptIDs []int
	// cacheAnswer: the answer's ids follow the prompt's in the model's
	// sequence, so they are cached with it (not for pseudo ids).
	cacheAnswer bool
	plan        plan
	stream      bool
	internal    bool // health checks: not counted in Stats
	arrived     time.Time

	// eng is the rank's engine that took r; set by submit.
	eng *engine

	// Owned by the engine, guarded by engine.mu.
	state     reqState
	generated int
	heldKV    int

	// cached is how many prompt tokens the prefix cache held when the
	// request was first admitted (SGLang's cached_tokens); admitted tells
	// that it was. cached is read by handlers.
	cached   atomic.Int64
	admitted bool

	// retractions counts how often the engine pushed r back to the queue;
	// handlers read it for num_retractions in stream chunks.
	retractions atomic.Int64
	// progress publishes generated to handlers without taking engine.mu.
	progress atomic.Int64
	// notify wakes a streaming handler after a step made progress; it has
	// capacity 1 so the engine never blocks on a slow reader.
	notify chan struct{}
	// done is closed when the request finished; result is set before.
	done   chan struct{}
	result result
}

// result is what a finished request reports.
type result struct {
	outputLen   int
	finish      finishReason
	retractions int64
	finishedAt  time.Time
}

// engine imitates SGLang's scheduler: continuous batching under a KV-token
// budget with FIFO admission and retraction of the newest request when the
// cache runs out during decode.
type engine struct {
	cfg *Config

	mu       sync.Mutex
	waiting  []*request // FIFO; the front is waiting[0]
	running  []*request // in admission order; the newest is last
	inflight map[string]*request
	usedKV   int
	// holdAdmission is set by a retraction and cleared when a request
	// leaves the batch. It is a crude stand-in for SGLang raising its
	// new-token ratio after a retraction: without it the retracted request
	// would be re-admitted at once and retracted again every step.
	holdAdmission bool
	closed        bool
	stats         Stats
	tput          throughput
	// cache is the prefix cache, nil when Config.PrefixCacheTokens is 0;
	// hitRate is the share of the prompt tokens of the latest admission
	// batch it held, SGLang's cache_hit_rate gauge.
	cache   *prefixCache
	hitRate float64

	wake chan struct{}
	stop chan struct{}
	wg   sync.WaitGroup
}

func newEngine(cfg *Config) *engine {
	e := stoppedEngine(cfg)
	e.start()
	return e
}

// stoppedEngine is an engine whose loop has not started: requests submitted
// to it wait until start, so a test can fill the queue before the first step.
func stoppedEngine(cfg *Config) *engine {
	e := &engine{
		cfg:      cfg,
		inflight: make(map[string]*request),
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
	}
	if cfg.PrefixCacheTokens > 0 {
		e.cache = newPrefixCache(cfg.PrefixCacheTokens)
	}
	return e
}

func (e *engine) start() {
	e.wg.Add(1)
	go e.loop()
}

func newRequest(rid string, promptTokens int, pl plan, stream bool) *request {
	return &request{
		rid:          rid,
		promptTokens: promptTokens,
		plan:         pl,
		stream:       stream,
		arrived:      time.Now(),
		notify:       make(chan struct{}, 1),
		done:         make(chan struct{}),
	}
}

// submit queues r. It fails when r.rid is already in flight.
func (e *engine) submit(r *request) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return errClosed
	}
	if _, dup := e.inflight[r.rid]; dup {
		e.mu.Unlock()
		return errDuplicateRID
	}
	e.inflight[r.rid] = r
	r.eng = e
	r.state = stateWaiting
	e.waiting = append(e.waiting, r)
	if !r.internal {
		e.stats.Requests++
		e.stats.PromptTokens += int64(r.promptTokens)
	}
	e.stats.MaxQueued = max(e.stats.MaxQueued, len(e.waiting))
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return nil
}

// has reports whether a request with this rid is in flight.
func (e *engine) has(rid string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.inflight[rid]
	return ok
}

// abort ends r with an abort finish reason if it has not finished yet,
// freeing its KV cache. It reports whether r was still in flight.
func (e *engine) abort(r *request, message string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.abortLocked(r, message)
}

func (e *engine) abortLocked(r *request, message string) bool {
	switch r.state {
	case stateFinished:
		return false
	case stateWaiting:
		e.waiting = removeRequest(e.waiting, r)
	case stateRunning:
		e.running = removeRequest(e.running, r)
		e.usedKV -= r.heldKV
		r.heldKV = 0
		e.holdAdmission = false
	}
	if !r.internal {
		e.stats.Aborted++
	}
	e.finishLocked(r, finishReason{kind: finishAbort, message: message})
	return true
}

// abortRID aborts the in-flight request with this rid, or every request when
// all is set, as SGLang's /abort_request does. Unknown rids are ignored.
func (e *engine) abortRID(rid string, all bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if all {
		e.abortAllLocked(abortMessage)
		return
	}
	if r, ok := e.inflight[rid]; ok {
		e.abortLocked(r, abortMessage(r))
	}
}

// abortAllLocked empties the queue and the batch in one pass; aborting one
// by one would cost a slice search per request.
func (e *engine) abortAllLocked(message func(*request) string) {
	for _, list := range [][]*request{e.waiting, e.running} {
		for _, r := range list {
			msg := message(r)
			r.heldKV = 0
			if !r.internal {
				e.stats.Aborted++
			}
			e.finishLocked(r, finishReason{kind: finishAbort, message: msg})
		}
	}
	e.waiting, e.running = nil, nil
	e.usedKV = 0
	e.holdAdmission = false
}

func abortMessage(r *request) string {
	if r.state == stateWaiting {
		return "Abort in waiting queue"
	}
	return "Abort by AbortReq"
}

func removeRequest(list []*request, r *request) []*request {
	for i, x := range list {
		if x == r {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}

// finishLocked records the result and wakes the handler.
func (e *engine) finishLocked(r *request, f finishReason) {
	r.state = stateFinished
	delete(e.inflight, r.rid)
	r.progress.Store(int64(r.generated))
	r.result = result{outputLen: r.generated, finish: f, retractions: r.retractions.Load(), finishedAt: time.Now()}
	if !r.internal && f.kind != finishAbort {
		e.stats.Completed++
	}
	close(r.done)
}

// close aborts everything in flight and stops the scheduler.
func (e *engine) close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	e.abortAllLocked(func(*request) string { return "server is shutting down" })
	e.mu.Unlock()
	close(e.stop)
	e.wg.Wait()
}

// loop runs scheduler steps while there is work and sleeps for the step's
// simulated duration. With zero latency the steps run back to back.
func (e *engine) loop() {
	defer e.wg.Done()
	var deadline time.Time
	for {
		select {
		case <-e.stop:
			return
		default:
		}
		busy, batch, prefilled := e.step()
		if !busy {
			select {
			case <-e.wake:
			case <-e.stop:
				return
			}
			deadline = time.Time{}
			continue
		}
		d := e.cfg.StepTime + time.Duration(batch)*e.cfg.PerTokenTime + time.Duration(prefilled)*e.cfg.PrefillTimePerToken
		if d <= 0 {
			continue
		}
		// Steps are scheduled against an absolute deadline so that the
		// sleep granularity of the OS does not accumulate into drift.
		now := time.Now()
		if deadline.IsZero() || now.Sub(deadline) > 10*d {
			deadline = now
		}
		deadline = deadline.Add(d)
		if wait := time.Until(deadline); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-e.stop:
				t.Stop()
				return
			}
		}
	}
}

// admitLocked admits the waiting requests that fit, in order, and returns
// the prompt tokens they computed (not found in the prefix cache).
func (e *engine) admitLocked() (prefilled int) {
	capacity := e.cfg.MaxTotalTokens
	hit, computed := 0, 0
	for len(e.waiting) > 0 && len(e.running) < e.cfg.MaxRunningRequests && !e.holdAdmission {
		r := e.waiting[0]
		// A retracted request recomputes its prompt and what it had
		// generated, so it needs all of that plus room for one token.
		held := r.promptTokens + r.generated
		if held+1 > capacity-e.usedKV {
			break
		}
		e.waiting[0] = nil
		e.waiting = e.waiting[1:]
		r.state = stateRunning
		r.heldKV = held
		e.usedKV += held
		e.running = append(e.running, r)
		cached := e.admitCached(r)
		hit += cached
		computed += held - cached
	}
	e.stats.PrefilledTokens += int64(computed)
	if hit+computed > 0 && e.cache != nil {
		e.hitRate = float64(hit) / float64(hit+computed)
	}
	return computed
}

// retractLocked makes room for one more KV slot for every running request
// this step: it retracts the newest ones until everybody fits. The oldest
// always stays, and a single request always fits because New rejects
// prompt+max_new_tokens beyond the capacity.
func (e *engine) retractLocked() {
	for e.usedKV+len(e.running) > e.cfg.MaxTotalTokens && len(e.running) > 1 {
		r := e.running[len(e.running)-1]
		e.running = e.running[:len(e.running)-1]
		e.usedKV -= r.heldKV
		r.heldKV = 0
		r.state = stateWaiting
		r.retractions.Add(1)
		e.stats.Retractions++
		e.waiting = append([]*request{r}, e.waiting...)
		e.holdAdmission = true
	}
}

// step admits waiting requests, retracts under KV pressure and decodes one
// token for every running request. It reports whether anything ran, the
// decode batch size and the number of prompt tokens prefilled.
func (e *engine) step() (busy bool, batch, prefilled int) {
	e.mu.Lock()
	defer e.mu.Unlock()

	prefilled = e.admitLocked()
	e.retractLocked()

	if len(e.running) == 0 {
		e.tput.idle()
		return false, 0, prefilled
	}
	e.stats.Steps++
	e.stats.MaxRunning = max(e.stats.MaxRunning, len(e.running))
	e.stats.MaxQueued = max(e.stats.MaxQueued, len(e.waiting))
	e.stats.QueuedSteps += int64(len(e.waiting))
	e.stats.RunningSteps += int64(len(e.running))
	batch = len(e.running)
	e.tput.step(batch)

	for _, r := range e.running {
		if end, _ := r.plan.end(); r.generated < end {
			r.generated++
			r.heldKV++
			e.usedKV++
			if !r.internal {
				e.stats.TokensGenerated++
			}
		}
	}
	e.stats.MaxKVUsed = max(e.stats.MaxKVUsed, e.usedKV)

	kept := e.running[:0]
	for _, r := range e.running {
		if end, fin := r.plan.end(); r.generated >= end {
			if e.cache != nil && r.cacheAnswer && fin.kind != finishAbort {
				// The answer's KV stays too: a next turn that repeats
				// it finds it.
				e.cache.insert(append(slices.Clip(r.promptIDs), r.plan.ids(0, r.generated)...))
			}
			e.usedKV -= r.heldKV
			r.heldKV = 0
			if fin.kind == finishAbort && !r.internal {
				e.stats.Aborted++
			}
			e.finishLocked(r, fin)
			e.holdAdmission = false
			continue
		}
		r.progress.Store(int64(r.generated))
		if r.stream {
			select {
			case r.notify <- struct{}{}:
			default:
			}
		}
		kept = append(kept, r)
	}
	clear(e.running[len(kept):])
	e.running = kept
	return true, batch, prefilled
}

// admitCached looks r's prompt up in the prefix cache as r is admitted and
// returns how many of its tokens need no prefill. At least the last prompt
// token is always computed (its logits start the answer), as in SGLang.
// The prompt is cached at once, so that requests admitted after it share it.
func (e *engine) admitCached(r *request) int {
	if e.cache == nil || len(r.promptIDs) == 0 {
		return 0
	}
	cached := min(e.cache.match(r.promptIDs), r.promptTokens-1)
	e.cache.insert(r.promptIDs)
	if !r.admitted {
		r.admitted = true
		r.cached.Store(int64(cached))
		if !r.internal {
			e.stats.CachedTokens += int64(cached)
		}
	}
	return cached
}

// snapshotStats copies the counters and adds the current gauges.
func (e *engine) snapshotStats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stats
	s.Running = len(e.running)
	s.Queued = len(e.waiting)
	s.KVUsed = e.usedKV
	return s
}
