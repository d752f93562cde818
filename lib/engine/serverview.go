package engine

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/servermetrics"
)

// The server's own view: where a --url reports its load (SGLang's /metrics,
// or its /v1/loads or /get_load, which it serves whatever its flags),
// generate reads it every Tuning.MetricsEvery for the progress line, the summary
// and the status file, and says once when the server itself is the limit.
// A server that reports none is asked once and then left alone: the run
// goes on from its own measurements.

// Tuning.MetricsEvery's default: the load is read every two seconds, or as
// often as progress lines are printed when that is more often, but never
// more often than Tuning.MinMetricsEvery.
const (
	DefaultMetricsEvery    = 2 * time.Second
	DefaultMinMetricsEvery = 100 * time.Millisecond
)

// The server is the limit when its KV cache stays at least KVFull occupied
// with requests queued for LimitPolls readings in a row spanning at least
// LimitFor (Tuning's fields): more requests in flight would only wait in
// its queue. Their defaults, as the help states them:
const (
	DefaultKVFull     = 0.9
	DefaultLimitPolls = 5
	DefaultLimitFor   = 20 * time.Second
)

// watchedServer is one --url's load.
type watchedServer struct {
	url    string // as printed
	base   string // the URL its load is read at; "" once it has none
	source string // which of servermetrics.Sources it serves; "" until known
	last   servermetrics.Snapshot
	has    bool // last is a reading
	// The busy readings (something running) add up, for the summary.
	busy                                  int
	sumRunning, sumQueued, sumKV, sumRate float64
	// full counts the readings in a row at the limit, since fullSince.
	full      int
	fullSince time.Time
	// unusable counts the readings that held a figure that is no count
	// (NaN, Inf, negative): left out, said once, counted in the summary.
	unusable int
}

// serverView reads the servers' metrics while a run lasts.
type serverView struct {
	apiKey string
	note   func(string, ...any)
	every  time.Duration
	tuning Tuning // its limit rule
	// share takes every reading, and may ask for them more often than
	// Tuning.MetricsEvery (share.go); nil: no server is sized by them.
	share *shareControl

	mu           sync.Mutex
	servers      []*watchedServer
	said         bool // the limit hint was given
	saidUnusable bool // an unusable reading was reported
}

func newServerView(cfg *Config, note func(string, ...any)) *serverView {
	t := cfg.Tuning.withDefaults()
	v := &serverView{apiKey: cfg.APIKey, note: note, every: t.MetricsEvery, tuning: t}
	if cfg.ProgressEvery > 0 {
		v.every = min(v.every, max(cfg.ProgressEvery, t.MinMetricsEvery))
	}
	for _, u := range cfg.URLs {
		v.servers = append(v.servers, &watchedServer{url: backend.WithoutUserinfo(u), base: u})
	}
	return v
}

// run reads every server now and every v.every (or as often as the
// concurrency control asks) until ctx ends.
func (v *serverView) run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v.poll(ctx)
		every := v.every
		if d := v.share.every(); d > 0 && d < every {
			every = d
		}
		t.Reset(every)
	}
}

// poll reads each server that reports its load once.
func (v *serverView) poll(ctx context.Context) {
	v.mu.Lock()
	servers := append([]*watchedServer(nil), v.servers...)
	v.mu.Unlock()
	for i, s := range servers {
		v.mu.Lock()
		base, source := s.base, s.source
		v.mu.Unlock()
		if base == "" {
			continue
		}
		v.share.beforeReading(i)
		snap, err := v.fetch(ctx, base, source)
		if errors.Is(err, servermetrics.ErrNoMetrics) && !s.has {
			// An OpenAI-style base (http://host:30000/v1) has the
			// server's reports at its root.
			if root := rootOf(base); root != base {
				if snap, err = v.fetch(ctx, root, source); err == nil {
					base = root
				}
			}
		}
		v.mu.Lock()
		if len(snap.Unusable) > 0 {
			v.leftOut(s, snap)
		}
		switch {
		case errors.Is(err, servermetrics.ErrUnusable):
			// The server reports its load; this reading was no count.
			s.base, s.source = base, snap.Source
		case err == nil:
			s.base, s.source = base, snap.Source
			v.observe(s, snap, time.Now())
		case errors.Is(err, servermetrics.ErrNoMetrics) && !s.has:
			s.base = "" // no load report: never ask again
		}
		v.mu.Unlock()
		switch {
		case err == nil:
			v.share.reading(ctx, i, &snap)
		case s.base == "":
			v.share.reading(ctx, i, nil)
		}
	}
}

// fetch reads base's load from source, or from the first source it
// serves when source is "".
func (v *serverView) fetch(ctx context.Context, base, source string) (servermetrics.Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, v.every+5*time.Second)
	defer cancel()
	opt := servermetrics.Options{Client: backend.SharedClient(), APIKey: v.apiKey}
	if source == "" {
		return servermetrics.Fetch(ctx, base, opt)
	}
	return servermetrics.FetchFrom(ctx, base, source, opt)
}

// leftOut counts a reading with figures that are no counts, and says the
// first one; the caller holds v.mu.
func (v *serverView) leftOut(s *watchedServer, snap servermetrics.Snapshot) {
	s.unusable++
	if v.saidUnusable {
		return
	}
	v.saidUnusable = true
	v.note("%s: its %s reported %s: no count, left out of every figure (the readings before and after stand; the summary counts such readings)",
		s.url, snap.Source, snap.UnusableText())
}

// rootOf is base without its path.
func rootOf(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Path == "" || u.Path == "/" {
		return base
	}
	u.Path, u.RawPath, u.RawQuery = "", "", ""
	return u.String()
}

// observe takes in a reading of s; the caller holds v.mu.
func (v *serverView) observe(s *watchedServer, snap servermetrics.Snapshot, now time.Time) {
	s.last, s.has = snap, true
	if snap.Running > 0 {
		s.busy++
		s.sumRunning += snap.Running
		s.sumQueued += snap.Queued
		s.sumKV += snap.TokenUsage
		s.sumRate += snap.GenThroughput
	}
	atLimit := snap.Has[servermetrics.TokenUsage] && snap.Has[servermetrics.NumQueueReqs] &&
		max(snap.TokenUsage, snap.MaxTokenUsage) >= v.tuning.KVFull && snap.Queued >= 1
	if !atLimit {
		s.full = 0
		return
	}
	if s.full == 0 {
		s.fullSince = now
	}
	s.full++
	if !v.said && s.full >= v.tuning.LimitPolls && now.Sub(s.fullSince) >= v.tuning.LimitFor {
		v.said = true
		rate := ""
		if snap.GenThroughput > 0 {
			rate = fmt.Sprintf(", generating %s tok/s, what it can do", cliutil.Thousands(int64(snap.GenThroughput)))
		}
		v.note("%s: the server is the limit: its KV cache has been %.0f%% full with requests queued (%s now) for %s%s; "+
			"more requests in flight cannot help, they only wait in its queue: more capacity would (another server as one more --url, or part of the work on another backend)",
			s.url, 100*max(snap.TokenUsage, snap.MaxTokenUsage), cliutil.Thousands(int64(snap.Queued)),
			now.Sub(s.fullSince).Round(time.Second), rate)
	}
}

// now is the servers' latest readings combined; false when none has
// metrics.
func (v *serverView) now() (servermetrics.Snapshot, bool) {
	if v == nil {
		return servermetrics.Snapshot{}, false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	var snaps []servermetrics.Snapshot
	for _, s := range v.servers {
		if s.has && s.base != "" {
			snaps = append(snaps, s.last)
		}
	}
	if len(snaps) == 0 {
		return servermetrics.Snapshot{}, false
	}
	return servermetrics.Combine(snaps), true
}

// serverReading is one server's latest reading, for the status file.
type serverReading struct {
	url  string
	snap servermetrics.Snapshot
	has  bool
}

func (v *serverView) readings() []serverReading {
	if v == nil {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]serverReading, len(v.servers))
	for i, s := range v.servers {
		out[i] = serverReading{url: s.url, snap: s.last, has: s.has && s.base != ""}
	}
	return out
}

// summary is the servers' load while the run kept them busy, averaged over
// the readings, e.g. "server (mean while busy): 48 running, 0 queued, KV
// 91%, 1,250 tok/s"; "" without metrics.
func (v *serverView) summary() string {
	if v == nil {
		return ""
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	var snaps []servermetrics.Snapshot
	unusable := 0
	for _, s := range v.servers {
		unusable += s.unusable
		if s.busy == 0 {
			continue
		}
		n := float64(s.busy)
		snap := servermetrics.Snapshot{
			Running: s.sumRunning / n, Queued: s.sumQueued / n, TokenUsage: s.sumKV / n, GenThroughput: s.sumRate / n,
			Ranks: s.last.Ranks, Has: s.last.Has,
		}
		snap.MaxTokenUsage = snap.TokenUsage
		snaps = append(snaps, snap)
	}
	var parts []string
	if len(snaps) > 0 {
		c := servermetrics.Combine(snaps)
		c.CacheHitRate = 0 // not averaged
		parts = append(parts, "server (mean while busy): "+c.String())
	}
	if unusable > 0 {
		parts = append(parts, fmt.Sprintf("%s load readings left out (NaN, Inf or negative figures)", cliutil.Thousands(int64(unusable))))
	}
	return strings.Join(parts, "; ")
}
