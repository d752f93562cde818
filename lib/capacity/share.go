package capacity

import (
	"fmt"
	"math"
	"time"

	"github.com/synthpipe/synthpipe/lib/servermetrics"
)

// Sharing a server with other runs. A run sized as above keeps the whole KV
// cache busy; several runs against one server, each sized so, would queue
// N times what it holds and have it retract (preempt and recompute)
// requests over and over. They cannot count each other (no file is shared,
// they may run on different machines), but every one can read the same
// server's load (generate's server view: SGLang's /metrics, or its
// /v1/loads or /get_load, served whatever its flags): how many requests it
// runs and how many wait. The rule is a congestion controller's, additive
// increase and multiplicative decrease as TCP's, on what the server holds:
//
//   - the server should hold what one run alone would keep in flight, the
//     size above (the ceiling); at each reading of its load (every
//     ShareInterval) a run compares what it holds, running + queued (the
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
//     every run: over ShareQueueOver of the total queued, each run cuts in
//     proportion so that the total is what runs plus ShareQueueTarget
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
//     ShareStartInterval until it first reaches the ceiling or cuts: runs
//     started together do not queue N full loads at once, and one alone
//     reaches its ceiling in three readings, a third of a second;
//   - never above the ceiling: alone, a run keeps what it kept before.
//
// A server that reports no load (an old SGLang, a proxy, or no running and
// queued counts) is sized as if no other run used it (a run alone keeps its
// size from the start), or, with --shared, shared by probes of its queue
// (probe.go).
//
// ShareInterval and ShareStartInterval pace the readings; the other figures
// are the rule's, exported for generate's help, which states them.
const (
	ShareInterval      = 500 * time.Millisecond
	ShareStartInterval = 100 * time.Millisecond
	ShareStart         = 1.0 / 8 // of the ceiling
	shareStep          = 0.5     // requests added per reading
	ShareQueueOver     = 0.05    // queued share that cuts, beside others
	ShareQueueTarget   = 0.01    // queued share such a cut aims at
)

// Load is what a server says of its requests.
type Load struct {
	Running, Queued float64
}

// serverShare is the limit that shares a server; guarded by KVSizer.mu.
type serverShare struct {
	on       bool    // until the server turns out to report no load
	limit    float64 // 0 until the ceiling is known
	starting bool    // since begin, until the ceiling or a cut
	others   bool    // a reading showed requests that are not this run's
	why      string
	probe    probeShare // the server reports no load: probes measure its queue
}

func (s *serverShare) begin(ceiling float64) {
	s.limit = max(1, math.Ceil(ceiling*ShareStart))
	s.starting = true
	s.why = fmt.Sprintf("started at %.0f", s.limit)
}

// StartSharing sizes k to share its server until stopSharing.
func (k *KVSizer) StartSharing() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.share = serverShare{on: true}
}

// StopSharing sizes k as if the server were its own.
func (k *KVSizer) StopSharing() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.share = serverShare{}
}

// Observe applies the rule to one reading of the server's load, mine being
// this run's requests in flight to it now. It reports whether this reading
// is the first to show another run's requests.
func (k *KVSizer) Observe(load Load, mine int) (firstOthers bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := &k.share
	if !s.on {
		return false
	}
	total := load.Running + load.Queued
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
		queued = load.Queued / total
		if queued > ShareQueueOver {
			goal = min(goal, load.Running/(1-ShareQueueTarget))
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
			s.why = fmt.Sprintf("the server held %.0f requests (%.0f running, %.0f queued), over %.0f", total, load.Running, load.Queued, goal)
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
		if queued > ShareQueueTarget {
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

// StartingUp reports whether k has yet to reach its first ceiling or cut.
func (k *KVSizer) StartingUp() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.share.on && (k.share.starting || k.share.limit == 0)
}

func (k *KVSizer) Sharing() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.share.on
}

// CountsUnusable reports whether snap's running or queued requests were
// read as NaN, Inf or a negative count, and so left out.
func CountsUnusable(snap *servermetrics.Snapshot) bool {
	_, running := snap.Unusable[servermetrics.NumRunningReqs]
	_, queued := snap.Unusable[servermetrics.NumQueueReqs]
	return running || queued
}
