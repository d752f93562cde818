package generate

import (
	"os"
	"sync"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/statusfile"
)

// defaultStatusEvery is how often the status file is rewritten when
// --progress-interval is 0 (no progress lines, but a file to watch).
const defaultStatusEvery = 30 * time.Second

// statusWriter keeps --status-file up to date.
type statusWriter struct {
	path     string
	s        *scheduler
	total    int64
	every    time.Duration
	host     string
	warn     func(string, ...any)
	mu       sync.Mutex // one write at a time: the loop's and the last
	warned   bool
	finished bool
}

func newStatusWriter(path string, s *scheduler, total int64, every time.Duration, warn func(string, ...any)) *statusWriter {
	if every <= 0 {
		every = defaultStatusEvery
	}
	host, _ := os.Hostname()
	return &statusWriter{path: path, s: s, total: total, every: every, host: host, warn: warn}
}

// loop rewrites the file every interval until stop is closed.
func (w *statusWriter) loop(stop <-chan struct{}) {
	w.write(nil)
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			w.write(nil)
		}
	}
}

// finish writes the last state, with how the run ended.
func (w *statusWriter) finish(runErr error) {
	code := cliutil.ExitCode(runErr)
	reason, _ := w.s.stops.why()
	if reason == "" {
		reason = "input done"
	}
	exit := &statusfile.Exit{Code: code, Reason: reason}
	if runErr != nil && code != 0 {
		exit.Error = runErr.Error()
	}
	w.write(exit)
}

// write replaces the file; a failure is said once and does not stop the
// run (the data matters more than the view of it).
func (w *statusWriter) write(exit *statusfile.Exit) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return
	}
	st := w.build(exit)
	if exit != nil {
		w.finished = true
	}
	if err := statusfile.Write(w.path, st); err != nil && !w.warned {
		w.warned = true
		w.warn("--%s %s: %v (the run goes on without it)", flagStatusFile, w.path, err)
	}
}

// build takes the run's state now.
func (w *statusWriter) build(exit *statusfile.Exit) *statusfile.Status {
	return w.s.status(w.total, w.every, w.host, exit)
}

// status is the run's state now, as the status file and --metrics-listen
// give it; exit is nil while it runs.
func (s *scheduler) status(total int64, every time.Duration, host string, exit *statusfile.Exit) *statusfile.Status {
	v := s.progressView(total)
	t := s.collector.counts()
	st := v.standing
	now := time.Now()
	out := &statusfile.Status{
		Version: statusfile.Version, Tool: "generate", PID: os.Getpid(), Host: host,
		State: statusfile.StateRunning, Started: s.start.UTC(), Updated: now.UTC(),
		ElapsedSeconds: now.Sub(s.start).Seconds(), IntervalSeconds: every.Seconds(),
		Records: statusfile.Records{
			Already: s.alreadyRecords, Read: s.reader.read.Load(), Total: total, Done: t.finished(), OK: t.ok, Errors: t.errors,
			Cut: t.cut, Cancelled: t.cancelled, InFlight: int64(v.inFlight),
			Truncated: t.truncated, Empty: t.empty, Aborted: t.aborted,
			Retries: st.retries, RateLimited: s.workers.rateLimited.Load(),
		},
		Tokens: statusfile.Tokens{
			Prompt: t.promptTokens, Completion: t.completionTokens,
			Spent: st.tokensSpent, Already: st.already, Budget: st.tokenBudget, Count: v.countMode,
		},
		Cost:  statusfile.Cost{SpentUSD: st.usdSpent, BudgetUSD: st.usdBudget},
		Rates: statusfile.Rates{RequestsPerSecond: v.reqPerSec, OutputTokensPerSecond: v.tokPerSec},
		Exit:  exit,
	}
	if st.tokenBudget == 0 {
		// Without a budget, what the run wrote.
		out.Tokens.Spent = tokenCount(s.cfg.countMode, t.promptTokens, t.completionTokens) + st.already
	}
	if v.hasETA && exit == nil {
		eta := v.eta.Seconds()
		out.ETASeconds = &eta
	}
	down := s.workers.pool.downServers()
	for _, r := range s.view.readings() {
		srv := statusfile.Server{URL: r.url, Down: down[r.url]}
		if r.has {
			m := r.snap
			srv.Metrics = &statusfile.Metrics{Source: m.Source, Running: m.Running, Queued: m.Queued, TokenUsage: m.TokenUsage, MaxTokenUsage: m.MaxTokenUsage,
				GenThroughput: m.GenThroughput, UsedTokens: m.UsedTokens, CacheHitRate: m.CacheHitRate, Ranks: m.Ranks}
		}
		out.Servers = append(out.Servers, srv)
	}
	if s.key != nil {
		k := s.key.key
		out.Key = &statusfile.Key{Usage: k.Usage}
		if k.Limited {
			limit, rem := k.Limit, k.Remaining
			out.Key.Limit, out.Key.Remaining = &limit, &rem
		}
	}
	if exit != nil {
		out.State = statusfile.StateFinished
		if exit.Code != 0 {
			out.State = statusfile.StateFailed
		}
	}
	return out
}

// writeEarlyStatus writes the status of a run that ended before its first
// request: refused, or with nothing to do.
func writeEarlyStatus(cfg *config, spent, records int64, reason string, runErr error, warn func(string, ...any)) {
	now := time.Now().UTC()
	host, _ := os.Hostname()
	code := cliutil.ExitCode(runErr)
	st := &statusfile.Status{
		Version: statusfile.Version, Tool: "generate", PID: os.Getpid(), Host: host,
		State: statusfile.StateFinished, Started: now, Updated: now,
		Records: statusfile.Records{Already: records},
		Tokens:  statusfile.Tokens{Spent: spent, Already: spent, Budget: cfg.tokenBudget, Count: cfg.countMode.String()},
		Cost:    statusfile.Cost{BudgetUSD: cfg.costBudget},
		Exit:    &statusfile.Exit{Code: code, Reason: reason},
	}
	if code != 0 {
		st.State = statusfile.StateFailed
		if runErr != nil {
			st.Exit.Error = runErr.Error()
		}
	}
	for _, u := range cfg.urls {
		st.Servers = append(st.Servers, statusfile.Server{URL: backend.WithoutUserinfo(u)})
	}
	if err := statusfile.Write(cfg.statusFile, st); err != nil {
		warn("--%s %s: %v", flagStatusFile, cfg.statusFile, err)
	}
}
