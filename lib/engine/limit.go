package engine

import (
	"sync"
	"time"
)

// holdBack is what keeps the dispatcher from starting the next request: the
// progress line names the one it waited on most, so that a run kept at 3 in
// flight by its budget says so instead of looking slow for no reason.
type holdBack int

const (
	heldByNothing holdBack = iota // starting a request
	heldByReorder                 // --ordered: the reorder window is full
	heldByBacklog                 // answers wait for stdout to take them
	heldByInput                   // the next record is not read yet
	heldByBudget                  // the next request's worst case does not fit yet
	heldByServer                  // every server is at its concurrency limit
	heldByEnd                     // nothing more starts: the input ended or the run stops
	holdBacks
)

var holdNames = [holdBacks]string{"", "reorder window", "output backlog", "input", "budget", "server", "draining"}

// limits measures how long the dispatcher waits on each holdBack.
type limits struct {
	mu    sync.Mutex
	now   func() time.Time
	cur   holdBack
	since time.Time
	total limitMark
}

// limitMark is the time waited on each holdBack up to a moment: each reader
// of limits keeps its own, to measure from its last look.
type limitMark [holdBacks]time.Duration

func newLimits(now func() time.Time) *limits {
	return &limits{now: now, since: now()}
}

// enter says what the dispatcher waits on from now.
func (l *limits) enter(h holdBack) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.total[l.cur] += now.Sub(l.since)
	l.cur, l.since = h, now
}

// limiting is what held the dispatcher back for most of the time since
// mark, which it moves to now; heldByNothing when it mostly started
// requests: then nothing held the concurrency down.
func (l *limits) limiting(mark *limitMark) holdBack {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.total[l.cur] += now.Sub(l.since)
	l.since = now
	var spans limitMark
	var sum time.Duration
	for h := range spans {
		spans[h] = l.total[h] - mark[h]
		sum += spans[h]
	}
	*mark = l.total
	best := heldByNothing
	for h := heldByReorder; h < holdBacks; h++ {
		if spans[h] > spans[best] {
			best = h
		}
	}
	// Half the time at least: a wait that came and went is no limit.
	if 2*spans[best] < sum {
		return heldByNothing
	}
	return best
}
