package sim

import "sync"

// ranks are the server's data-parallel schedulers, as SGLang runs one per
// rank with --dp-size: each has its own running batch, waiting queue and
// KV cache of Config.MaxTotalTokens, and requests are dealt to them in turn
// (SGLang's round_robin load balancing). With one rank it is the engine.
type ranks struct {
	engines []*engine
	// mu makes the turn and the duplicate-rid check across ranks one step.
	mu   sync.Mutex
	next int
}

func newRanks(cfg *Config) *ranks {
	n := max(cfg.DataParallel, 1)
	rk := &ranks{engines: make([]*engine, n)}
	for i := range rk.engines {
		rk.engines[i] = newEngine(cfg)
	}
	return rk
}

// submit queues r on the next rank. A rid in flight on any rank is refused.
func (rk *ranks) submit(r *request) error {
	if len(rk.engines) == 1 {
		return rk.engines[0].submit(r)
	}
	rk.mu.Lock()
	defer rk.mu.Unlock()
	for _, e := range rk.engines {
		if e.has(r.rid) {
			return errDuplicateRID
		}
	}
	e := rk.engines[rk.next]
	rk.next = (rk.next + 1) % len(rk.engines)
	return e.submit(r)
}

// abort ends r on the rank that holds it; see engine.abort.
func (rk *ranks) abort(r *request, message string) bool {
	if r.eng == nil {
		return false
	}
	return r.eng.abort(r, message)
}

// abortRID aborts the request with this rid wherever it is, or everything.
func (rk *ranks) abortRID(rid string, all bool) {
	for _, e := range rk.engines {
		e.abortRID(rid, all)
	}
}

func (rk *ranks) close() {
	for _, e := range rk.engines {
		e.close()
	}
}

// snapshotStats adds up the ranks' counters and gauges. The peaks are the
// sums of each rank's peak, an upper bound of the server's.
func (rk *ranks) snapshotStats() Stats {
	var t Stats
	for _, e := range rk.engines {
		s := e.snapshotStats()
		t.Requests += s.Requests
		t.Completed += s.Completed
		t.Aborted += s.Aborted
		t.Retractions += s.Retractions
		t.PromptTokens += s.PromptTokens
		t.TokensGenerated += s.TokensGenerated
		t.CachedTokens += s.CachedTokens
		t.PrefilledTokens += s.PrefilledTokens
		t.Steps += s.Steps
		t.QueuedSteps += s.QueuedSteps
		t.RunningSteps += s.RunningSteps
		t.MaxRunning += s.MaxRunning
		t.MaxQueued += s.MaxQueued
		t.MaxKVUsed += s.MaxKVUsed
		t.Running += s.Running
		t.Queued += s.Queued
		t.KVUsed += s.KVUsed
	}
	return t
}
