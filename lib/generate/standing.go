package generate

import (
	"fmt"
	"strings"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/servermetrics"
)

// standing is where a run stands beyond its counts, for the progress line,
// the summary and the status file: the budgets counting what earlier runs
// wrote (--already), the soft failures among the answers, the retries and
// the servers down, and the servers' own view.
type standing struct {
	// Tokens written against --token-budget, earlier runs' included, and
	// the earlier runs' part; tokenBudget 0: none.
	tokensSpent, already, tokenBudget int64
	usdSpent, usdBudget               float64 // usdBudget 0: none
	// Soft failures among the ok answers.
	ok, truncated, empty, aborted int64
	retries                       int64 // attempts after a record's first
	rateLimited                   int64 // attempts answered 429
	serversDown, servers          int   // sidelined now, of all
	sidelines                     int64 // times a server was sidelined
	server                        servermetrics.Snapshot
	hasServer                     bool
	key                           *keyState // nil: not an OpenRouter key
}

// standing takes the figures now.
func (s *scheduler) standing() standing {
	t := s.collector.counts()
	st := standing{
		already: s.already, ok: t.ok, truncated: t.truncated, empty: t.empty, aborted: t.aborted,
		retries: s.workers.retries.Load(), rateLimited: s.workers.rateLimited.Load(), key: s.key,
	}
	st.tokensSpent, st.tokenBudget, st.usdSpent, st.usdBudget = s.budget.standing()
	st.serversDown, st.servers, st.sidelines = s.workers.pool.downNow()
	st.server, st.hasServer = s.view.now()
	return st
}

func share(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// budgetText is "budget 1,234,567/5,000,000 total tokens (24.7%, 400,000 by
// earlier runs), $0.12 of $5.00"; "" without budgets.
func (st standing) budgetText(mode string) string {
	var parts []string
	if st.tokenBudget > 0 {
		p := fmt.Sprintf("budget %s/%s %s tokens (%.1f%%", cliutil.Thousands(st.tokensSpent), cliutil.Thousands(st.tokenBudget), mode, share(st.tokensSpent, st.tokenBudget))
		if st.already > 0 {
			p += fmt.Sprintf(", %s by earlier runs", cliutil.Thousands(st.already))
		}
		parts = append(parts, p+")")
	}
	if st.usdBudget > 0 {
		parts = append(parts, fmt.Sprintf("$%.4f of $%.2f", st.usdSpent, st.usdBudget))
	}
	if st.key != nil {
		parts = append(parts, st.key.text(st.usdSpent))
	}
	return strings.Join(parts, ", ")
}

// softText is "soft failures: 12 truncated (1.2%), 3 empty (0.3%)"; "" when
// there are none.
func (st standing) softText() string {
	var parts []string
	for _, f := range []struct {
		n          int64
		what, note string
	}{{st.truncated, "truncated", ""}, {st.empty, "empty", ""}, {st.aborted, "aborted", ", no end of sequence"}} {
		if f.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s (%.1f%%%s)", cliutil.Thousands(f.n), f.what, share(f.n, st.ok), f.note))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "soft failures: " + strings.Join(parts, ", ")
}

// troubleText is "17 retries, 5 rate-limited (HTTP 429), 1 of 2 servers
// down"; "" when
// nothing went wrong.
func (st standing) troubleText() string {
	var parts []string
	if st.retries > 0 {
		word := "retries"
		if st.retries == 1 {
			word = "retry"
		}
		parts = append(parts, cliutil.Thousands(st.retries)+" "+word)
	}
	if st.rateLimited > 0 {
		parts = append(parts, cliutil.Thousands(st.rateLimited)+" rate-limited (HTTP 429)")
	}
	if st.serversDown > 0 {
		parts = append(parts, fmt.Sprintf("%d of %s down", st.serversDown, cliutil.Count(int64(st.servers), "server")))
	} else if st.sidelines > 0 {
		parts = append(parts, fmt.Sprintf("servers down %s, all up now", cliutil.Count(st.sidelines, "time")))
	}
	return strings.Join(parts, ", ")
}

// plain is what a log line adds to the counts.
func (st standing) plain(mode string) string {
	var parts []string
	for _, p := range []string{st.budgetText(mode), st.softText(), st.troubleText()} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if st.hasServer {
		parts = append(parts, "server: "+st.server.String())
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}

// barParts are the live line's extra segments, the first kept longest.
func (st standing) barParts() []string {
	var parts []string
	if st.tokenBudget > 0 {
		parts = append(parts, fmt.Sprintf(" | budget %.0f%%", share(st.tokensSpent, st.tokenBudget)))
	}
	if st.hasServer {
		parts = append(parts, fmt.Sprintf(" | server %.0f run %.0f queued KV %.0f%%", st.server.Running, st.server.Queued, 100*st.server.TokenUsage))
	}
	if t := st.troubleText(); t != "" {
		parts = append(parts, " | "+t)
	}
	return parts
}
