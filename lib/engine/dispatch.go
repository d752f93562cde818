package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synthpipe/synthpipe/lib/capacity"
)

// dispatcher decides what may start: it takes records from the reader and
// starts a worker for each while the reorder window, the output backlog,
// the budgets and the servers allow. Its fields are set when the run is
// built; sized is touched by the dispatching goroutine only.
type dispatcher struct {
	pool *pool
	// kvServers are the servers sized from their KV cache: set when the
	// run is built, and joined by those whose capacity was read late
	// (addKV); guarded by kvMu, as the last sizing is.
	kvMu       sync.Mutex
	kvServers  []*server
	lastPrompt float64 // the mean prompt and kvShare of the last resize
	lastShare  float64
	budget     *budget
	lengths    *capacity.LengthModel
	reorder    *reorder // nil without --ordered
	flight     *flight
	stops      *Stops
	workers    *workers
	collector  *collector // its backlog holds dispatching back; it counts the records a budget cuts
	note       func(format string, args ...any)
	limits     *limits     // what the dispatcher waits on, for the progress line
	fit        contextFit  // caps max tokens at the context; a conversation caps each turn (turnRunner)
	sized      bool        // the KV-bound servers were sized from the first prompt
	logged     atomic.Bool // the first sizing was said
	// start contacts the servers (sizeServers) and starts reading their
	// load, once, when the first request has its budget: a run with
	// nothing to send contacts none. nil: they are ready (tests).
	start   func()
	started bool
}

// kvFrom adds the servers of servers sized from their KV cache to those
// the dispatcher re-sizes.
func (d *dispatcher) kvFrom(servers []*server) {
	d.kvMu.Lock()
	defer d.kvMu.Unlock()
	for _, srv := range servers {
		if _, ok := srv.limiter.(*capacity.KVSizer); ok {
			d.kvServers = append(d.kvServers, srv)
		}
	}
}

// run starts requests until the records end or dispatching stops.
func (d *dispatcher) run(records <-chan *job) {
	ctx := d.stops.dispatch
	defer d.limits.enter(heldByEnd)
	var next int64
	for {
		if d.reorder != nil {
			d.limits.enter(heldByReorder)
			if !d.reorder.waitRoom(ctx, next) {
				return
			}
		}
		d.limits.enter(heldByBacklog)
		if !d.collector.backlog.waitRoom(ctx) {
			return
		}
		d.limits.enter(heldByInput)
		var j *job
		select {
		case r, ok := <-records:
			if !ok {
				return
			}
			j = r
		case <-ctx.Done():
			return
		}
		next = j.seq + 1
		if d.refused(j) {
			continue
		}
		d.limits.enter(heldByBudget)
		r, err := d.reserve(ctx, j)
		if errors.Is(err, errBudgetReached) {
			// What is in flight finishes: it is paid for.
			d.collector.submit(&outcome{job: j, cut: true})
			d.stops.stop(d.budget.stopReason(), nil, false)
			return
		}
		if err != nil {
			return // dispatching stopped while waiting for room
		}
		j.reserve = r
		if !d.started {
			d.started = true
			if d.start != nil {
				d.start()
			}
			// The servers said their context length only now: the first
			// request is fitted to it, its reservation (the uncapped worst
			// case) kept until it settles.
			if d.refused(j) {
				d.budget.cancel(r)
				d.budget.unpledge(&j.pledge)
				continue
			}
		}
		d.sizeFirst(j)
		j.kvTokens = j.promptTokens + int(d.lengths.CachedMean())
		d.limits.enter(heldByServer)
		if !d.takeServer(ctx, j, r) {
			return
		}
		d.limits.enter(heldByNothing)
		d.flight.begin(j)
		d.workers.start(j)
	}
}

// takeServer waits for a server slot for j, whose reservation is r; false
// when dispatching ends: no server comes, or the budget was reached while
// j waited (failed attempts are charged as they fail), and j is not sent.
func (d *dispatcher) takeServer(ctx context.Context, j *job, r reservation) bool {
	srv, err := d.pool.acquire(ctx, j.kvTokens, nil)
	if err != nil {
		d.budget.cancel(r)
		d.budget.unpledge(&j.pledge)
		if errors.Is(err, errNoServer) {
			d.stops.stop("no server reachable", d.pool.unreachable(), true)
		}
		return false
	}
	if d.budget.reached() {
		d.pool.release(srv, j.kvTokens, attemptCancelled, 0, "")
		d.budget.cancel(r)
		d.budget.unpledge(&j.pledge)
		d.collector.submit(&outcome{job: j, cut: true})
		d.stops.stop(d.budget.stopReason(), nil, false)
		return false
	}
	j.server = srv
	return true
}

// refused fits j to the context length (contextFit.fit) and hands a
// prompt that cannot fit to the collector as its error, never sent. A
// conversation is fitted turn by turn (turnRunner).
func (d *dispatcher) refused(j *job) bool {
	if j.conv != nil {
		return false
	}
	e := d.fit.fit(j)
	if e != nil {
		d.collector.submit(&outcome{job: j, err: e})
	}
	return e != nil
}

// reserve books j's worst case; a conversation pledges its later turns.
func (d *dispatcher) reserve(ctx context.Context, j *job) (reservation, error) {
	if j.conv == nil {
		return d.budget.reserve(ctx, j.promptTokens, j.req.Params.MaxTokens)
	}
	c := conversationOutlook{laterTurns: j.conv.Turns() - 1, meanAnswer: d.lengths.CachedMean(), growth: j.conv.Growth()}
	r, p, err := d.budget.reserveConversation(ctx, j.promptTokens, j.req.Params.MaxTokens, c)
	j.pledge = p
	return r, err
}

// sizeFirst sizes the KV-bound servers from the first record's prompt, so
// that the first wave is not sized blind.
func (d *dispatcher) sizeFirst(j *job) {
	if d.sized {
		return
	}
	d.sized = true
	d.resize(float64(j.promptTokens), d.lengths.Estimate(nil).KVShare, false)
}

// resize re-sizes every KV-bound server. It logs a significant change when
// serverBound, that is when the servers are what held the dispatcher back:
// under a budget or a reorder window that keeps fewer in flight a server's
// target changes nothing, and the progress line names the limit instead.
// The first sizing is always said. The tuner calls it too: it reads only
// what is fixed when the run is built.
func (d *dispatcher) resize(meanPrompt, kvShare float64, serverBound bool) {
	d.kvMu.Lock()
	defer d.kvMu.Unlock()
	d.lastPrompt, d.lastShare = meanPrompt, kvShare
	if len(d.kvServers) == 0 {
		return
	}
	first := !d.logged.Swap(true)
	for _, srv := range d.kvServers {
		k := srv.limiter.(*capacity.KVSizer)
		k.Resize(meanPrompt, kvShare)
		if !first && !serverBound {
			continue
		}
		if why := k.Report(); why != "" {
			d.note("%s: %s", srv.url, why)
		}
	}
	d.pool.wake()
}

// addKV sizes srv, whose capacity was read after the run started, with
// k as the others were last sized, says so, and lets requests go to it.
func (d *dispatcher) addKV(srv *server, k *capacity.KVSizer) {
	d.kvMu.Lock()
	defer d.kvMu.Unlock()
	if d.lastPrompt > 0 {
		k.Resize(d.lastPrompt, d.lastShare)
	}
	d.pool.back(srv, k)
	d.kvServers = append(d.kvServers, srv)
	d.note("%s: back: %s", srv.url, k.Report())
}

// flight is the register of the requests in flight: when each started and
// the mean prompt of all dispatched, for the length estimates and the
// progress line. The dispatcher enters a request, its worker takes it out.
type flight struct {
	mu         sync.Mutex
	started    map[*job]time.Time
	promptSum  int64 // prompt tokens of the requests dispatched
	dispatched int64
}

func newFlight() *flight { return &flight{started: map[*job]time.Time{}} }

func (f *flight) begin(j *job) {
	f.mu.Lock()
	f.started[j] = time.Now()
	f.promptSum += int64(j.promptTokens)
	f.dispatched++
	f.mu.Unlock()
}

func (f *flight) end(j *job) {
	f.mu.Lock()
	delete(f.started, j)
	f.mu.Unlock()
}

// snapshot is the age of each request in flight and the mean prompt of the
// requests dispatched (0 before the first).
func (f *flight) snapshot() ([]time.Duration, float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	ages := make([]time.Duration, 0, len(f.started))
	for _, started := range f.started {
		ages = append(ages, now.Sub(started))
	}
	var meanPrompt float64
	if f.dispatched > 0 {
		meanPrompt = float64(f.promptSum) / float64(f.dispatched)
	}
	return ages, meanPrompt
}
