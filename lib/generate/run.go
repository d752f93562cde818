package generate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/engine"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
	"github.com/synthpipe/synthpipe/lib/runview"
	"github.com/synthpipe/synthpipe/lib/statusfile"
)

// serverInfoTimeout bounds the capacity and price queries at start-up; a
// variable so that tests need not wait for it.
var serverInfoTimeout = 10 * time.Second

// memoryHeadroom is what generate may hold besides the answers being
// received, for the soft memory limit: thousands of requests in flight
// and their records take far less.
const memoryHeadroom = 512 << 20

func run(c *cli.Context, cfg *config) (err error) {
	if err := parse(c, cfg); err != nil {
		return err
	}
	if os.Getenv("GOMEMLIMIT") == "" { // a limit the user set wins
		// --max-answer-memory bounds what the answers in flight hold; the
		// buffers of answers that failed or were written are garbage the
		// collector would otherwise let pile up to twice the live heap
		// before collecting. Near this limit it collects sooner.
		previous := debug.SetMemoryLimit(cfg.answerMem + memoryHeadroom)
		defer debug.SetMemoryLimit(previous)
	}
	// stderr is the progress's console (mainWith made it), which keeps
	// the live bar off the lines printed while it is on screen.
	var prog *runview.Progress
	if !cfg.quiet {
		prog = runview.NewProgress(c.App.ErrWriter, cfg.progressEvery)
	}
	stderr := c.App.ErrWriter
	statusWarn := func(format string, args ...any) {
		cliutil.Notef(stderr, c.App.Name, "--"+flagStatusFile+" "+format, args...)
	}
	// A run that ends before it starts (budget already reached, a key
	// that cannot pay, a bad input) still says so in its status file.
	var status *runview.StatusWriter
	spent, alreadyRecords := int64(0), int64(0)
	earlyReason := "stopped before the first request"
	if cfg.statusFile != "" {
		defer func() {
			if status == nil {
				runview.WriteEarlyStatus(cfg.statusFile, earlyStatus(cfg, spent, alreadyRecords, earlyReason), err, statusWarn)
			}
		}()
	}
	note := func(format string, args ...any) {
		if !cfg.quiet {
			cliutil.Notef(stderr, c.App.Name, format, args...)
		}
	}
	// The first signal drains the requests in flight: Main must wait for it.
	cliutil.SetSignalGrace(c.Context, cfg.drainTimeout+3*time.Second)

	// The inputs are checked first: a typo must not wait on a slow server.
	// Reading stops when dispatching does.
	stops := newStops()
	defer stops.end()
	opt := cfg.input
	opt.Context = stops.dispatch
	// Requests are prompts, often written without a final newline; the
	// --already files are outputs, where such a line is torn.
	opt.LastLineRecord = true
	in, err := jsonl.Open(c.App.Reader, cfg.inputs, opt)
	if err != nil {
		return err
	}
	reading := false // from then on the scheduler's reader closes in
	defer func() {
		if !reading {
			in.Close()
		}
	}()

	already := jsonl.ExistingFiles(cfg.already, func(path string) {
		note("--%s %s does not exist yet: counted as empty", flagAlready, path)
	})
	if len(already) > 0 {
		scan := record.NewScanner(cfg.idPath, false, "")
		sum, err := record.SumTokens(c.App.Reader, already, cfg.input, scan, cfg.countMode)
		if err != nil {
			return err
		}
		if sum.Uncounted > 0 {
			return exitcode.DataErrorf("%s %s: --%s cannot count it against --%s (%s in all); an output of --output-format openai-batch is cut by budget-cut: %s",
				sum.FirstUncounted, record.NoCount, flagAlready, flagTokenBudget, cliutil.Count(sum.Uncounted, "such record"), record.CountHint)
		}
		spent, alreadyRecords = sum.Tokens, sum.Records
		if err := checkProvenance(&sum.Provenance, cfg, func(format string, args ...any) { cliutil.Notef(stderr, c.App.Name, format, args...) }); err != nil {
			return err
		}
		if spent >= cfg.tokenBudget {
			note("already at or over budget: %s of %s %s tokens spent; sending nothing", cliutil.Thousands(spent), cliutil.Thousands(cfg.tokenBudget), cfg.countMode)
			earlyReason = "already at or over budget"
			return nil
		}
	}
	be := newBackend(cfg)
	usdPerToken, err := worstPrice(c.Context, cfg)
	if err != nil {
		return err
	}
	key, err := readKey(c.Context, cfg, note)
	if err != nil {
		return err
	}
	total := cfg.total
	if total == 0 {
		total = countRecords(c.App.Reader, cfg.inputs) * int64(cfg.samples)
	}

	out := jsonl.NewWriter(c.App.Writer)
	var errsFile *jsonl.OutputFile
	var errs *jsonl.Writer
	if cfg.errors != "" {
		if errsFile, err = jsonl.CreateOutput(cfg.errors, false, cliutil.Warner(c)); err != nil {
			return err
		}
		defer func() {
			if cerr := errsFile.Close(); err == nil {
				err = cerr
			}
		}()
		errs = errsFile.Writer
	}
	note("%s", startLine(cfg, c.IsSet(flagMaxTokens)))
	servers := newServers(cfg)
	var tmpl *chat.Model
	var retok *retokenizer
	if cfg.tokenizer != "" {
		if tmpl, err = chat.Load(cfg.tokenizer, chat.TemplateAuto, nil); err != nil {
			return err
		}
		if err = tmpl.SetToolDeclaration(cfg.declaration); err != nil {
			return err
		}
		retok = &retokenizer{model: tmpl}
	}
	turns, err := newTurnRunner(cfg, tmpl)
	if err != nil {
		return err
	}
	if turns != nil {
		retok = nil // each turn's ids are the conversation's own
	}
	s := newScheduler(schedulerOptions{
		cfg:     cfg,
		backend: be,
		servers: servers,
		budget:  newBudget(cfg, spent, usdPerToken),
		out:     out,
		errs:    errs,
		note:    note,
		warn:    func(format string, args ...any) { cliutil.Notef(stderr, c.App.Name, format, args...) },
		stops:   stops,
		retok:   retok,
		batch:   newBatchInput(cfg, tmpl),
		turns:   turns,
	})

	s.already, s.alreadyRecords, s.key = spent, alreadyRecords, key
	if cfg.metricsAddr != "" {
		host, _ := os.Hostname()
		addr, stop, err := runview.ServeMetrics(cfg.metricsAddr, func() *statusfile.Status {
			return runview.Status(s.snapshot(total), cfg.progressEvery, host, nil)
		})
		if err != nil {
			return exitcode.TempFailf("--%s %s: %v (try another port)", flagMetricsListen, cfg.metricsAddr, err)
		}
		defer stop()
		cliutil.Notef(stderr, c.App.Name, "metrics on http://%s/metrics", addr) // even with -q: port 0 is known only here
	}

	s.view = newServerView(cfg, note)
	s.dispatcher.pool.recheck = func(srv *server) { s.recheck(s.stops.dispatch, be, srv, note) }
	viewCtx, stopView := context.WithCancel(context.Background())
	var viewRunning sync.WaitGroup
	defer func() {
		// Joined, not only stopped: nothing of the run reads on after it
		// returns (its readings use settings a caller may change then).
		stopView()
		viewRunning.Wait()
	}()
	s.dispatcher.start = func() { // with the first request to send
		sizeServers(c.Context, cfg, be, s.dispatcher.pool, note)
		s.dispatcher.kvFrom(servers)
		// The servers said their context length: before any worker starts.
		s.dispatcher.fit = newContextFit(cfg, servers)
		if turns != nil {
			turns.fit = s.dispatcher.fit
		}
		s.view.share = newShareControl(s.dispatcher.pool, servers, be, cfg.shared, note)
		viewRunning.Add(1)
		go func() {
			defer viewRunning.Done()
			s.view.run(viewCtx)
		}()
	}
	statusDone := make(chan struct{})
	if cfg.statusFile != "" {
		status = runview.NewStatusWriter(cfg.statusFile, func() engine.Snapshot { return s.snapshot(total) }, cfg.progressEvery, statusWarn)
	}

	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		prog.Run(func() engine.Snapshot { return s.snapshot(total) }, stopProgress)
	}()
	go func() {
		defer close(statusDone)
		if status != nil {
			status.Loop(stopProgress)
		}
	}()
	reading = true
	err = s.run(c.Context, in)
	close(stopProgress)
	<-progressDone
	<-statusDone
	stopView()
	if status != nil {
		// The last state, with the error the run exits with.
		defer func() { status.Finish(err, s.stopReason()) }()
	}

	if n := s.reader.skipped.Load(); n > 0 { // shown even with -q: it is about the data
		cliutil.Notef(stderr, c.App.Name, "skipped %s (--%s)", cliutil.Count(n, "invalid line"), cliutil.FlagSkipInvalid)
	}
	if !cfg.quiet {
		cliutil.Notef(stderr, c.App.Name, "%s", s.summary())
	}
	for _, passed := range s.budget.passed() { // shown even with -q: it is about the money
		cliutil.Notef(stderr, c.App.Name, "%s", passed)
	}
	if n := s.usage.replaced.Load(); n > 0 { // shown even with -q: it is about the money
		cliutil.Notef(stderr, c.App.Name, "%s counted from the answer itself: the server's usage was missing or implausible", cliutil.Count(n, "answer"))
	}
	if retok != nil {
		if n := retok.fallbacks.Load(); n > 0 {
			cliutil.Notef(stderr, c.App.Name, "%s re-tokenized from the answer's text alone: the chat template does not render an answer after its prompt", cliutil.Count(n, "answer"))
		}
	}
	if ferr := out.Flush(); err == nil && ferr != nil && !errors.Is(ferr, context.Canceled) {
		err = ferr
	}
	return err
}

// startLine says what the run will do, naming the limits a user should know
// about before the first token is paid for.
func startLine(cfg *config, maxTokensSet bool) string {
	src := "the default; set --max-tokens"
	if maxTokensSet {
		src = "--max-tokens"
	}
	s := fmt.Sprintf("%s backend, %s, max_tokens %d (%s), retries %d, timeout %v",
		cfg.kind.Name, cliutil.Count(int64(len(cfg.urls)), "server"), cfg.params.MaxTokens, src, cfg.retries, cfg.timeout)
	if cfg.tokenBudget > 0 {
		s += fmt.Sprintf(", token budget %s %s", cliutil.Thousands(cfg.tokenBudget), cfg.countMode)
	}
	if cfg.costBudget > 0 {
		s += fmt.Sprintf(", cost budget $%.2f", cfg.costBudget)
	}
	return s
}

// earlyStatus is the status of a run that ended before its first request:
// spent tokens and records in the --already files, and why.
func earlyStatus(cfg *config, spent, records int64, reason string) runview.Early {
	e := runview.Early{Spent: spent, Records: records, Reason: reason,
		TokenBudget: cfg.tokenBudget, CostBudget: cfg.costBudget, CountMode: cfg.countMode.String()}
	for _, u := range cfg.urls {
		e.URLs = append(e.URLs, backend.WithoutUserinfo(u))
	}
	return e
}

// newBackend builds the backend of --backend.
func newBackend(cfg *config) backend.Backend {
	opts := backend.Options{
		Stream:           cfg.stream,
		IdleTimeout:      cfg.idle,
		MaxInFlightBytes: cfg.answerMem,
		APIKey:           cfg.apiKey,
		Referer:          cfg.referer,
		Title:            cfg.title,
		Model:            cfg.model,
	}
	return cfg.kind.New(opts)
}

// newServers makes a server of each --url; sizeServers gives each its
// concurrency limiter once the run has a request to send.
func newServers(cfg *config) []*server {
	servers := make([]*server, len(cfg.urls))
	for i, u := range cfg.urls {
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
func sizeServers(ctx context.Context, cfg *config, be backend.Backend, p *pool, note func(string, ...any)) {
	infos := make([]*backend.ServerInfo, len(p.servers))
	errs := make([]error, len(p.servers))
	for i, srv := range p.servers {
		// With --concurrency N only a backend whose requests name no
		// model asks: the server's information names it, for gen.model,
		// and says its context length.
		if cfg.fixedConc == 0 || !cfg.kind.NeedsModel {
			infos[i], errs[i] = serverInfo(ctx, be, srv.base)
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
func sizeServer(cfg *config, srv *server, info *backend.ServerInfo, err error, note func(string, ...any)) {
	if info != nil {
		srv.model = info.Model
		srv.contextLength, srv.maxCompletion = info.ContextLength, info.MaxCompletionTokens
	}
	switch {
	case cfg.fixedConc > 0:
		srv.limiter = capacity.Fixed(cfg.fixedConc)
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
	info, err := serverInfo(ctx, be, srv.base)
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

func serverInfo(ctx context.Context, be backend.Backend, url string) (*backend.ServerInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, serverInfoTimeout)
	defer cancel()
	return be.ServerInfo(ctx, url)
}
