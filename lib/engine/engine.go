package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// Engine is one run: the scheduler and its parts, built from a Config.
type Engine struct {
	cfg   *Config
	s     *scheduler
	turns *turnRunner // nil unless --turns all
}

// New loads the --tokenizer model and builds the run's parts from cfg. It
// contacts no server: the servers are sized when the first request is
// ready to be sent.
func New(cfg Config) (*Engine, error) {
	c := &cfg
	tmpl, retok, turns, err := loadTemplate(c)
	if err != nil {
		return nil, err
	}
	s := newScheduler(schedulerOptions{
		cfg:     c,
		backend: newBackend(c),
		servers: newServers(c),
		budget:  newBudget(c, c.Already, c.USDPerToken),
		out:     c.Out,
		errs:    c.Errs,
		note:    c.Note,
		warn:    c.Warn,
		stops:   c.Stops,
		retok:   retok,
		batch:   newBatchInput(c, tmpl),
		turns:   turns,
	})
	s.already, s.alreadyRecords, s.key = c.Already, c.AlreadyRecords, c.Key
	s.view = newServerView(c, c.Note)
	return &Engine{cfg: c, s: s, turns: turns}, nil
}

// Run sends the requests of in until it ends, a budget is reached or the
// run is stopped (ctx's signals included), and waits for the server view's
// last reading. The reader closes in.
func (e *Engine) Run(ctx context.Context, in *jsonl.Reader) error {
	stop, join := e.watchServers(ctx)
	defer func() {
		// Joined, not only stopped: nothing of the run reads on after it
		// returns (its readings use settings a caller may change then).
		stop()
		join()
	}()
	return e.s.run(ctx, in)
}

// Snapshot is where the run stands now.
func (e *Engine) Snapshot() Snapshot { return e.s.snapshot(e.cfg.Total) }

// StopReason is why the run stopped, for the status file.
func (e *Engine) StopReason() string { return e.s.stopReason() }

// watchServers sets up the sizing of the servers when the dispatcher has
// its first request to send: their capacity, context length and load
// readings. stop ends the view's readings; join waits for them to end.
func (e *Engine) watchServers(ctx context.Context) (stop, join func()) {
	s, cfg, note, turns := e.s, e.cfg, e.cfg.Note, e.turns
	be, servers := s.workers.be, s.dispatcher.pool.servers
	s.dispatcher.pool.recheck = func(srv *server) { s.recheck(s.stops.dispatch, be, srv, note) }
	viewCtx, stopView := context.WithCancel(context.Background())
	var viewRunning sync.WaitGroup
	s.dispatcher.start = func() { // with the first request to send
		sizeServers(ctx, cfg, be, s.dispatcher.pool, note)
		s.dispatcher.kvFrom(servers)
		// The servers said their context length: before any worker starts.
		s.dispatcher.fit = newContextFit(cfg, servers)
		if turns != nil {
			turns.fit = s.dispatcher.fit
		}
		s.view.share = newShareControl(s.dispatcher.pool, servers, be, cfg.Shared, note)
		viewRunning.Add(1)
		go func() {
			defer viewRunning.Done()
			s.view.run(viewCtx)
		}()
	}
	return stopView, viewRunning.Wait
}

// Report says how the run went: the summary (unless Quiet), and even with
// Quiet what is about the data or the money.
func (e *Engine) Report() {
	s, warn := e.s, e.cfg.Warn
	if n := s.reader.skipped.Load(); n > 0 { // about the data
		warn("skipped %s (--%s)", cliutil.Count(n, "invalid line"), cliutil.FlagSkipInvalid)
	}
	if !e.cfg.Quiet {
		warn("%s", s.summary())
	}
	for _, passed := range s.budget.passed() { // about the money
		warn("%s", passed)
	}
	if n := s.usage.replaced.Load(); n > 0 { // about the money
		warn("%s counted from the answer itself: the server's usage was missing or implausible", cliutil.Count(n, "answer"))
	}
	if retok := s.workers.retok; retok != nil {
		if n := retok.fallbacks.Load(); n > 0 {
			warn("%s re-tokenized from the answer's text alone: the chat template does not render an answer after its prompt", cliutil.Count(n, "answer"))
		}
	}
}

// DefaultServerInfoTimeout is Tuning.ServerInfoTimeout's default.
const DefaultServerInfoTimeout = 10 * time.Second

// loadTemplate loads the --tokenizer model: the answers are re-tokenized
// with it (retok), or with --turns all each turn's conversation is (turns);
// all nil without one.
func loadTemplate(cfg *Config) (tmpl *chat.Model, retok *retokenizer, turns *turnRunner, err error) {
	if cfg.Tokenizer != "" {
		if tmpl, err = chat.Load(cfg.Tokenizer, chat.TemplateAuto, nil); err != nil {
			return nil, nil, nil, err
		}
		if err = tmpl.SetToolDeclaration(cfg.Declaration); err != nil {
			return nil, nil, nil, err
		}
		retok = &retokenizer{model: tmpl}
	}
	if turns, err = newTurnRunner(cfg, tmpl); err != nil {
		return nil, nil, nil, err
	}
	if turns != nil {
		retok = nil // each turn's ids are the conversation's own
	}
	return tmpl, retok, turns, nil
}

// newBackend builds the backend of --backend.
func newBackend(cfg *Config) backend.Backend {
	opts := backend.Options{
		Stream:           cfg.Stream,
		IdleTimeout:      cfg.Idle,
		MaxInFlightBytes: cfg.AnswerMem,
		APIKey:           cfg.APIKey,
		Referer:          cfg.Referer,
		Title:            cfg.Title,
		Model:            cfg.Model,
	}
	return cfg.Kind.New(opts)
}

// newServers makes a server of each --url; sizeServers gives each its
// concurrency limiter once the run has a request to send.
func newServers(cfg *Config) []*server {
	servers := make([]*server, len(cfg.URLs))
	for i, u := range cfg.URLs {
		servers[i] = &server{url: backend.WithoutUserinfo(u), base: u}
	}
	return servers
}

// sizeServers reads what each server of p says of itself (its capacity,
// the model it serves) and sets its concurrency limiter: fixed, sized from
// its KV cache, or AIMD when it does not say. The dispatcher calls it when
// it has its first request to send, not before: a run with nothing to do
// (an empty input, a budget already spent) contacts no server. The servers
// change under the pool's lock: the progress line reads them.
func sizeServers(ctx context.Context, cfg *Config, be backend.Backend, p *pool, note func(string, ...any)) {
	infos := make([]*backend.ServerInfo, len(p.servers))
	errs := make([]error, len(p.servers))
	for i, srv := range p.servers {
		// With --concurrency N only a backend whose requests name no
		// model asks: the server's information names it, for gen.model,
		// and says its context length.
		if cfg.FixedConc == 0 || !cfg.Kind.NeedsModel {
			infos[i], errs[i] = serverInfo(ctx, cfg, be, srv.base)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, srv := range p.servers {
		sizeServer(cfg, srv, infos[i], errs[i], note)
	}
	p.updateDownLocked()
}

// sizeServer sets srv's limiter from what it said (info, or err).
func sizeServer(cfg *Config, srv *server, info *backend.ServerInfo, err error, note func(string, ...any)) {
	if info != nil {
		srv.model = info.Model
		srv.contextLength, srv.maxCompletion = info.ContextLength, info.MaxCompletionTokens
	}
	switch {
	case cfg.FixedConc > 0:
		srv.limiter = capacity.Fixed(cfg.FixedConc)
	case err != nil:
		note("%s: no capacity information (%v): adaptive concurrency from %d", srv.url, err, capacity.AIMDStart)
		srv.limiter = capacity.NewAIMD()
		var be *backend.Error
		if errors.As(err, &be) && be.Kind == backend.KindConnect {
			// Unreachable now: sideline it; when the sideline ends
			// its capacity is read again (scheduler.recheck).
			srv.markUnreachable(shortCause(be))
			srv.needInfo = true
		}
	case info == nil || info.MaxTotalTokens <= 0 && info.TokenCapacity <= 0:
		note("%s: adaptive concurrency from %d (AIMD: +1 per window of successes, half on HTTP 429)", srv.url, capacity.AIMDStart)
		srv.limiter = capacity.NewAIMD()
	default:
		// Sized from the first record's prompt once it is read.
		srv.limiter = capacity.NewKVSizer(info)
	}
}

// recheck reads the capacity of srv, which could not be reached when the
// run started, now that its sideline has ended: a server that answers is
// sized from its KV cache, as it would have been at the start (adaptive
// sizing would grow without bound against SGLang, which never answers
// 429), before any request is sent to it; one still unreachable stays
// sidelined, longer.
func (s *scheduler) recheck(ctx context.Context, be backend.Backend, srv *server, note func(string, ...any)) {
	pool := s.dispatcher.pool
	info, err := serverInfo(ctx, s.cfg, be, srv.base)
	var berr *backend.Error
	switch {
	case ctx.Err() != nil:
		pool.back(srv, nil) // the run is ending: nothing more is sent
	case errors.As(err, &berr) && berr.Kind == backend.KindConnect:
		pool.stillDown(srv, shortCause(berr))
	case err != nil:
		note("%s: back, still no capacity information (%v): adaptive concurrency", srv.url, err)
		pool.back(srv, nil)
	case info == nil || info.MaxTotalTokens <= 0 && info.TokenCapacity <= 0:
		note("%s: back, adaptive concurrency (it says nothing of its capacity)", srv.url)
		pool.back(srv, nil)
	default:
		srv.model = info.Model
		k := capacity.NewKVSizer(info)
		if s.view.share != nil {
			k.StartSharing()
		}
		s.dispatcher.addKV(srv, k)
		s.view.share.add(srv)
	}
}

// serverInfo asks a server for its capacity, within the run's
// Tuning.ServerInfoTimeout.
func serverInfo(ctx context.Context, cfg *Config, be backend.Backend, url string) (*backend.ServerInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Tuning.withDefaults().ServerInfoTimeout)
	defer cancel()
	return be.ServerInfo(ctx, url)
}
