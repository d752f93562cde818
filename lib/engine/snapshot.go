// Package engine is generate's request engine: built from one Config
// (config.go; the command translates its flags into it), New builds a run,
// Run sends its requests and Snapshot (snapshot.go, state.go) is the plain
// value the views (lib/runview) read, so that they need none of its
// internals.
//
// A run (engine.go, scheduler.go) has three parts, each the only owner of
// its state: the dispatcher (dispatch.go) decides what may start from the
// servers' slots (pool.go: breaker and in-flight counts; their limits are
// lib/capacity's, and share.go hands capacity the servers' load), the
// budgets (budget.go, tally.go, usage.go), the context length (contextfit.go)
// and the --ordered window (reorder.go), and names what holds it (limit.go);
// a worker per request (worker.go) makes its attempts and retries (retry.go),
// a conversation's turns (turns.go) and re-tokenizes answers
// (retokenize.go); the collector (collect.go, sink.go) is the only writer of
// stdout and the errors file, settles the budgets and keeps the tally. They
// wait for each other through one primitive, notice (notice.go). Records
// are parsed by job.go (batch.go for OpenAI Batch files, samples.go for
// --samples) and written by records.go; serverview.go reads the servers'
// own load reports, which steer the sizing; eta.go estimates the time left.
package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/servermetrics"
)

// Snapshot is where a run stands at one moment: its counts, rates and ETA,
// its standing and the servers' own view. It is a copy: reading it holds
// no lock of the engine.
type Snapshot struct {
	Started time.Time
	Elapsed time.Duration
	// Records expected (--total, or counted in a regular file); 0: unknown.
	Total int64
	// Records in the --already files, and read from the input.
	AlreadyRecords, Read int64
	// Outcomes: finished records, and of them ok, failed, cut by a
	// budget, cancelled at a stop.
	Done, OK, Errors, Cut, Cancelled int64
	// Soft failures among the ok answers.
	Truncated, Empty, Aborted int64
	InFlight                  int
	// Tokens of this run's answers, and both as the token budget counts
	// them (CountMode) with the earlier runs' included.
	PromptTokens, CompletionTokens, CountedTokens int64
	RequestsPerSecond, TokensPerSecond            float64
	MeanCompletion                                float64
	// Limit is what holds the requests in flight down; "": nothing.
	Limit string
	ETA   time.Duration
	// HasETA: ETA is an estimate; ETALater: one is coming, once enough
	// answers are in.
	HasETA, ETALater bool
	Standing         Standing
	// CountMode names what the token budget counts ("total", ...).
	CountMode string
	// Servers are each --url's latest reading.
	Servers []ServerReading
}

// ServerReading is one server's state: sidelined or not, and its latest
// load report.
type ServerReading struct {
	URL        string // as printed: without user information
	Down       bool
	Metrics    servermetrics.Snapshot
	HasMetrics bool
}

// Key is what an OpenRouter-style server said of the run's API key at the
// start (GET /key): its limit and what it could still spend.
type Key struct {
	URL  string
	Info servermetrics.Key
}

// Text is the key's standing counting what this run spent since it was
// read: "key $6.67 of $10.00 left".
func (k *Key) Text(spent float64) string {
	if !k.Info.Limited {
		return fmt.Sprintf("key $%.2f spent, no limit", k.Info.Usage+spent)
	}
	return fmt.Sprintf("key $%.2f of $%.2f left", max(k.Info.Remaining-spent, 0), k.Info.Limit)
}

// Standing is where a run stands beyond its counts, for the progress line,
// the summary and the status file: the budgets counting what earlier runs
// wrote (--already), the soft failures among the answers, the retries and
// the servers down, and the servers' own view.
type Standing struct {
	// Tokens written against --token-budget, earlier runs' included, and
	// the earlier runs' part; TokenBudget 0: none.
	TokensSpent, Already, TokenBudget int64
	USDSpent, USDBudget               float64 // USDBudget 0: none
	// Soft failures among the ok answers.
	OK, Truncated, Empty, Aborted int64
	Retries                       int64 // attempts after a record's first
	RateLimited                   int64 // attempts answered 429
	ServersDown, Servers          int   // sidelined now, of all
	Sidelines                     int64 // times a server was sidelined
	Server                        servermetrics.Snapshot
	HasServer                     bool
	Key                           *Key // nil: not an OpenRouter key
}

func share(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// BudgetText is "budget 1,234,567/5,000,000 total tokens (24.7%, 400,000 by
// earlier runs), $0.12 of $5.00"; "" without budgets.
func (st Standing) BudgetText(mode string) string {
	var parts []string
	if st.TokenBudget > 0 {
		p := fmt.Sprintf("budget %s/%s %s tokens (%.1f%%", cliutil.Thousands(st.TokensSpent), cliutil.Thousands(st.TokenBudget), mode, share(st.TokensSpent, st.TokenBudget))
		if st.Already > 0 {
			p += fmt.Sprintf(", %s by earlier runs", cliutil.Thousands(st.Already))
		}
		parts = append(parts, p+")")
	}
	if st.USDBudget > 0 {
		parts = append(parts, fmt.Sprintf("$%.4f of $%.2f", st.USDSpent, st.USDBudget))
	}
	if st.Key != nil {
		parts = append(parts, st.Key.Text(st.USDSpent))
	}
	return strings.Join(parts, ", ")
}

// SoftText is "soft failures: 12 truncated (1.2%), 3 empty (0.3%)"; "" when
// there are none.
func (st Standing) SoftText() string {
	var parts []string
	for _, f := range []struct {
		n          int64
		what, note string
	}{{st.Truncated, "truncated", ""}, {st.Empty, "empty", ""}, {st.Aborted, "aborted", ", no end of sequence"}} {
		if f.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s (%.1f%%%s)", cliutil.Thousands(f.n), f.what, share(f.n, st.OK), f.note))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "soft failures: " + strings.Join(parts, ", ")
}

// TroubleText is "17 retries, 5 rate-limited (HTTP 429), 1 of 2 servers
// down"; "" when
// nothing went wrong.
func (st Standing) TroubleText() string {
	var parts []string
	if st.Retries > 0 {
		word := "retries"
		if st.Retries == 1 {
			word = "retry"
		}
		parts = append(parts, cliutil.Thousands(st.Retries)+" "+word)
	}
	if st.RateLimited > 0 {
		parts = append(parts, cliutil.Thousands(st.RateLimited)+" rate-limited (HTTP 429)")
	}
	if st.ServersDown > 0 {
		parts = append(parts, fmt.Sprintf("%d of %s down", st.ServersDown, cliutil.Count(int64(st.Servers), "server")))
	} else if st.Sidelines > 0 {
		parts = append(parts, fmt.Sprintf("servers down %s, all up now", cliutil.Count(st.Sidelines, "time")))
	}
	return strings.Join(parts, ", ")
}

// Plain is what a log line adds to the counts.
func (st Standing) Plain(mode string) string {
	var parts []string
	for _, p := range []string{st.BudgetText(mode), st.SoftText(), st.TroubleText()} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if st.HasServer {
		parts = append(parts, "server: "+st.Server.String())
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}

// BarParts are the live line's extra segments, the first kept longest.
func (st Standing) BarParts() []string {
	var parts []string
	if st.TokenBudget > 0 {
		parts = append(parts, fmt.Sprintf(" | budget %.0f%%", share(st.TokensSpent, st.TokenBudget)))
	}
	if st.HasServer {
		parts = append(parts, fmt.Sprintf(" | server %.0f run %.0f queued KV %.0f%%", st.Server.Running, st.Server.Queued, 100*st.Server.TokenUsage))
	}
	if t := st.TroubleText(); t != "" {
		parts = append(parts, " | "+t)
	}
	return parts
}
