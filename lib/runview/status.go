package runview

import (
	"os"
	"sync"
	"time"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/engine"
	"github.com/synthpipe/synthpipe/lib/statusfile"
)

// defaultStatusEvery is how often the status file is rewritten when
// --progress-interval is 0 (no progress lines, but a file to watch).
const defaultStatusEvery = 30 * time.Second

// StatusWriter keeps --status-file up to date.
type StatusWriter struct {
	path     string
	snapshot func() engine.Snapshot
	every    time.Duration
	host     string
	warn     func(string, ...any)
	mu       sync.Mutex // one write at a time: the loop's and the last
	warned   bool
	finished bool
}

// NewStatusWriter writes the run's state, as snapshot says, to path every
// interval (defaultStatusEvery when every is 0); warn says a failed
// write, once: "PATH: error".
func NewStatusWriter(path string, snapshot func() engine.Snapshot, every time.Duration, warn func(string, ...any)) *StatusWriter {
	if every <= 0 {
		every = defaultStatusEvery
	}
	host, _ := os.Hostname()
	return &StatusWriter{path: path, snapshot: snapshot, every: every, host: host, warn: warn}
}

// Loop rewrites the file every interval until stop is closed.
func (w *StatusWriter) Loop(stop <-chan struct{}) {
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

// Finish writes the last state, with how the run ended: runErr, and why it
// stopped (reason; "" when its input ran out).
func (w *StatusWriter) Finish(runErr error, reason string) {
	code := cliutil.ExitCode(runErr)
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
func (w *StatusWriter) write(exit *statusfile.Exit) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return
	}
	st := Status(w.snapshot(), w.every, w.host, exit)
	if exit != nil {
		w.finished = true
	}
	if err := statusfile.Write(w.path, st); err != nil && !w.warned {
		w.warned = true
		w.warn("%s: %v (the run goes on without it)", w.path, err)
	}
}

// Status is the run's state in v, as the status file and --metrics-listen
// give it; every is the interval it is rewritten at, exit nil while the
// run goes on.
func Status(v engine.Snapshot, every time.Duration, host string, exit *statusfile.Exit) *statusfile.Status {
	st := v.Standing
	now := v.Started.Add(v.Elapsed)
	out := &statusfile.Status{
		Version: statusfile.Version, Tool: "generate", PID: os.Getpid(), Host: host,
		State: statusfile.StateRunning, Started: v.Started.UTC(), Updated: now.UTC(),
		ElapsedSeconds: v.Elapsed.Seconds(), IntervalSeconds: every.Seconds(),
		Records: statusfile.Records{
			Already: v.AlreadyRecords, Read: v.Read, Total: v.Total, Done: v.Done, OK: v.OK, Errors: v.Errors,
			Cut: v.Cut, Cancelled: v.Cancelled, InFlight: int64(v.InFlight),
			Truncated: v.Truncated, Empty: v.Empty, Aborted: v.Aborted,
			Retries: st.Retries, RateLimited: st.RateLimited,
		},
		Tokens: statusfile.Tokens{
			Prompt: v.PromptTokens, Completion: v.CompletionTokens,
			Spent: st.TokensSpent, Already: st.Already, Budget: st.TokenBudget, Count: v.CountMode,
		},
		Cost:  statusfile.Cost{SpentUSD: st.USDSpent, BudgetUSD: st.USDBudget},
		Rates: statusfile.Rates{RequestsPerSecond: v.RequestsPerSecond, OutputTokensPerSecond: v.TokensPerSecond},
		Exit:  exit,
	}
	if st.TokenBudget == 0 {
		// Without a budget, what the run wrote.
		out.Tokens.Spent = v.CountedTokens
	}
	if v.HasETA && exit == nil {
		eta := v.ETA.Seconds()
		out.ETASeconds = &eta
	}
	for _, r := range v.Servers {
		srv := statusfile.Server{URL: r.URL, Down: r.Down}
		if r.HasMetrics {
			m := r.Metrics
			srv.Metrics = &statusfile.Metrics{Source: m.Source, Running: m.Running, Queued: m.Queued, TokenUsage: m.TokenUsage, MaxTokenUsage: m.MaxTokenUsage,
				GenThroughput: m.GenThroughput, UsedTokens: m.UsedTokens, CacheHitRate: m.CacheHitRate, Ranks: m.Ranks}
		}
		out.Servers = append(out.Servers, srv)
	}
	if st.Key != nil {
		k := st.Key.Info
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

// Early is a run that ended before its first request: refused, or with
// nothing to do.
type Early struct {
	// Tokens and records the --already files hold.
	Spent, Records int64
	Reason         string
	TokenBudget    int64
	CostBudget     float64
	CountMode      string
	URLs           []string // as printed: without user information
}

// WriteEarlyStatus writes the status of a run that ended before its first
// request, with the error it exits with; warn says a failed write.
func WriteEarlyStatus(path string, e Early, runErr error, warn func(string, ...any)) {
	now := time.Now().UTC()
	host, _ := os.Hostname()
	code := cliutil.ExitCode(runErr)
	st := &statusfile.Status{
		Version: statusfile.Version, Tool: "generate", PID: os.Getpid(), Host: host,
		State: statusfile.StateFinished, Started: now, Updated: now,
		Records: statusfile.Records{Already: e.Records},
		Tokens:  statusfile.Tokens{Spent: e.Spent, Already: e.Spent, Budget: e.TokenBudget, Count: e.CountMode},
		Cost:    statusfile.Cost{BudgetUSD: e.CostBudget},
		Exit:    &statusfile.Exit{Code: code, Reason: e.Reason},
	}
	if code != 0 {
		st.State = statusfile.StateFailed
		if runErr != nil {
			st.Exit.Error = runErr.Error()
		}
	}
	for _, u := range e.URLs {
		st.Servers = append(st.Servers, statusfile.Server{URL: u})
	}
	if err := statusfile.Write(path, st); err != nil {
		warn("%s: %v", path, err)
	}
}
