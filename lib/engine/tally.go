package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/synthpipe/synthpipe/lib/cliutil"
)

// tally counts what became of the records, for the progress line and the
// closing summary. Its counters are updated by the collector goroutine
// only and read under the collector's lock.
type tally struct {
	read      int64 // records handed to the dispatcher
	ok        int64
	errors    int64
	cut       int64 // dropped by a budget
	cancelled int64 // in flight when the run stopped
	// Soft failures among ok.
	truncated, empty, aborted int64
	promptTokens              int64
	completionTokens          int64
	// lostAnswers counts the answers among ok that never reached stdout
	// (a full disk), lostErrors the errors that never reached --errors;
	// the where says why.
	lostAnswers, lostErrors    int64
	lostWhere, lostErrorsWhere string
	// retriesExhausted counts the errors that were worth retrying (a
	// server error, a bad answer, a timeout) after their last retry: a run
	// where they are all there is must be tried again later.
	retriesExhausted int64
	// contextOverflow counts the errors whose prompt does not fit the
	// context length (most refused before they were sent).
	contextOverflow int64
}

// money is what a run spent, and what of it went to failed attempts.
type money struct {
	spent, failed  float64
	failedAttempts int
}

// finished is every record that has an outcome.
func (t *tally) finished() int64 { return t.ok + t.errors + t.cut + t.cancelled }

// summary is the closing line: its counts add up to the records read.
func (t *tally) summary(elapsed time.Duration, errorsFile string, usd money, reason string) string {
	notStarted := t.read - t.finished()
	var b strings.Builder
	// ok is what was written: an answer that never reached stdout is
	// lost, and said where.
	fmt.Fprintf(&b, "%s read: %s ok", cliutil.Count(t.read, "record"), cliutil.Thousands(t.ok-t.lostAnswers))
	if t.truncated+t.empty+t.aborted > 0 {
		fmt.Fprintf(&b, " (%s truncated, %s empty, %s aborted)", cliutil.Thousands(t.truncated), cliutil.Thousands(t.empty), cliutil.Thousands(t.aborted))
	}
	if t.lostAnswers > 0 {
		fmt.Fprintf(&b, ", %s lost (answered, but %s, so not done: a rerun does them)", cliutil.Thousands(t.lostAnswers), t.lostWhere)
	}
	fmt.Fprintf(&b, ", %s", cliutil.Count(t.errors, "error"))
	var overflow string
	if t.contextOverflow > 0 {
		overflow = cliutil.Thousands(t.contextOverflow) + " context overflow; "
	}
	switch {
	case t.lostErrors > 0:
		fmt.Fprintf(&b, " (%s%s in %s, %s lost: %s)", overflow, cliutil.Thousands(t.errors-t.lostErrors), errorsFile, cliutil.Thousands(t.lostErrors), t.lostErrorsWhere)
	case t.errors > 0 && errorsFile != "":
		fmt.Fprintf(&b, " (%sin %s)", overflow, errorsFile)
	case overflow != "":
		fmt.Fprintf(&b, " (%s)", overflow[:len(overflow)-2])
	}
	fmt.Fprintf(&b, ", %s cut by budget, %s cancelled in flight, %s not started", cliutil.Thousands(t.cut), cliutil.Thousands(t.cancelled), cliutil.Thousands(notStarted))
	secs := max(elapsed.Seconds(), 1e-3)
	fmt.Fprintf(&b, "; %s prompt + %s completion tokens in %s (%.1f req/s, %s tok/s out)",
		cliutil.Thousands(t.promptTokens), cliutil.Thousands(t.completionTokens), elapsed.Round(100*time.Millisecond),
		float64(t.ok)/secs, cliutil.Thousands(int64(float64(t.completionTokens)/secs)))
	if usd.spent > 0 {
		fmt.Fprintf(&b, ", $%.4f", usd.spent)
	}
	if usd.failedAttempts > 0 {
		fmt.Fprintf(&b, " ($%.4f of it charged for %s that failed)", usd.failed, cliutil.Count(int64(usd.failedAttempts), "attempt"))
	}
	if reason != "" {
		b.WriteString("; " + reason)
	}
	return b.String()
}
