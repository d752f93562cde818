package estimate

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/conversation"
	"github.com/synthpipe/synthpipe/lib/lengthdist"
)

// The help states generate's sizing constants, which estimate models, and
// estimate's own: from the code that applies them, so that they cannot drift.
func TestHelpNamesConstants(t *testing.T) {
	app := NewApp()
	for _, p := range cliutil.Unsaid(app.Description,
		fmt.Sprintf("as many as the cache holds, plus %.0f%%)", 100*capacity.QueueMargin),
		fmt.Sprintf("in flight (%d, one more per window of answers;", capacity.AIMDStart),
		fmt.Sprintf("for a dataset with fewer than %d answers in it", minDoneAnswers),
		fmt.Sprintf("one figure: sigma %g (p90 about %.1f x the median)", lengthdist.DefaultSigma, math.Exp(1.2815515655446004*lengthdist.DefaultSigma)),
		fmt.Sprintf("Each of --draws futures (default %d, seeded", defaultDraws),
		fmt.Sprintf("(its user and tool turns, at about %d bytes of their JSON a token,", conversation.BytesPerToken),
	) {
		t.Errorf("the description does not say %q", p)
	}
	for flag, want := range map[string]string{
		flagDraws:       fmt.Sprintf("(default: %d)", defaultDraws),
		flagConcurrency: fmt.Sprintf("from %d up", capacity.AIMDStart),
	} {
		if help := cliutil.FlagHelp(app.Flags, flag); !strings.Contains(help, want) {
			t.Errorf("--%s's help does not say %q: %s", flag, want, help)
		}
	}
}
