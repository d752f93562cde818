package generate

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// outcome is how a job ended.
type outcome struct {
	job       *job
	res       *backend.Result
	err       *backend.Error
	attempts  int
	cancelled bool
}

// scheduler runs the requests: a dispatcher that starts one goroutine per
// request while the servers, the budgets and the reorder window allow, the
// request goroutines that attempt and retry, and a collector that writes
// every outcome.
type scheduler struct {
	cfg         *config
	be          backend.Backend
	backendName string
	paramsJSON  []byte
	pool        *pool
	kvServers   []*server // the servers sized from their KV cache
	budget      *budget
	lengths     *lengthModel
	parser      *parser
	out         *jsonl.Writer
	errs        *jsonl.Writer // nil without --errors
	note        func(format string, args ...any)
	reorder     *reorder     // nil without --ordered
	retok       *retokenizer // nil without --tokenizer

	results chan *outcome
	wg      sync.WaitGroup
	// unwritten counts outcomes handed to the collector and not yet
	// written: a slow reader of stdout must hold back the dispatching, or
	// finished answers would pile up in memory.
	unwritten atomic.Int64
	written   chan struct{}

	// dispatchCtx ends the dispatching; runCtx the requests in flight.
	dispatchCtx  context.Context
	stopDispatch context.CancelCauseFunc
	runCtx       context.Context
	cancelRun    context.CancelCauseFunc

	start   time.Time
	read    atomic.Int64
	skipped atomic.Int64 // invalid lines passed over (--skip-invalid)
	// retriesExhausted counts records that failed with a failure worth
	// retrying (a server error, a bad answer, a timeout) after their last
	// retry: a run where they are all there is must be tried again later.
	retriesExhausted atomic.Int64

	mu         sync.Mutex
	tally      tally
	inFlight   map[*job]time.Time
	promptSum  int64 // prompt tokens of the requests dispatched
	dispatched int64
	sized      bool
	stopReason string
	failure    error // what makes the run fail, first one wins
	readErr    error
}

// newScheduler prepares a run; dispatch is the context that reading and
// dispatching stop with, and stop ends it.
func newScheduler(cfg *config, be backend.Backend, servers []*server, b *budget, out, errs *jsonl.Writer, note func(string, ...any),
	dispatch context.Context, stop context.CancelCauseFunc) *scheduler {
	s := &scheduler{
		cfg:          cfg,
		be:           be,
		backendName:  be.Name(),
		paramsJSON:   paramsJSON(cfg.params),
		pool:         newPool(servers, giveUpAfter(cfg)),
		budget:       b,
		lengths:      newLengthModel(cfg.params.MaxTokens),
		parser:       newParser(cfg),
		out:          out,
		errs:         errs,
		note:         note,
		results:      make(chan *outcome, 256),
		written:      make(chan struct{}, 1),
		inFlight:     map[*job]time.Time{},
		start:        time.Now(),
		dispatchCtx:  dispatch,
		stopDispatch: stop,
	}
	for _, srv := range servers {
		if _, ok := srv.limiter.(*kvSizer); ok {
			s.kvServers = append(s.kvServers, srv)
		}
	}
	if cfg.ordered {
		s.reorder = newReorder(cfg.window)
	}
	s.runCtx, s.cancelRun = context.WithCancelCause(context.Background())
	return s
}

// errStopped is the cause of a planned stop (budget, end of input).
var errStopped = errors.New("stopped")

// stop ends dispatching; with cancel, the requests in flight too. The first
// reason given is the one reported.
func (s *scheduler) stop(reason string, failure error, cancel bool) {
	s.mu.Lock()
	if s.stopReason == "" {
		s.stopReason = reason
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

// run reads in and processes every record until the input ends or the run
// is stopped; sig is cancelled by the first SIGINT/SIGTERM.
func (s *scheduler) run(sig context.Context, in *jsonl.Reader) error {
	records := make(chan *job)
	go s.readInput(in, records)
	collected := make(chan struct{})
	go s.collect(collected)
	go s.watchSignal(sig)
	go s.tune()

	s.dispatch(records)
	s.wg.Wait()
	close(s.results)
	<-collected
	s.stopDispatch(errStopped)
	s.cancelRun(errStopped)

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure != nil {
		return s.failure
	}
	if cause := cliutil.Interrupted(sig); cause != nil {
		return cause
	}
	if s.readErr != nil {
		return s.readErr
	}
	return s.nothingSucceeded()
}

// nothingSucceeded is the run's error when no record succeeded and some
// failed for good with a failure a later run may not meet (exit 75, so that
// a cron job or a retry loop tries again): exit 0 would read as "done" with
// nothing written. Records refused for themselves (HTTP 400) alone are not
// a reason to try again. The caller holds s.mu.
func (s *scheduler) nothingSucceeded() error {
	failed := s.retriesExhausted.Load()
	if s.tally.ok > 0 || failed == 0 {
		return nil
	}
	where := ""
	if s.cfg.errors != "" {
		where = " (they are in " + s.cfg.errors + ")"
	}
	return exitcode.TempFailf("no record succeeded: %s failed with server errors, bad answers or timeouts after --retries %d%s; try again later",
		cliutil.Thousands(failed), s.cfg.retries, where)
}

// watchSignal turns the first signal into a stop that lets the requests in
// flight finish for up to --drain-timeout.
func (s *scheduler) watchSignal(sig context.Context) {
	select {
	case <-s.dispatchCtx.Done():
		// Dispatching ended for another reason; a signal still cuts the
		// drain of the requests in flight short.
		select {
		case <-sig.Done():
		case <-s.runCtx.Done():
			return
		}
	case <-sig.Done():
	}
	cause := context.Cause(sig)
	s.stop("stopped by "+signalWord(cause), nil, s.cfg.drainTimeout == 0)
	if s.cfg.drainTimeout > 0 {
		t := time.NewTimer(s.cfg.drainTimeout)
		defer t.Stop()
		select {
		case <-t.C:
			s.cancelRun(cause)
		case <-s.runCtx.Done():
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

// readInput parses records and hands them to the dispatcher one at a time,
// so that reading never runs ahead of what can be sent. It owns in: when
// the run ends it may still be blocked reading a quiet pipe.
func (s *scheduler) readInput(in *jsonl.Reader, records chan<- *job) {
	defer in.Close()
	defer close(records)
	var seq int64
	for in.Next() {
		j, err := s.parser.parse(in.Bytes())
		if err != nil {
			if err := in.Invalid(err); err != nil {
				s.setReadErr(err)
				return
			}
			s.skipped.Add(1)
			continue
		}
		j.seq = seq
		seq++
		s.read.Add(1)
		select {
		case records <- j:
		case <-s.dispatchCtx.Done():
			return
		}
	}
	if s.dispatchCtx.Err() == nil {
		s.setReadErr(in.Err())
	}
}

func (s *scheduler) setReadErr(err error) {
	s.mu.Lock()
	if s.readErr == nil {
		s.readErr = err
	}
	s.mu.Unlock()
}

// dispatch starts requests while the servers, the budgets and the reorder
// window allow.
func (s *scheduler) dispatch(records <-chan *job) {
	var next int64
	for {
		if s.reorder != nil && !s.reorder.waitRoom(s.dispatchCtx, next) {
			return
		}
		if !s.waitWritten() {
			return
		}
		var j *job
		select {
		case r, ok := <-records:
			if !ok {
				return
			}
			j = r
		case <-s.dispatchCtx.Done():
			return
		}
		next = j.seq + 1
		s.sizeFirst(j)
		r, err := s.budget.reserve(s.dispatchCtx, j.promptTokens, j.req.Params.MaxTokens)
		if errors.Is(err, errBudgetReached) {
			// Nothing is in flight: there is nothing to cancel or drain.
			s.mu.Lock()
			s.tally.cut++
			s.mu.Unlock()
			s.emit(j.seq, nil)
			s.stop("budget reached: the next request might pass it even with nothing in flight", nil, false)
			return
		}
		if err != nil {
			return // dispatching stopped while waiting for room
		}
		j.reserve = r
		j.kvTokens = j.promptTokens + int(s.expectedCompletion())
		srv, err := s.pool.acquire(s.dispatchCtx, j.kvTokens)
		if err != nil {
			s.budget.cancel(r)
			if errors.Is(err, errNoServer) {
				s.stop("no server reachable", s.pool.unreachable(), true)
			}
			return
		}
		j.server = srv
		s.mu.Lock()
		s.inFlight[j] = time.Now()
		s.promptSum += int64(j.promptTokens)
		s.dispatched++
		s.mu.Unlock()
		s.wg.Add(1)
		go s.work(j)
	}
}

// sizeFirst sizes the KV-bound servers from the first record's prompt, so
// that the first wave is not sized blind.
func (s *scheduler) sizeFirst(j *job) {
	s.mu.Lock()
	first := !s.sized
	s.sized = true
	s.mu.Unlock()
	if first && len(s.kvServers) > 0 {
		s.resize(float64(j.promptTokens), s.lengths.estimate(nil).kvShare)
	}
}

// resize re-sizes every KV-bound server and logs significant changes.
func (s *scheduler) resize(meanPrompt, kvShare float64) {
	for _, srv := range s.kvServers {
		k := srv.limiter.(*kvSizer)
		if k.resize(meanPrompt, kvShare) {
			s.note("%s: %s", srv.url, k)
		}
	}
	s.pool.wake()
}

// expectedCompletion is the mean answer length expected now.
func (s *scheduler) expectedCompletion() float64 {
	return s.lengths.cachedMean()
}

// tune re-estimates lengths every second and re-sizes the servers.
func (s *scheduler) tune() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.runCtx.Done():
			return
		case <-t.C:
		}
		est, meanPrompt := s.estimate()
		if len(s.kvServers) > 0 && meanPrompt > 0 {
			s.resize(meanPrompt, est.kvShare)
		}
	}
}

// estimate asks the length model about the requests in flight now.
func (s *scheduler) estimate() (lengthEstimate, float64) {
	s.mu.Lock()
	now := time.Now()
	ages := make([]time.Duration, 0, len(s.inFlight))
	for _, started := range s.inFlight {
		ages = append(ages, now.Sub(started))
	}
	var meanPrompt float64
	if s.dispatched > 0 {
		meanPrompt = float64(s.promptSum) / float64(s.dispatched)
	}
	s.mu.Unlock()
	return s.lengths.estimate(ages), meanPrompt
}

// work attempts one request until it succeeds, fails for good, or the run
// is cancelled, and hands the outcome to the collector.
func (s *scheduler) work(j *job) {
	defer s.wg.Done()
	o := &outcome{job: j}
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			srv, err := s.pool.acquire(s.runCtx, j.kvTokens)
			if errors.Is(err, errNoServer) {
				// Not this record's failure: a later run does it.
				s.stop("no server reachable", s.pool.unreachable(), true)
				o.cancelled = true
				break
			}
			if err != nil {
				o.cancelled = true
				break
			}
			j.server = srv
		}
		j.req.Attempt, o.attempts = attempt, attempt
		res, err := s.attempt(j)
		if err == nil {
			s.pool.release(j.server, j.kvTokens, attemptOK, 0, "")
			if s.retok != nil && res.OutputIDs == nil {
				res.OutputIDs = s.retok.outputIDs(j, res)
			}
			o.res = res
			break
		}
		if s.runCtx.Err() != nil {
			s.pool.release(j.server, j.kvTokens, attemptCancelled, 0, "")
			o.cancelled = true
			break
		}
		e := err.(*backend.Error)
		s.pool.release(j.server, j.kvTokens, poolOutcome(e), e.RetryAfter, shortCause(e))
		if e.Fatal {
			o.err = e
			s.stop("stopped: "+e.Message, fatalError(j.server.url, e), true)
			break
		}
		if !e.Retryable || attempt > s.cfg.retries {
			o.err = e
			if e.Retryable {
				s.retriesExhausted.Add(1)
			}
			break
		}
		if !s.sleep(backoffDelay(attempt, s.cfg.backoff, e.RetryAfter)) {
			o.cancelled = true
			break
		}
	}
	s.mu.Lock()
	delete(s.inFlight, j)
	s.mu.Unlock()
	s.unwritten.Add(1)
	s.results <- o
}

// maxUnwritten bounds the finished answers waiting for stdout.
const maxUnwritten = 1024

// waitWritten waits while too many answers wait for stdout; false when
// dispatching stopped meanwhile.
func (s *scheduler) waitWritten() bool {
	for s.unwritten.Load() >= maxUnwritten {
		select {
		case <-s.written:
		case <-s.dispatchCtx.Done():
			return false
		}
	}
	return true
}

// attempt sends one attempt; a failure is always a *backend.Error.
func (s *scheduler) attempt(j *job) (*backend.Result, error) {
	ctx, cancel := s.runCtx, context.CancelFunc(func() {})
	if s.cfg.timeout > 0 {
		ctx, cancel = context.WithTimeout(s.runCtx, s.cfg.timeout)
	}
	defer cancel()
	res, err := s.be.Do(ctx, j.server.url, &j.req)
	if err != nil {
		return nil, classify(err, ctx)
	}
	return res, nil
}

// sleep waits d unless the run is cancelled first.
func (s *scheduler) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.runCtx.Done():
		return false
	}
}

// giveUpAfter is how long requests wait while every server is down: as long
// as the retries of one request would have waited, plus one sideline for a
// probe to go through.
func giveUpAfter(cfg *config) time.Duration {
	d := firstSideline
	for a := 1; a <= cfg.retries; a++ {
		d += min(cfg.backoff<<min(a-1, 16), maxBackoff)
	}
	return d
}

// fatalError is the run's error for a refusal that no retry can fix.
func fatalError(url string, e *backend.Error) error {
	hint := ""
	switch e.Kind {
	case backend.KindAuth:
		hint = " (check the API key: $OPENROUTER_API_KEY, $OPENAI_API_KEY or --api-key-file)"
	case backend.KindCredits:
		hint = " (add credits, then re-run: finished records are kept)"
	}
	return exitcode.NoPermf("%s: HTTP %d: %s%s", url, e.Status, e.Message, hint)
}
