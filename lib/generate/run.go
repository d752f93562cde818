package generate

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	defer limitMemory(cfg.answerMem)()
	r := &launch{c: c, cfg: cfg, stderr: c.App.ErrWriter}
	// A run that ends before it starts (budget already reached, a key
	// that cannot pay, a bad input) still says so in its status file.
	spent, alreadyRecords := int64(0), int64(0)
	earlyReason := "stopped before the first request"
	if cfg.statusFile != "" {
		defer func() {
			if r.status == nil {
				runview.WriteEarlyStatus(cfg.statusFile, earlyStatus(cfg, spent, alreadyRecords, earlyReason), err, r.statusWarn)
			}
		}()
	}
	// The first signal drains the requests in flight: Main must wait for it.
	cliutil.SetSignalGrace(c.Context, cfg.drainTimeout+3*time.Second)

	// The inputs are checked first: a typo must not wait on a slow server.
	// Reading stops when dispatching does.
	stops := newStops()
	defer stops.end()
	in, err := r.openInput(stops)
	if err != nil {
		return err
	}
	spent, alreadyRecords, full, err := r.readAlready()
	if err != nil || full {
		in.Close()
		if full {
			earlyReason = "already at or over budget"
		}
		return err
	}
	return r.execute(stops, in, spent, alreadyRecords)
}

// execute sends the requests of in, with the views on, and reports how it
// went; spent and records are the --already files'. It closes in.
func (r *launch) execute(stops *stops, in *jsonl.Reader, spent, records int64) (err error) {
	c, cfg := r.c, r.cfg
	reading := false // from then on the scheduler's reader closes in
	defer func() {
		if !reading {
			in.Close()
		}
	}()
	out := jsonl.NewWriter(c.App.Writer)
	s, turns, errsFile, err := r.newScheduler(stops, spent, records, out)
	if err != nil {
		return err
	}
	if errsFile != nil {
		defer func() {
			if cerr := errsFile.Close(); err == nil {
				err = cerr
			}
		}()
	}
	total := r.total()
	stopMetrics, err := r.serveMetrics(s, total)
	if err != nil {
		return err
	}
	defer stopMetrics()
	stopView, joinView := r.watchServers(s, turns)
	defer func() {
		// Joined, not only stopped: nothing of the run reads on after it
		// returns (its readings use settings a caller may change then).
		stopView()
		joinView()
	}()
	if cfg.statusFile != "" {
		r.status = runview.NewStatusWriter(cfg.statusFile, func() engine.Snapshot { return s.snapshot(total) }, cfg.progressEvery, r.statusWarn)
	}
	stopViews := r.startViews(s, total, r.status)
	reading = true
	err = s.run(c.Context, in)
	stopViews()
	stopView()
	if r.status != nil {
		// The last state, with the error the run exits with.
		defer func() { r.status.Finish(err, s.stopReason()) }()
	}
	r.report(s)
	if ferr := out.Flush(); err == nil && ferr != nil && !errors.Is(ferr, context.Canceled) {
		err = ferr
	}
	return err
}

// limitMemory sets the soft memory limit for answers of answerMem bytes in
// flight, unless the user set GOMEMLIMIT; the returned func puts the
// previous limit back.
func limitMemory(answerMem int64) func() {
	if os.Getenv("GOMEMLIMIT") != "" { // a limit the user set wins
		return func() {}
	}
	// --max-answer-memory bounds what the answers in flight hold; the
	// buffers of answers that failed or were written are garbage the
	// collector would otherwise let pile up to twice the live heap before
	// collecting. Near this limit it collects sooner.
	previous := debug.SetMemoryLimit(answerMem + memoryHeadroom)
	return func() { debug.SetMemoryLimit(previous) }
}

// launch is one run of generate: its command line and streams, and the
// steps that set the run up around the scheduler and report on it.
type launch struct {
	c      *cli.Context
	cfg    *config
	stderr io.Writer // the progress's console (mainWith made it)
	// status keeps --status-file once the run starts; nil before (and
	// without one), when a run that ends writes an early status.
	status *runview.StatusWriter
}

// warn prints a line on stderr, even with -q.
func (r *launch) warn(format string, args ...any) {
	cliutil.Notef(r.stderr, r.c.App.Name, format, args...)
}

// note prints a line on stderr unless -q.
func (r *launch) note(format string, args ...any) {
	if !r.cfg.quiet {
		r.warn(format, args...)
	}
}

// statusWarn says what went wrong with --status-file.
func (r *launch) statusWarn(format string, args ...any) {
	r.warn("--"+flagStatusFile+" "+format, args...)
}

// openInput opens the request files (stdin without any); reading stops
// when dispatching does.
func (r *launch) openInput(stops *stops) (*jsonl.Reader, error) {
	opt := r.cfg.input
	opt.Context = stops.dispatch
	// Requests are prompts, often written without a final newline; the
	// --already files are outputs, where such a line is torn.
	opt.LastLineRecord = true
	return jsonl.Open(r.c.App.Reader, r.cfg.inputs, opt)
}

// readAlready counts the tokens and records of the --already files that
// exist, and checks the settings they were made with; full when they are
// at or over the token budget already (said on stderr).
func (r *launch) readAlready() (spent, records int64, full bool, err error) {
	cfg := r.cfg
	already := jsonl.ExistingFiles(cfg.already, func(path string) {
		r.note("--%s %s does not exist yet: counted as empty", flagAlready, path)
	})
	if len(already) == 0 {
		return 0, 0, false, nil
	}
	scan := record.NewScanner(cfg.idPath, false, "")
	sum, err := record.SumTokens(r.c.App.Reader, already, cfg.input, scan, cfg.countMode)
	if err != nil {
		return 0, 0, false, err
	}
	if sum.Uncounted > 0 {
		return 0, 0, false, exitcode.DataErrorf("%s %s: --%s cannot count it against --%s (%s in all); an output of --output-format openai-batch is cut by budget-cut: %s",
			sum.FirstUncounted, record.NoCount, flagAlready, flagTokenBudget, cliutil.Count(sum.Uncounted, "such record"), record.CountHint)
	}
	if err := checkProvenance(&sum.Provenance, cfg, r.warn); err != nil {
		return sum.Tokens, sum.Records, false, err
	}
	if sum.Tokens >= cfg.tokenBudget {
		r.note("already at or over budget: %s of %s %s tokens spent; sending nothing", cliutil.Thousands(sum.Tokens), cliutil.Thousands(cfg.tokenBudget), cfg.countMode)
		return sum.Tokens, sum.Records, true, nil
	}
	return sum.Tokens, sum.Records, false, nil
}

// total is the records expected: --total, else counted in the input when
// it is a regular file, times --samples; 0 unknown.
func (r *launch) total() int64 {
	if r.cfg.total != 0 {
		return r.cfg.total
	}
	return countRecords(r.c.App.Reader, r.cfg.inputs) * int64(r.cfg.samples)
}

// loadTemplate loads the --tokenizer model: the answers are re-tokenized
// with it (retok), or with --turns all each turn's conversation is (turns);
// all nil without one.
func loadTemplate(cfg *config) (tmpl *chat.Model, retok *retokenizer, turns *turnRunner, err error) {
	if cfg.tokenizer != "" {
		if tmpl, err = chat.Load(cfg.tokenizer, chat.TemplateAuto, nil); err != nil {
			return nil, nil, nil, err
		}
		if err = tmpl.SetToolDeclaration(cfg.declaration); err != nil {
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

// newScheduler reads what the run needs before its first request (the
// worst price, the API key), creates --errors (the caller closes it), says
// what the run will do, loads the --tokenizer model and builds the
// scheduler; stops was made before the input was opened, spent and
// records are the --already files'.
func (r *launch) newScheduler(stops *stops, spent, records int64, out *jsonl.Writer) (s *scheduler, turns *turnRunner, errsFile *jsonl.OutputFile, err error) {
	c, cfg := r.c, r.cfg
	usdPerToken, err := worstPrice(c.Context, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := readKey(c.Context, cfg, r.note)
	if err != nil {
		return nil, nil, nil, err
	}
	var errs *jsonl.Writer
	if cfg.errors != "" {
		if errsFile, err = jsonl.CreateOutput(cfg.errors, false, cliutil.Warner(c)); err != nil {
			return nil, nil, nil, err
		}
		errs = errsFile.Writer
	}
	r.note("%s", startLine(cfg, c.IsSet(flagMaxTokens)))
	tmpl, retok, turns, err := loadTemplate(cfg)
	if err != nil {
		if errsFile != nil {
			errsFile.Close()
		}
		return nil, nil, nil, err
	}
	be, servers := newBackend(cfg), newServers(cfg)
	s = newScheduler(schedulerOptions{
		cfg:     cfg,
		backend: be,
		servers: servers,
		budget:  newBudget(cfg, spent, usdPerToken),
		out:     out,
		errs:    errs,
		note:    r.note,
		warn:    r.warn,
		stops:   stops,
		retok:   retok,
		batch:   newBatchInput(cfg, tmpl),
		turns:   turns,
	})
	s.already, s.alreadyRecords, s.key = spent, records, key
	return s, turns, errsFile, nil
}

// serveMetrics starts --metrics-listen; the returned func stops it.
func (r *launch) serveMetrics(s *scheduler, total int64) (func(), error) {
	cfg := r.cfg
	if cfg.metricsAddr == "" {
		return func() {}, nil
	}
	host, _ := os.Hostname()
	addr, stop, err := runview.ServeMetrics(cfg.metricsAddr, func() *statusfile.Status {
		return runview.Status(s.snapshot(total), cfg.progressEvery, host, nil)
	})
	if err != nil {
		return nil, exitcode.TempFailf("--%s %s: %v (try another port)", flagMetricsListen, cfg.metricsAddr, err)
	}
	r.warn("metrics on http://%s/metrics", addr) // even with -q: port 0 is known only here
	return stop, nil
}

// watchServers sets up the server view, and the sizing of the servers when
// the dispatcher has its first request to send: their capacity, context
// length and load readings. stop ends the view's readings; join waits for
// them to end.
func (r *launch) watchServers(s *scheduler, turns *turnRunner) (stop, join func()) {
	cfg, note := r.cfg, r.note
	be, servers := s.workers.be, s.dispatcher.pool.servers
	s.view = newServerView(cfg, note)
	s.dispatcher.pool.recheck = func(srv *server) { s.recheck(s.stops.dispatch, be, srv, note) }
	viewCtx, stopView := context.WithCancel(context.Background())
	var viewRunning sync.WaitGroup
	s.dispatcher.start = func() { // with the first request to send
		sizeServers(r.c.Context, cfg, be, s.dispatcher.pool, note)
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
	return stopView, viewRunning.Wait
}

// startViews runs the progress line and the status file (nil: none) until
// the returned func, which stops them and waits for their last write.
func (r *launch) startViews(s *scheduler, total int64, status *runview.StatusWriter) func() {
	var prog *runview.Progress
	if !r.cfg.quiet {
		prog = runview.NewProgress(cliutil.Streams(r.c), r.cfg.progressEvery)
	}
	snapshot := func() engine.Snapshot { return s.snapshot(total) }
	stop := make(chan struct{})
	var running sync.WaitGroup
	running.Add(1)
	go func() {
		defer running.Done()
		prog.Run(snapshot, stop)
	}()
	if status != nil {
		running.Add(1)
		go func() {
			defer running.Done()
			status.Loop(stop)
		}()
	}
	return func() {
		close(stop)
		running.Wait()
	}
}

// report says how the run went: the summary (unless -q), and even with -q
// what is about the data or the money.
func (r *launch) report(s *scheduler) {
	if n := s.reader.skipped.Load(); n > 0 { // about the data
		r.warn("skipped %s (--%s)", cliutil.Count(n, "invalid line"), cliutil.FlagSkipInvalid)
	}
	if !r.cfg.quiet {
		r.warn("%s", s.summary())
	}
	for _, passed := range s.budget.passed() { // about the money
		r.warn("%s", passed)
	}
	if n := s.usage.replaced.Load(); n > 0 { // about the money
		r.warn("%s counted from the answer itself: the server's usage was missing or implausible", cliutil.Count(n, "answer"))
	}
	if retok := s.workers.retok; retok != nil {
		if n := retok.fallbacks.Load(); n > 0 {
			r.warn("%s re-tokenized from the answer's text alone: the chat template does not render an answer after its prompt", cliutil.Count(n, "answer"))
		}
	}
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
