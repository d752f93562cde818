package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/conversation"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// The scheduler wires the three parts of a run (see the package doc), ends
// the run through stops and reports progress. The goroutines: the reader,
// the dispatcher (run's own), one worker per request in flight, the
// collector, the signal watcher, the tuner and the progress printer.

// outcome is how a job ended.
type outcome struct {
	job       *job
	res       *backend.Result
	err       *backend.Error
	attempts  int
	cancelled bool
	cut       bool // refused by a budget before it started
	// exhausted: it failed with a failure worth retrying (a server error,
	// a bad answer, a timeout) after its last retry.
	exhausted bool
	// chargedUSD is what its failed attempts were charged.
	chargedUSD float64
	walk       *conversation.Walk // the conversation regenerated (--turns all)
}

// schedulerOptions is everything a run is built from.
type schedulerOptions struct {
	cfg     *Config
	backend backend.Backend
	servers []*server
	budget  *budget
	out     *jsonl.Writer
	errs    *jsonl.Writer // nil without --errors
	note    func(format string, args ...any)
	warn    func(format string, args ...any) // shown even with -q: about the data or the money
	stops   *Stops                           // made before the input is opened: reading stops with dispatching
	retok   *retokenizer                     // nil without --tokenizer
	batch   *batchInput                      // nil unless --input-format openai-batch
	turns   *turnRunner                      // nil unless --turns all
}

// scheduler wires the parts of a run.
type scheduler struct {
	cfg        *Config
	stops      *Stops
	reader     *reader
	dispatcher *dispatcher
	workers    *workers
	collector  *collector
	lengths    *capacity.LengthModel
	flight     *flight
	budget     *budget
	usage      *usageCheck
	start      time.Time
	// The run's standing beyond its counts (standing.go): what earlier
	// runs wrote, the servers' own view (nil: not read), the API key (nil:
	// unknown).
	already        int64 // tokens
	alreadyRecords int64
	view           *serverView
	key            *Key
	shownLimit     limitMark // the progress line's look at the dispatcher's waits
}

func newScheduler(o schedulerOptions) *scheduler {
	cfg := o.cfg
	lengths := capacity.NewLengthModel(cfg.Params.MaxTokens)
	pool := newPool(o.servers, giveUpAfter(cfg))
	fl := newFlight()
	var ro *reorder
	if cfg.Ordered {
		ro = newReorder(cfg.Window)
	}
	var errSink *sink
	if o.errs != nil {
		errSink = newSink(o.errs, cfg.Errors)
	}
	p := newParser(cfg)
	p.batch = o.batch
	col := &collector{
		cfg:         cfg,
		results:     make(chan *outcome, 256),
		backlog:     &backlog{},
		budget:      o.budget,
		lengths:     lengths,
		reorder:     ro,
		out:         newSink(o.out, "stdout"),
		errs:        errSink,
		stops:       o.stops,
		backendName: o.backend.Name(),
		ParamsJSON:  ParamsJSON(cfg.Params),
	}
	usage := &usageCheck{warn: o.warn}
	w := &workers{
		cfg:       cfg,
		be:        o.backend,
		pool:      pool,
		retok:     o.retok,
		usage:     usage,
		stops:     o.stops,
		flight:    fl,
		collector: col,
		budget:    o.budget,
		turns:     o.turns,
	}
	d := &dispatcher{
		pool:      pool,
		budget:    o.budget,
		lengths:   lengths,
		reorder:   ro,
		flight:    fl,
		stops:     o.stops,
		workers:   w,
		collector: col,
		note:      o.note,
		limits:    newLimits(time.Now),
		fit:       newContextFit(cfg, o.servers),
	}
	if o.turns != nil {
		o.turns.fit = d.fit
	}
	d.kvFrom(o.servers) // those sized already (tests); else the run's start
	return &scheduler{
		cfg:        cfg,
		stops:      o.stops,
		reader:     &reader{parser: p, stops: o.stops},
		dispatcher: d,
		workers:    w,
		collector:  col,
		lengths:    lengths,
		flight:     fl,
		budget:     o.budget,
		usage:      usage,
		start:      time.Now(),
	}
}

// run reads in and processes every record until the input ends or the run
// is stopped; sig is cancelled by the first SIGINT/SIGTERM.
func (s *scheduler) run(sig context.Context, in *jsonl.Reader) error {
	records := make(chan *job)
	go s.reader.run(in, records)
	collected := make(chan struct{})
	go s.collector.run(collected)
	go s.watchSignal(sig)
	go s.tune()

	s.dispatcher.run(records)
	s.workers.wait()
	s.collector.close()
	<-collected
	s.stops.end()

	if _, failure := s.stops.why(); failure != nil {
		return failure
	}
	if cause := cliutil.Interrupted(sig); cause != nil {
		return cause
	}
	if err := s.reader.err(); err != nil {
		return err
	}
	return s.nothingSucceeded()
}

// nothingSucceeded is the run's error when no record succeeded and some
// failed for good with a failure a later run may not meet (exit 75, so that
// a cron job or a retry loop tries again): exit 0 would read as "done" with
// nothing written. Records refused for themselves (HTTP 400) alone are not
// a reason to try again.
func (s *scheduler) nothingSucceeded() error {
	t := s.collector.counts()
	if t.ok > 0 || t.retriesExhausted == 0 {
		return nil
	}
	where := ""
	if s.cfg.Errors != "" {
		where = " (they are in " + s.cfg.Errors + ")"
	}
	return exitcode.TempFailf("no record succeeded: %s failed with server errors, bad answers or timeouts after --retries %d%s; try again later",
		cliutil.Thousands(t.retriesExhausted), s.cfg.Retries, where)
}

// summary is the closing line of the run.
func (s *scheduler) summary() string {
	t := s.collector.counts()
	t.read = s.reader.read.Load()
	reason, _ := s.stops.why()
	var usd money
	usd.spent, usd.failed, usd.failedAttempts = s.budget.spentUSD()
	line := t.summary(time.Since(s.start), s.cfg.Errors, usd, reason)
	// Then where the dataset stands, what went wrong on the way and the
	// servers' load.
	st := s.standing()
	st.HasServer = false // the summary gives the mean while busy instead
	line += st.Plain(s.cfg.CountMode.String())
	if v := s.view.summary(); v != "" {
		line += "; " + v
	}
	return line
}

// watchSignal turns the first signal into a stop that lets the requests in
// flight finish for up to --drain-timeout.
func (s *scheduler) watchSignal(sig context.Context) {
	select {
	case <-s.stops.dispatch.Done():
		// Dispatching ended for another reason; a signal still cuts the
		// drain of the requests in flight short.
		select {
		case <-sig.Done():
		case <-s.stops.run.Done():
			return
		}
	case <-sig.Done():
	}
	cause := context.Cause(sig)
	// The reason says what became of the requests in flight; "stopped by
	// SIGINT" is the run's error, printed once, last.
	reason := fmt.Sprintf("%s: no new requests, those in flight drained for up to --%s %v", signalWord(cause), FlagDrainTimeout, s.cfg.DrainTimeout)
	if s.cfg.DrainTimeout == 0 {
		reason = fmt.Sprintf("%s: the requests in flight cancelled (--%s 0)", signalWord(cause), FlagDrainTimeout)
	}
	s.stops.stop(reason, nil, s.cfg.DrainTimeout == 0)
	s.stops.endRetries(cause)
	if s.cfg.DrainTimeout > 0 {
		t := time.NewTimer(s.cfg.DrainTimeout)
		defer t.Stop()
		select {
		case <-t.C:
			s.stops.cancel(cause)
		case <-s.stops.run.Done():
		}
	}
}

func signalWord(err error) string {
	var se *cliutil.SignalError
	if errors.As(err, &se) {
		return se.Error()[len("stopped by "):]
	}
	return "a signal"
}

// tune re-estimates lengths every second and re-sizes the servers.
func (s *scheduler) tune() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var mark limitMark
	for {
		select {
		case <-s.stops.run.Done():
			return
		case <-t.C:
		}
		s.retune(s.dispatcher.limits.limiting(&mark) == heldByServer)
	}
}

// retune re-sizes the servers from the mean prompt of the requests
// dispatched and what the length model now says of answers; serverBound
// as for dispatcher.resize.
func (s *scheduler) retune(serverBound bool) {
	est, meanPrompt, _ := s.estimate()
	if meanPrompt > 0 {
		s.dispatcher.resize(meanPrompt, est.KVShare, serverBound)
	}
}

// estimate asks the length model about the requests in flight now; it also
// returns their mean prompt and how many there are.
func (s *scheduler) estimate() (capacity.LengthEstimate, float64, int) {
	ages, meanPrompt := s.flight.snapshot()
	return s.lengths.Estimate(ages), meanPrompt, len(ages)
}

// Stops ends a run in two steps: dispatching (no request starts any more,
// reading stops), then the requests in flight. The first reason and the
// first failure given are the ones reported.
type Stops struct {
	dispatch     context.Context
	stopDispatch context.CancelCauseFunc
	run          context.Context // the requests in flight
	cancelRun    context.CancelCauseFunc
	// retries ends with run, or earlier on a signal: a request in flight
	// may finish its attempt, but none waits for another (a back-off, a
	// Retry-After, a paused server) or starts one.
	retries    context.Context
	endRetries context.CancelCauseFunc

	mu      sync.Mutex
	reason  string
	failure error // what makes the run fail
}

// errStopped is the cause of a planned stop (budget, end of input).
var errStopped = errors.New("stopped")

// NewStops makes the stops of a run; the command makes them before it
// opens the input, whose reading ends when dispatching does (Reading).
func NewStops() *Stops {
	s := &Stops{}
	s.dispatch, s.stopDispatch = context.WithCancelCause(context.Background())
	s.run, s.cancelRun = context.WithCancelCause(context.Background())
	s.retries, s.endRetries = context.WithCancelCause(s.run)
	return s
}

// stop ends dispatching; with cancel, the requests in flight too.
func (s *Stops) stop(reason string, failure error, cancel bool) {
	s.mu.Lock()
	if s.reason == "" {
		s.reason = reason
	}
	if s.failure == nil {
		s.failure = failure
	}
	s.mu.Unlock()
	s.stopDispatch(errStopped)
	if cancel {
		s.cancelRun(errStopped)
	}
}

// cancel ends the requests in flight with cause, reporting no reason.
func (s *Stops) cancel(cause error) { s.cancelRun(cause) }

// Reading is the context the input is read under: it ends when
// dispatching does.
func (s *Stops) Reading() context.Context { return s.dispatch }

// End releases the stops' contexts once the run is over.
func (s *Stops) End() { s.end() }

// end releases both steps once the run is over.
func (s *Stops) end() {
	s.stopDispatch(errStopped)
	s.cancelRun(errStopped)
}

// why is the first reason and the first failure given.
func (s *Stops) why() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason, s.failure
}

// reader parses the input and hands the records to the dispatcher one at a
// time, so that reading never runs ahead of what can be sent.
type reader struct {
	parser  *parser
	stops   *Stops
	read    atomic.Int64 // records handed to the dispatcher
	skipped atomic.Int64 // invalid lines passed over (--skip-invalid)

	mu      sync.Mutex
	readErr error
}

// run reads until the input ends or dispatching stops. It owns in: when the
// run ends it may still be blocked reading a quiet pipe.
func (r *reader) run(in *jsonl.Reader, records chan<- *job) {
	defer in.Close()
	defer close(records)
	var seq int64
	for in.Next() {
		jobs, err := r.parser.parseAll(in.Bytes())
		if err != nil {
			if err := in.Invalid(err); err != nil {
				r.setErr(err)
				return
			}
			r.skipped.Add(1)
			continue
		}
		for _, j := range jobs {
			j.seq = seq
			seq++
			r.read.Add(1)
			select {
			case records <- j:
			case <-r.stops.dispatch.Done():
				return
			}
		}
	}
	if r.stops.dispatch.Err() == nil {
		r.setErr(in.Err())
	}
}

func (r *reader) setErr(err error) {
	r.mu.Lock()
	if r.readErr == nil {
		r.readErr = err
	}
	r.mu.Unlock()
}

// err is what ended the input early, if anything did.
func (r *reader) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.readErr
}
