package engine

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/servermetrics"
)

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
		if k, ok := srv.limiter.(*capacity.KVSizer); ok {
			k.StartSharing()
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
		k := srv.limiter.(*capacity.KVSizer)
		switch {
		case k.Probing():
			// Its probes keep their own time.
		case k.StartingUp():
			return capacity.ShareStartInterval
		case k.Sharing():
			every = capacity.ShareInterval
		}
	}
	return every
}

// beforeReading marks the start of a reading of server i's load (see
// pool.heldSince).
func (c *shareControl) beforeReading(i int) {
	if c == nil {
		return
	}
	c.mu.Lock()
	srv := c.servers[i]
	c.mu.Unlock()
	if srv != nil {
		c.pool.markHeld(srv)
	}
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
	k := srv.limiter.(*capacity.KVSizer)
	if !k.Sharing() || k.Probing() {
		return
	}
	if snap != nil && capacity.CountsUnusable(snap) {
		// The server reports its load, but this reading's counts are
		// none (the view counts and says it): the limit stands.
		return
	}
	blind := snap == nil || !snap.Has[servermetrics.NumRunningReqs] || !snap.Has[servermetrics.NumQueueReqs]
	if blind && !c.probes {
		k.StopSharing()
		c.note("%s: sized as if no other run used it: it reports no running and queued requests (SGLang does at %s; --%s probes its queue instead)",
			srv.url, strings.Join(servermetrics.Sources, ", "), FlagShared)
		c.pool.wake()
		return
	}
	if blind {
		k.ShareByProbe()
		c.note("%s: shares the server with other runs by probes of its queue (it reports no running and queued requests; SGLang does at %s)",
			srv.url, strings.Join(servermetrics.Sources, ", "))
		go c.probe(ctx, srv)
		return
	}
	held := c.pool.heldSince(srv)
	if k.Observe(capacity.Load{Running: snap.Running, Queued: snap.Queued}, held) {
		// Said when it is so, not at the start: a run alone is sized as
		// one alone, and its log does not speak of others.
		c.note("%s: shares the server with other runs (it held %.0f requests, %d of them this run's): sized from its %s (running + queued) every %v",
			srv.url, snap.Running+snap.Queued, held, snap.Source, capacity.ShareInterval)
	}
	c.pool.wake()
}

// probe times probes to srv until ctx ends (capacity.KVSizer.Probe); a
// server that refuses them is then sized as if no other run used it.
func (c *shareControl) probe(ctx context.Context, srv *server) {
	srv.limiter.(*capacity.KVSizer).Probe(ctx, capacity.Prober{
		Backend: c.backend,
		Base:    srv.base,
		Held:    func() int { return c.pool.held(srv) },
		Changed: c.pool.wake,
		Refused: func(failed int, err error) {
			c.note("%s: sized as if no other run used it: its /metrics has none and %d probes failed, the last: %v", srv.url, failed, err)
			c.pool.wake()
		},
	})
}
