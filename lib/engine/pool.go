package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/exitcode"
)

// server is one --url with its load and health.
type server struct {
	url         string // as printed and written in gen.endpoint: without user:password
	base        string // as given to --url, credentials included: where requests go
	model       string // the model it says it serves (SGLang's /model_info), for gen.model
	limiter     capacity.Limiter
	inFlight    int
	peak        int       // most in flight since the last markHeld
	outstanding int64     // tokens the requests in flight are expected to hold
	pausedUntil time.Time // Retry-After: no new requests before then
	// The circuit breaker: after breakAfter connection failures in a row
	// the server is sidelined until openUntil, then one probe request
	// decides whether it is back.
	failures  int
	openUntil time.Time
	probing   bool
	sidelines int // failed probes in a row: each doubles the next sideline
	// connectErrors and lastError say why the server is down, for the
	// message that ends a run in which none could be reached.
	connectErrors int
	lastError     string
	lastFailure   time.Time
	// sidelineCount counts the sidelines since the start.
	sidelineCount int
	// needInfo: the server could not be reached for its capacity at the
	// start; when its sideline ends, its /server_info is read (pool.recheck)
	// before any request is sent to it, so that it is sized from its KV
	// cache as a server up at the start is, not adaptively without bound.
	needInfo bool
	// contextLength and maxCompletion are what the server said of the
	// model's context length and its longest answer at the start (0: it
	// did not say), for the run's contextFit.
	contextLength, maxCompletion int
}

// markUnreachable sidelines s after a failed connection (at start-up, its
// capacity query).
func (s *server) markUnreachable(cause string) {
	s.failures, s.sidelines = breakAfter, 1
	s.openUntil = time.Now().Add(firstSideline)
	s.sidelineCount++
	s.connectErrors++
	s.lastError, s.lastFailure = cause, time.Now()
}

// Circuit breaker settings.
const (
	breakAfter      = 3
	firstSideline   = time.Second
	longestSideline = 30 * time.Second
)

func (s *server) sidelined(now time.Time) bool {
	return s.failures >= breakAfter && (now.Before(s.openUntil) || s.probing)
}

func (s *server) available(now time.Time) bool {
	return !now.Before(s.pausedUntil) && !s.sidelined(now) && s.inFlight < s.limiter.Limit()
}

// pool spreads requests over the servers: to the available one with the
// fewest tokens outstanding, so that a server busy with long answers gets
// fewer new ones.
type pool struct {
	mu      sync.Mutex
	servers []*server
	changed notice // whenever a slot may have freed or a server's state changed
	// downSince is when the last server was sidelined (zero while one is
	// up); after giveUp of that, no request waits for them any more.
	downSince time.Time
	giveUp    time.Duration
	// recheck reads again the capacity of a server with needInfo whose
	// sideline ended, and reports with back or stillDown; set once before
	// the run starts, nil: such a server is probed by a request.
	recheck func(s *server)
}

// errNoServer says every server has been unreachable for longer than the
// retries would have waited: try again later.
var errNoServer = errors.New("no server is reachable")

// newPool spreads over servers; giveUp is how long requests wait while all
// of them are unreachable.
func newPool(servers []*server, giveUp time.Duration) *pool {
	p := &pool{servers: servers, giveUp: giveUp}
	p.updateDownLocked()
	return p
}

// updateDownLocked notes when the last server went down.
func (p *pool) updateDownLocked() {
	for _, s := range p.servers {
		if s.failures < breakAfter {
			p.downSince = time.Time{}
			return
		}
	}
	if p.downSince.IsZero() {
		p.downSince = time.Now()
	}
}

// held is how many requests s has in flight.
func (p *pool) held(s *server) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return s.inFlight
}

// markHeld starts a window for heldSince: a reading of s's load is about to
// be asked for.
func (p *pool) markHeld(s *server) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.peak = s.inFlight
}

// heldSince is the most requests s had in flight since markHeld. A reading
// of the server's load was taken at some moment of that window, and this
// run's requests the server counted then were at most the run's own count
// at that moment (a request counts here before the server sees it and
// until after the server has let it go): comparing the reading with the
// count when it arrives instead would take this run's answers that ended
// meanwhile for another run's requests.
func (p *pool) heldSince(s *server) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(s.peak, s.inFlight)
}

// decoding is how many requests in flight the servers decode at once: all
// of them, but on a server sized from its KV cache only what the cache
// holds (decoding).
func (p *pool) decoding() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n float64
	for _, s := range p.servers {
		if k, ok := s.limiter.(*capacity.KVSizer); ok {
			n += k.Decoding(s.inFlight)
		} else {
			n += float64(s.inFlight)
		}
	}
	return n
}

// capacity is how many requests the servers' limits let be in flight at
// once, for the ETA under a budget (budgetTail).
func (p *pool) capacity() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.servers {
		if s.limiter != nil {
			n += s.limiter.Limit()
		}
	}
	return n
}

// wake lets waiting requests look again: the limits changed.
func (p *pool) wake() {
	p.changed.notify()
}

// acquire waits for a server with a free slot and charges it tokens. It
// fails with errNoServer once every server has been down for giveUp. A
// request that was just refused by avoid (nil: none) waits for another
// server, unless avoid is the only one.
func (p *pool) acquire(ctx context.Context, tokens int, avoid *server) (*server, error) {
	for {
		p.mu.Lock()
		now := time.Now()
		if !p.downSince.IsZero() && now.Sub(p.downSince) > p.giveUp {
			p.mu.Unlock()
			return nil, errNoServer
		}
		var best *server
		for _, s := range p.servers {
			if s == avoid && len(p.servers) > 1 {
				continue
			}
			if s.needInfo && p.recheck != nil && s.available(now) {
				// Its sideline ended: its capacity is read before a
				// request is sent; probing keeps it sidelined meanwhile.
				s.probing = true
				go p.recheck(s)
				continue
			}
			if s.available(now) && (best == nil || s.outstanding < best.outstanding) {
				best = s
			}
		}
		if best != nil {
			best.inFlight++
			best.peak = max(best.peak, best.inFlight)
			best.outstanding += int64(tokens)
			if best.failures >= breakAfter {
				best.probing = true
			}
			p.mu.Unlock()
			return best, nil
		}
		wake := p.nextChangeLocked(now)
		changed := p.changed.next()
		p.mu.Unlock()
		t := time.NewTimer(wake)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// nextChangeLocked is how long until a pause or a sideline ends.
func (p *pool) nextChangeLocked(now time.Time) time.Duration {
	wait := time.Minute
	if !p.downSince.IsZero() {
		wait = p.downSince.Add(p.giveUp).Sub(now)
	}
	for _, s := range p.servers {
		for _, until := range []time.Time{s.pausedUntil, s.openUntil} {
			if d := until.Sub(now); d > 0 && d < wait {
				wait = d
			}
		}
	}
	return wait + time.Millisecond
}

// outcomeKind is what an attempt tells the pool about its server.
type outcomeKind uint8

const (
	attemptOK          outcomeKind = iota
	attemptFailed                  // the server answered, with an error
	attemptUnreachable             // could not connect, or the connection broke
	attemptRateLimited
	attemptCancelled // we gave up: says nothing about the server
)

// release returns the slot of an attempt and learns from how it went; cause
// says why it failed.
func (p *pool) release(s *server, tokens int, kind outcomeKind, retryAfter time.Duration, cause string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.inFlight--
	s.outstanding -= int64(tokens)
	switch kind {
	case attemptOK:
		s.failures, s.probing, s.sidelines = 0, false, 0
		s.limiter.OnSuccess()
	case attemptFailed:
		s.failures, s.probing = 0, false
	case attemptRateLimited:
		s.failures, s.probing = 0, false
		s.limiter.OnRateLimit()
		if retryAfter > 0 {
			s.pausedUntil = later(s.pausedUntil, time.Now().Add(retryAfter))
		}
	case attemptUnreachable:
		s.connectFailed(cause)
	case attemptCancelled:
		s.probing = false
	}
	p.updateDownLocked()
	p.changed.notify()
}

// connectFailed learns that s could not be reached; the caller holds p.mu.
func (s *server) connectFailed(cause string) {
	now := time.Now()
	s.failures++
	s.probing = false
	s.connectErrors++
	s.lastError, s.lastFailure = cause, now
	// The failure that opens the breaker, or a failed probe, sidelines
	// the server, longer each time; the requests that were in flight
	// when it went down fail together and must not stretch that.
	if s.failures >= breakAfter && !now.Before(s.openUntil) {
		s.openUntil = now.Add(min(firstSideline<<min(s.sidelines, 5), longestSideline))
		s.sidelines++
		s.sidelineCount++
	}
}

// back takes s, whose capacity was read again, out of its sideline with l
// (nil: its limiter stays) as its limiter.
func (p *pool) back(s *server, l capacity.Limiter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l != nil {
		s.limiter = l
	}
	s.needInfo = false
	s.failures, s.probing, s.sidelines = 0, false, 0
	p.updateDownLocked()
	p.changed.notify()
}

// stillDown sidelines s again: its capacity could not be read.
func (p *pool) stillDown(s *server, cause string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.connectFailed(cause)
	p.updateDownLocked()
	p.changed.notify()
}

// unreachable is the error that ends a run in which no server could be
// reached: the server that failed last, why, and how often.
func (p *pool) unreachable() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	last := p.servers[0]
	for _, s := range p.servers {
		if s.lastFailure.After(last.lastFailure) {
			last = s
		}
	}
	return exitcode.TempFailf("%s: %s after %s; no server is reachable", last.url, last.lastError, cliutil.Count(int64(last.connectErrors), "attempt"))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// downNow counts the servers sidelined now, the servers, and the times a
// server was sidelined since the start, for the progress line.
func (p *pool) downNow() (down, of int, sidelines int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for _, s := range p.servers {
		if s.sidelined(now) {
			down++
		}
		sidelines += int64(s.sidelineCount)
	}
	return down, len(p.servers), sidelines
}

// downServers are the servers sidelined now, by their printed URL.
func (p *pool) downServers() map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	down := map[string]bool{}
	for _, s := range p.servers {
		if s.sidelined(now) {
			down[s.url] = true
		}
	}
	return down
}
