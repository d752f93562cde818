package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
)

// Sharing a server that has no /metrics (SGLang's default: they need
// --enable-metrics). Runs cannot read what the server holds, but each can
// time a request of its own: a probe, a one-token prompt asking for one
// token, waits in the server's queue behind everything sent before it and
// is then answered in a step or two. Its latency above that of a probe
// that did not wait is the queue's wait now, measured directly, unlike an
// answer's latency, in which the wait is mixed with a decode of unknown
// length.
//
// What the wait says: in a first-come first-served queue, by Little's law,
// the share of the server's requests that are queued is the wait over the
// latency of an answer (Q/(R+Q) = W/L; L is the mean latency of this run's
// recent answers, all runs' answers being alike). One run alone, sized as
// sizer.go says, keeps a tenth of what the cache holds queued
// (QueueMargin), about 9% of what it holds in flight.
//
// A run probes every quarter of an answer's latency (probeEvery) and reads
// the mean queued share of its probes of the last half latency (at least
// probeReadings of them, all sent after its last change: a probe sent
// before a cut measured the queue the cut is for). The window slides, so
// that runs reading the same queue decide on the same readings and one does
// not take every cut for deciding first. The rule, at each reading:
//
//   - a run that holds nearly all the server's requests (probeAloneShare
//     of fits / (1 - share), what the server holds with its batch full) is
//     alone: the queue is its own margin, and it keeps what a run alone
//     keeps, the ceiling, unless the queue is twice ProbeOver (a client
//     that does not take part);
//   - queued share over ProbeOver: the server holds more than one run
//     alone would; cut the limit so that, every run doing the same, the
//     queued share comes down to ProbeTarget: limit x (1 - share) /
//     (1 - ProbeTarget), at most to a quarter at once, from the requests in
//     flight if more (a cut not yet in effect is not cut again);
//   - under ProbeUnder, with the limit in use, the server may have room:
//     until the first cut the run doubles, once an answer's latency (it
//     starts at an eighth of the ceiling, as with /metrics, and waits for
//     its first answers: requests added now fill the cache as their answers
//     grow, and the queue they make shows about a latency later); after it,
//     one request more every half latency;
//   - in between, with the limit in use, half a request more every latency:
//     the runs together reach ProbeOver again and cut, every one in
//     proportion to what it holds. Proportional cuts and equal steps make
//     the shares converge, as TCP's do;
//   - never above the ceiling.
//
// Limits: the wait is the server's queue only if it serves in arrival
// order (SGLang's fcfs; its lpm policy reorders by shared prefixes); the
// probe's own prefill and step (its base) are taken as the fastest probe
// seen or three decode steps if less, a step being at most the least time
// per token of the recent answers; the network's round trip counts as
// wait; the reading comes a wait late, after the queue it measures formed,
// and runs started together overshoot for about an answer's latency; the
// probes themselves wait in the queue (N runs, N times as many); and a
// server whose batch is not limited by its KV cache makes the alone test
// (which trusts the sizing's fits) less sure. Each probe costs one prompt
// token and one generated token.
//
// The figures generate's help states are exported; the rest are the rule's own.
const (
	ProbeOver        = 0.10 // queued share that cuts (one run alone: about 0.09)
	ProbeTarget      = 0.02 // queued share a cut aims at
	ProbeUnder       = 0.01 // queued share under which the server may have room
	ProbeDeepest     = 0.25 // the deepest cut at once
	ProbesPerLatency = 4    // probes sent per answer latency
	probeReadings    = 3    // probes at least behind a change
	probeAloneShare  = 0.9  // of the server's requests: a run that holds more is alone
	probeMaxEvery    = 5 * time.Second
	probeLatN        = 64 // answers whose mean latency is L
	probeFailed      = 5  // probes failed in a row before the run stops sharing
	// A probe is answered within probeSteps decode steps when it does not
	// wait: the end of the step under way, its prefill, which makes its
	// token, and a step of slack. A step's time is learnt from answers of
	// at least probeStepTokens tokens (shorter ones are mostly prefill).
	probeSteps      = 3
	probeStepTokens = 16
)

// probeShare is what the probe rule keeps of one server; guarded by
// KVSizer.mu, in serverShare.
type probeShare struct {
	on       bool
	fastest  time.Duration   // the fastest probe so far
	lat      []time.Duration // latencies of the last answers, a ring
	perToken []time.Duration // and their time per token, 0 for short ones
	next     int
	cut      bool           // the limit was cut once: no more doubling
	changed  time.Time      // when the limit last changed
	window   []probeReading // the probes the rule reads
}

// probeReading is one probe: when it was sent, the share of the server's
// requests queued that its wait says, and this run's requests in flight.
type probeReading struct {
	sent   time.Time
	queued float64
	held   int
}

// Answered adds one answer's latency and completion tokens for the mean
// latency of answers and the time of a decode step.
func (k *KVSizer) Answered(latency time.Duration, tokens int) {
	if latency <= 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	p := &k.share.probe
	if !p.on {
		return
	}
	perToken := time.Duration(0)
	if tokens >= probeStepTokens {
		perToken = latency / time.Duration(tokens)
	}
	if len(p.lat) < probeLatN {
		p.lat = append(p.lat, latency)
		p.perToken = append(p.perToken, perToken)
		return
	}
	p.lat[p.next], p.perToken[p.next] = latency, perToken
	p.next = (p.next + 1) % probeLatN
}

// meanLatency is the mean latency of the recent answers; there is one.
func (p *probeShare) meanLatency() time.Duration {
	var sum time.Duration
	for _, l := range p.lat {
		sum += l
	}
	return sum / time.Duration(len(p.lat))
}

// baseLocked is the latency of a probe that did not wait: the fastest
// probe, but no more than probeSteps decode steps, a step being at most
// the least time per token of the recent answers. The fastest probe alone
// would be wrong for a run that starts beside a queue that never empties:
// every probe it sends waits.
func (p *probeShare) baseLocked() time.Duration {
	base := p.fastest
	for _, t := range p.perToken {
		if t > 0 {
			base = min(base, probeSteps*t)
		}
	}
	return base
}

// ShareByProbe sizes k from probes of its server's queue: it has no
// /metrics.
func (k *KVSizer) ShareByProbe() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.share.probe = probeShare{on: true, changed: time.Now()}
	k.share.others = true // --shared says so: probes cannot tell runs apart
}

// slide adds r to the window and drops the readings sent before the last
// change or longer than span before now.
func (p *probeShare) slide(r probeReading, now time.Time, span time.Duration) {
	p.window = append(p.window, r)
	keep := p.window[:0]
	for _, r := range p.window {
		if r.sent.After(p.changed) && now.Sub(r.sent) <= span {
			keep = append(keep, r)
		}
	}
	clear(p.window[len(keep):])
	p.window = keep
}

// windowMean is the window's mean queued share and the most requests a
// run held while it was read.
func (p *probeShare) windowMean() (queued, from float64) {
	for _, r := range p.window {
		queued += r.queued
		from = max(from, float64(r.held))
	}
	return queued / float64(len(p.window)), from
}

// Probed applies the rule to one probe sent at sent, when this run held
// held requests in flight to the server, and answered at now.
func (k *KVSizer) Probed(sent, now time.Time, held int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := &k.share
	p := &s.probe
	latency := now.Sub(sent)
	if !s.on || !p.on || s.limit == 0 || latency <= 0 {
		return
	}
	if p.fastest == 0 || latency < p.fastest {
		p.fastest = latency
	}
	if len(p.lat) == 0 || !sent.After(p.changed) {
		// How long a wait is long is not known yet; or the probe
		// measured the queue before the last change.
		return
	}
	mean := p.meanLatency()
	wait := latency - p.baseLocked()
	// The wait of one probe swings with the server's admissions (a long
	// answer ends and frees room for many): the rule reads the mean of
	// the probes sent in the last half answer's latency (and since the
	// last change), at least probeReadings of them. A window that slides,
	// not one emptied at each decision: runs that read the same queue
	// decide on the same readings, so that one does not take every cut
	// because it happens to decide first.
	p.slide(probeReading{sent: sent, queued: min(0.95, max(0, wait.Seconds()/mean.Seconds())), held: held},
		now, max(mean/2, probeReadings*p.everyLocked())+latency)
	if len(p.window) < probeReadings || now.Sub(p.changed) < mean/2 {
		return
	}
	queued, from := p.windowMean()
	ceiling := float64(k.cur)
	used := from >= math.Floor(s.limit)-1
	// With its batch full (the cache holding what the sizing says fits),
	// the server holds fits / (1 - queued) requests. A run that holds
	// nearly all of them is alone: the queue is its own queue margin, and
	// it keeps what a run alone keeps.
	alone := k.fits > 0 && from >= probeAloneShare*k.fits/(1-queued)
	switch {
	case alone && queued <= ProbeOver*2:
		s.limit, s.starting = ceiling, false
	case queued > ProbeOver:
		s.starting, p.cut = false, true
		target := max(s.limit, from) * max(ProbeDeepest, (1-queued)/(1-ProbeTarget))
		if target >= s.limit {
			return
		}
		s.limit = max(1, target)
		s.why = fmt.Sprintf("probes waited %.0f%% of an answer's %v: about that share of the server's requests queued", queued*100, mean.Round(time.Millisecond))
	case !used:
		// The limit is not what holds this run back.
		return
	case queued < ProbeUnder && !p.cut:
		if now.Sub(p.changed) < mean {
			return // the last doubling has yet to show in the queue
		}
		s.limit = min(ceiling, 2*s.limit)
	case queued < ProbeUnder:
		// Room, it seems: a request every half answer's latency.
		s.limit += 2 * shareStep
	case now.Sub(p.changed) < mean:
		return // the last change has yet to show in the queue
	default:
		s.limit += shareStep
	}
	p.changed = now
	if s.limit >= ceiling {
		s.limit, s.starting = ceiling, false
	}
}

// ProbeEvery is how often to probe: a quarter of an answer's mean latency,
// between ShareStartInterval and probeMaxEvery; ShareInterval until the
// first answer. Every probe waits in the server's queue like a request,
// and N runs send N times as many: they are kept to a few an answer.
func (k *KVSizer) ProbeEvery() time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.share.probe.everyLocked()
}

func (p *probeShare) everyLocked() time.Duration {
	if len(p.lat) == 0 {
		return ShareInterval
	}
	return min(probeMaxEvery, max(ShareStartInterval, p.meanLatency()/ProbesPerLatency))
}

// Probing reports whether k shares its server by probes.
func (k *KVSizer) Probing() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.share.on && k.share.probe.on
}

// unreachable reports whether err says the server could not be reached.
func unreachable(err error) bool {
	var be *backend.Error
	return errors.As(err, &be) && be.Kind == backend.KindConnect
}

// probeToken is the prompt of a probe: id 0 is in every vocabulary.
const probeToken = 0

// probeTimeout bounds one probe: a probe that waits longer than this says
// enough (the limit is cut on the next) and the run does not hang on it.
const probeTimeout = 2 * time.Minute

// Prober is what the probes of one server need from the run.
type Prober struct {
	Backend backend.Backend // sends the probes
	Base    string          // where they go, as given to --url
	Held    func() int      // this run's requests in flight to the server now
	Changed func()          // the limit may have moved
	// Refused says that failed probes in a row failed, the last with err:
	// the sharing has stopped.
	Refused func(failed int, err error)
}

// Probe times one-token requests to the server, one at a time, until ctx
// ends, handing each latency to k. A probe that waited probeTimeout is a
// reading too (a long queue). After probeFailed failures in a row it
// stops the sharing: a server that refuses probes is sized as if no other
// run used it.
func (k *KVSizer) Probe(ctx context.Context, p Prober) {
	failed := 0
	// Runs in one process (tests, a library user) share its rid suffix.
	tag := rand.Uint32()
	for n := 1; ; n++ {
		every := k.ProbeEvery()
		sent := time.Now()
		held := p.Held()
		req := &backend.Request{ID: fmt.Sprintf("synthpipe-probe-%08x-%d", tag, n), Attempt: 1, InputIDs: []int{probeToken}, Params: backend.Params{MaxTokens: 1}}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		_, err := p.Backend.Do(pctx, p.Base, req)
		waited := pctx.Err() != nil
		cancel()
		now := time.Now()
		latency := now.Sub(sent)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && unreachable(err):
			// The server is down or restarting: no reading, and no
			// refusal either; the pool's breaker handles the rest.
		case err != nil && !waited:
			if failed++; failed >= probeFailed {
				k.StopSharing()
				p.Refused(failed, err)
				return
			}
		default:
			failed = 0
			k.Probed(sent, now, held)
			p.Changed()
		}
		t := time.NewTimer(max(0, every-latency))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
