package tokstat

import (
	"fmt"
	"testing"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/softfail"
)

// TestHelpNamesConstants: the description states the constants the code
// applies: the repetition rule's, the stale rule's and how many bad lines
// are named.
func TestHelpNamesConstants(t *testing.T) {
	for _, p := range cliutil.Unsaid(NewApp().Description,
		fmt.Sprintf("the last max(%d, %dp) tokens repeat with a period p of at most %d", softfail.MinLoop, softfail.LoopRepeats, softfail.MaxPeriod),
		fmt.Sprintf("has not rewritten it for %s intervals and %s;", cliutil.Word(staleIntervals), aDuration(staleGrace)),
		fmt.Sprintf("names the first %s with their FILE:LINE", cliutil.Word(cliutil.ShownInvalid)),
	) {
		t.Errorf("the description does not say %q", p)
	}
	for d, want := range map[string]string{aDuration(60e9): "a minute", aDuration(90e9): "1m30s"} {
		if d != want {
			t.Errorf("got %q, want %q", d, want)
		}
	}
}
