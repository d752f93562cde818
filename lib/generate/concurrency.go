package generate

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/servermetrics"
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

// aimdCutEvery keeps one burst of 429s from halving the limit again and
// again: the requests already in flight answer 429 together.
const aimdCutEvery = time.Second

// aimd is additive increase, multiplicative decrease: one more request in
// flight after a window of successes, half as many on a 429, as TCP does.
type aimd struct {
	mu      sync.Mutex
	cur     float64
	lastCut time.Time
}

func newAIMD() *aimd { return &aimd{cur: capacity.AIMDStart} }

func (a *aimd) limit() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return int(a.cur)
}

func (a *aimd) onSuccess() {
	a.mu.Lock()
	a.cur = min(a.cur+1/a.cur, capacity.AIMDMax)
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

// kvSizer sizes the requests in flight to what an SGLang server's KV cache
// holds: too few leaves the batch short, too many only queue (or get
// retracted and recomputed) on the server while their client-side timeouts
// run.
type kvSizer struct {
	kv       capacity.KV
	mu       sync.Mutex
	cur      int // what this run alone would keep in flight
	why      string
	share    serverShare
	reported int     // the target last said in the log, 0: none yet
	fits     float64 // requests the cache holds at once; those beyond queue
}

// newKVSizer sizes for a server's capacity; resize sets the first target
// once the first prompt is known.
func newKVSizer(info *backend.ServerInfo) *kvSizer {
	return &kvSizer{kv: capacity.FromServerInfo(info), cur: 1}
}

func (k *kvSizer) limit() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.share.on {
		return max(1, min(k.cur, int(k.share.limit)))
	}
	return k.cur
}

func (*kvSizer) onSuccess()   {}
func (*kvSizer) onRateLimit() {}

// resize recomputes the target from the mean prompt length and the mean
// number of generated tokens a running request holds.
func (k *kvSizer) resize(meanPrompt, kvShare float64) {
	t := k.kv.Size(meanPrompt, kvShare)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cur, k.why, k.fits = t.N, t.Why, t.Fits
	if k.share.on && k.share.limit == 0 {
		k.share.begin(float64(k.cur))
	}
}

// decoding is how many of held requests in flight the server decodes at
// once: the cache holds fits of them, the rest (the queue margin) wait in
// its queue and generate nothing yet.
func (k *kvSizer) decoding(held int) float64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fits <= 0 {
		return float64(held)
	}
	return min(float64(held), k.fits)
}

// reportChange is how far the target must move from the one last said
// for the log to say it again: the estimate is re-made every second, and
// a tenth is what it wanders by while answers come in; the log would
// narrate every wave.
const reportChange = 0.25

// report is the target explained for the log when it moved by more than
// reportChange since the last one reported, else "". The last one
// reported, not the last one computed: an estimate that wavers around a
// value, as it does while few answers are in, is said once, not at every
// wave, and one that drifts is said at each quarter, not at each step.
func (k *kvSizer) report() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.reported > 0 && math.Abs(float64(k.cur-k.reported)) <= reportChange*float64(k.reported) {
		return ""
	}
	k.reported = k.cur
	return k.explainLocked()
}

// String explains the current target.
func (k *kvSizer) String() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.explainLocked()
}

func (k *kvSizer) explainLocked() string {
	if k.share.on && k.share.limit > 0 && int(k.share.limit) < k.cur {
		// Sharing is said once another run's requests were seen on the
		// server; until then the limit is the slow start of a run that
		// may share it.
		sharing := ""
		if k.share.others {
			sharing = ", sharing the server"
		}
		return fmt.Sprintf("concurrency %d: %s; %d for now%s (%s)", k.cur, k.why, max(1, int(k.share.limit)), sharing, k.share.why)
	}
	return fmt.Sprintf("concurrency %d: %s", k.cur, k.why)
}

// Sharing a server with other runs. A run sized as above keeps the whole KV
// cache busy; several runs against one server, each sized so, would queue
// N times what it holds and have it retract (preempt and recompute)
// requests over and over. They cannot count each other (no file is shared,
// they may run on different machines), but every one can read the same
// server's load (the server view, serverview.go: SGLang's /metrics, or its
// /v1/loads or /get_load, served whatever its flags): how many requests it
// runs and how many wait. The rule is a congestion controller's, additive
// increase and multiplicative decrease as TCP's, on what the server holds:
//
//   - the server should hold what one run alone would keep in flight, the
//     size above (the ceiling); at each reading of its load (every
//     shareInterval) a run compares what it holds, running + queued (the
//     total), with the ceiling;
//   - over the ceiling, each run cuts its limit to limit x ceiling / total:
//     together they come down to the ceiling, each in proportion to what
//     it holds. A run whose requests in flight are still above its limit
//     (the last cut has not taken effect) cuts from those, so a reading
//     taken before the answers came back does not cut again;
//   - beside other runs (they hold a request or more), the queue is the
//     measure as well: each run's ceiling is its own estimate from its own
//     answers, and early on (short answers finish first) some estimate
//     high; the sum would settle at the highest. The queue is the same for
//     every run: over shareQueueOver of the total queued, each run cuts in
//     proportion so that the total is what runs plus shareQueueTarget
//     (fewer queued than one run alone keeps as its margin); a run alone
//     keeps its margin, as before;
//   - at or under it, each run whose limit is used grows by its share
//     (limit / total) of what is free, at most doubling, plus shareStep:
//     alone, it fills the server at once; beside others, the room is split
//     in proportion, and the equal step is what makes the shares converge,
//     as TCP's additive increase does: the cuts are proportional, the steps
//     are not. Beside others with requests queued, there is no room: only
//     the step;
//   - a run starts at an eighth of the ceiling and reads the load every
//     shareStartInterval until it first reaches the ceiling or cuts: runs
//     started together do not queue N full loads at once, and one alone
//     reaches its ceiling in three readings, a third of a second;
//   - never above the ceiling: alone, a run keeps what it kept before.
//
// A server that reports no load (an old SGLang, a proxy, or no running and
// queued counts) is sized as if no other run used it (a run alone keeps its
// size from the start), or, with --shared, shared by probes of its queue
// (probeshare.go).
const (
	shareInterval      = 500 * time.Millisecond
	shareStartInterval = 100 * time.Millisecond
	shareStart         = 1.0 / 8 // of the ceiling
	shareStep          = 0.5     // requests added per reading
	shareQueueOver     = 0.05    // queued share that cuts, beside others
	shareQueueTarget   = 0.01    // queued share such a cut aims at
)

// serverLoad is what a server says of its requests.
type serverLoad struct {
	running, queued float64
}

// serverShare is the limit that shares a server; guarded by kvSizer.mu.
type serverShare struct {
	on       bool    // until the server turns out to report no load
	limit    float64 // 0 until the ceiling is known
	starting bool    // since begin, until the ceiling or a cut
	others   bool    // a reading showed requests that are not this run's
	why      string
	probe    probeShare // the server reports no load: probes measure its queue
}

func (s *serverShare) begin(ceiling float64) {
	s.limit = max(1, math.Ceil(ceiling*shareStart))
	s.starting = true
	s.why = fmt.Sprintf("started at %.0f", s.limit)
}

// startSharing sizes k to share its server until stopSharing.
func (k *kvSizer) startSharing() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.share = serverShare{on: true}
}

// stopSharing sizes k as if the server were its own.
func (k *kvSizer) stopSharing() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.share = serverShare{}
}

// observe applies the rule to one reading of the server's load, mine being
// this run's requests in flight to it now. It reports whether this reading
// is the first to show another run's requests.
func (k *kvSizer) observe(load serverLoad, mine int) (firstOthers bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := &k.share
	if !s.on {
		return false
	}
	total := load.running + load.queued
	held := float64(mine)
	// Alone, no one else holds a whole request: seen from the first
	// reading, before this run's first request is sized.
	alone := total-held < 1
	if !alone && !s.others {
		firstOthers, s.others = true, true
	}
	if s.limit == 0 {
		return firstOthers
	}
	ceiling := float64(k.cur)
	// Beside other runs, the server's queue says when it holds more than
	// its batch takes, the same for every run, where each run's ceiling is
	// its own estimate from its own answers (and the sum would settle at
	// the largest). Alone, a run's queue is its own margin.
	queued, goal := 0.0, ceiling
	if !alone {
		queued = load.queued / total
		if queued > shareQueueOver {
			goal = min(goal, load.running/(1-shareQueueTarget))
		}
	}
	switch {
	case total > goal:
		s.starting = false
		from := s.limit
		if held > s.limit {
			from = held
		}
		if target := from * goal / total; target < s.limit {
			s.limit = max(1, target)
			s.why = fmt.Sprintf("the server held %.0f requests (%.0f running, %.0f queued), over %.0f", total, load.running, load.queued, goal)
		}
	case held < math.Floor(s.limit)-1:
		// The limit is not what holds this run back: no evidence that more
		// would fit.
	default:
		free := ceiling - total
		if total > 0 {
			// In proportion to the limit, not to the requests it lets
			// through (its floor): a small limit loses more to the
			// floor, and the shares would drift apart.
			free *= max(held, s.limit) / total
		}
		if queued > shareQueueTarget {
			// Beside others, a queue is no room: only the equal step,
			// which brings the shares together.
			free = 0
		}
		s.limit += min(s.limit, free) + shareStep
	}
	if s.limit >= ceiling {
		s.limit, s.starting = ceiling, false
	}
	return firstOthers
}

// startingUp reports whether k has yet to reach its first ceiling or cut.
func (k *kvSizer) startingUp() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.share.on && (k.share.starting || k.share.limit == 0)
}

func (k *kvSizer) sharing() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.share.on
}

// shareControl hands the server view's readings to the servers sized from
// their KV cache. Its methods are safe on nil (no server shares).
type shareControl struct {
	pool    *pool
	backend backend.Backend // sends the probes
	probes  bool            // --shared: probe servers that report no load
	servers []*server       // by --url, as the view's; nil where not KV-sized
	note    func(string, ...any)
	// mu guards servers, which a server whose capacity is read late
	// joins (add).
	mu sync.Mutex
}

// add hands the readings of srv, sized from its KV cache by a limiter
// that already shares (its capacity was read after the run started), to
// that limiter.
func (c *shareControl) add(srv *server) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.pool.servers {
		if s == srv {
			c.servers[i] = srv
		}
	}
}

// newShareControl makes every KV-sized server share; the view's first
// reading of each says whether it can.
func newShareControl(p *pool, servers []*server, be backend.Backend, probes bool, note func(string, ...any)) *shareControl {
	c := &shareControl{pool: p, backend: be, probes: probes, servers: make([]*server, len(servers)), note: note}
	any := false
	for i, srv := range servers {
		if k, ok := srv.limiter.(*kvSizer); ok {
			k.startSharing()
			c.servers[i], any = srv, true
		}
		any = any || srv.needInfo // it may turn out to be KV-sized (add)
	}
	if !any {
		return nil
	}
	return c
}

// every is how often the view should read the servers: 0 for "as it
// likes".
func (c *shareControl) every() time.Duration {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	every := time.Duration(0)
	for _, srv := range c.servers {
		if srv == nil {
			continue
		}
		k := srv.limiter.(*kvSizer)
		switch {
		case k.probing():
			// Its probes keep their own time.
		case k.startingUp():
			return shareStartInterval
		case k.sharing():
			every = shareInterval
		}
	}
	return every
}

// reading takes the view's reading of server i; nil says it has no
// metrics, and will not be asked again: the server is then probed until ctx
// ends.
func (c *shareControl) reading(ctx context.Context, i int, snap *servermetrics.Snapshot) {
	if c == nil {
		return
	}
	c.mu.Lock()
	srv := c.servers[i]
	c.mu.Unlock()
	if srv == nil {
		return
	}
	k := srv.limiter.(*kvSizer)
	if !k.sharing() || k.probing() {
		return
	}
	if snap != nil && countsUnusable(snap) {
		// The server reports its load, but this reading's counts are
		// none (the view counts and says it): the limit stands.
		return
	}
	blind := snap == nil || !snap.Has[servermetrics.NumRunningReqs] || !snap.Has[servermetrics.NumQueueReqs]
	if blind && !c.probes {
		k.stopSharing()
		c.note("%s: sized as if no other run used it: it reports no running and queued requests (SGLang does at %s; --%s probes its queue instead)",
			srv.url, strings.Join(servermetrics.Sources, ", "), flagShared)
		c.pool.wake()
		return
	}
	if blind {
		k.shareByProbe()
		c.note("%s: shares the server with other runs by probes of its queue (it reports no running and queued requests; SGLang does at %s)",
			srv.url, strings.Join(servermetrics.Sources, ", "))
		go c.probe(ctx, srv)
		return
	}
	held := c.pool.held(srv)
	if k.observe(serverLoad{running: snap.Running, queued: snap.Queued}, held) {
		// Said when it is so, not at the start: a run alone is sized as
		// one alone, and its log does not speak of others.
		c.note("%s: shares the server with other runs (it held %.0f requests, %d of them this run's): sized from its %s (running + queued) every %v",
			srv.url, snap.Running+snap.Queued, held, snap.Source, shareInterval)
	}
	c.pool.wake()
}

// countsUnusable reports whether snap's running or queued requests were
// read as NaN, Inf or a negative count, and so left out.
func countsUnusable(snap *servermetrics.Snapshot) bool {
	_, running := snap.Unusable[servermetrics.NumRunningReqs]
	_, queued := snap.Unusable[servermetrics.NumQueueReqs]
	return running || queued
}
