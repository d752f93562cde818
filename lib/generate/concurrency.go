package generate

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
)

// limiter decides how many requests one server may have in flight.
type limiter interface {
	limit() int
	onSuccess()
	onRateLimit()
}

// fixedLimit is --concurrency N.
type fixedLimit int

func (f fixedLimit) limit() int     { return int(f) }
func (fixedLimit) onSuccess()       {}
func (fixedLimit) onRateLimit()     {}
func (f fixedLimit) String() string { return fmt.Sprintf("concurrency %d (fixed)", int(f)) }

// AIMD bounds for servers that say nothing of their capacity.
const (
	aimdStart = 16
	aimdMax   = 1024
	// aimdCutEvery keeps one burst of 429s from halving the limit again and
	// again: the requests already in flight answer 429 together.
	aimdCutEvery = time.Second
)

// aimd is additive increase, multiplicative decrease: one more request in
// flight after a window of successes, half as many on a 429, as TCP does.
type aimd struct {
	mu      sync.Mutex
	cur     float64
	lastCut time.Time
}

func newAIMD() *aimd { return &aimd{cur: aimdStart} }

func (a *aimd) limit() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return int(a.cur)
}

func (a *aimd) onSuccess() {
	a.mu.Lock()
	a.cur = min(a.cur+1/a.cur, aimdMax)
	a.mu.Unlock()
}

func (a *aimd) onRateLimit() {
	a.mu.Lock()
	if time.Since(a.lastCut) >= aimdCutEvery {
		a.cur = max(a.cur/2, 1)
		a.lastCut = time.Now()
	}
	a.mu.Unlock()
}

// queueMargin is the share of requests sent beyond what the KV cache holds,
// so that a finished request is replaced at once from the server's queue
// instead of after a round trip.
const queueMargin = 0.10

// kvSizer sizes the requests in flight to what an SGLang server's KV cache
// holds: too few leaves the batch short, too many only queue (or get
// retracted and recomputed) on the server while their client-side timeouts
// run.
type kvSizer struct {
	kvTokens   int // token capacity of the KV cache
	maxRunning int
	mu         sync.Mutex
	cur        int
	why        string
}

// newKVSizer sizes for a server's capacity; resize sets the first target
// once the first prompt is known.
func newKVSizer(info *backend.ServerInfo) *kvSizer {
	return &kvSizer{kvTokens: max(info.TokenCapacity, info.MaxTotalTokens), maxRunning: info.MaxRunningRequests, cur: 1}
}

func (k *kvSizer) limit() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cur
}

func (*kvSizer) onSuccess()   {}
func (*kvSizer) onRateLimit() {}

// resize recomputes the target from the mean prompt length and the mean
// number of generated tokens a running request holds. It reports whether
// the target changed by more than a tenth, which is worth a log line.
func (k *kvSizer) resize(meanPrompt, kvShare float64) bool {
	perRequest := max(meanPrompt+kvShare, 1)
	fit := float64(k.kvTokens) / perRequest
	n := int(math.Ceil(fit * (1 + queueMargin)))
	why := fmt.Sprintf("KV %s tokens / (%s prompt + %s held by answers) = %.0f fit, +%.0f%% queue margin",
		cliutil.Thousands(int64(k.kvTokens)), cliutil.Thousands(int64(meanPrompt)), cliutil.Thousands(int64(kvShare)), fit, queueMargin*100)
	if k.maxRunning > 0 {
		capped := int(math.Ceil(float64(k.maxRunning) * (1 + queueMargin)))
		if n > capped {
			// The figure said is the one used: the cap, with the same margin.
			n = capped
			why = fmt.Sprintf("%s; capped at max_running_requests %d, +%.0f%% queue margin", why, k.maxRunning, queueMargin*100)
		}
	}
	n = max(n, 1)
	k.mu.Lock()
	defer k.mu.Unlock()
	old := k.cur
	k.cur, k.why = n, why
	return old == 0 || math.Abs(float64(n-old)) > 0.1*float64(old)
}

// String explains the current target, for the log.
func (k *kvSizer) String() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return fmt.Sprintf("concurrency %d: %s", k.cur, k.why)
}
