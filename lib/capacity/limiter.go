package capacity

import (
	"fmt"
	"sync"
	"time"
)

// Limiter decides how many requests one server may have in flight.
type Limiter interface {
	Limit() int   // the requests it may have in flight now
	OnSuccess()   // a request was answered
	OnRateLimit() // a request was refused with 429
}

// Fixed is --concurrency N.
type Fixed int

// Limit, OnSuccess and OnRateLimit make Fixed a Limiter that never moves.
func (f Fixed) Limit() int { return int(f) }

// OnSuccess changes nothing.
func (Fixed) OnSuccess() {}

// OnRateLimit changes nothing.
func (Fixed) OnRateLimit() {}

// String says the limit for the log.
func (f Fixed) String() string { return fmt.Sprintf("concurrency %d (fixed)", int(f)) }

// aimdCutEvery keeps one burst of 429s from halving the limit again and
// again: the requests already in flight answer 429 together.
const aimdCutEvery = time.Second

// AIMD is additive increase, multiplicative decrease: one more request in
// flight after a window of successes, half as many on a 429, as TCP does.
type AIMD struct {
	mu      sync.Mutex
	cur     float64
	lastCut time.Time
}

// NewAIMD starts at AIMDStart.
func NewAIMD() *AIMD { return &AIMD{cur: AIMDStart} }

// Limit is the current limit, rounded down.
func (a *AIMD) Limit() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return int(a.cur)
}

// OnSuccess grows the limit by one per window of successes, up to AIMDMax.
func (a *AIMD) OnSuccess() {
	a.mu.Lock()
	a.cur = min(a.cur+1/a.cur, AIMDMax)
	a.mu.Unlock()
}

// OnRateLimit halves the limit, once per burst of 429s.
func (a *AIMD) OnRateLimit() {
	a.mu.Lock()
	if time.Since(a.lastCut) >= aimdCutEvery {
		a.cur = max(a.cur/2, 1)
		a.lastCut = time.Now()
	}
	a.mu.Unlock()
}
