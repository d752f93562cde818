package estimate

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/conversation"
	"github.com/synthpipe/synthpipe/lib/lengthdist"
)

// The help states generate's sizing constants, which estimate models, and
// estimate's own: from the code that applies them, so that they cannot drift.
func TestHelpNamesConstants(t *testing.T) {
	app := NewApp()
	help := strings.Join(strings.Fields(app.Description), " ")
	for _, want := range []string{
		fmt.Sprintf("as many as the cache holds, plus %.0f%%)", 100*capacity.QueueMargin),
		fmt.Sprintf("in flight (%d, one more per window of answers;", capacity.AIMDStart),
		fmt.Sprintf("for a dataset with fewer than %d answers in it", minDoneAnswers),
		fmt.Sprintf("one figure: sigma %g (p90 about %.1f x the median)", lengthdist.DefaultSigma, math.Exp(1.2815515655446004*lengthdist.DefaultSigma)),
		fmt.Sprintf("Each of --draws futures (default %d, seeded", defaultDraws),
		fmt.Sprintf("(its user and tool turns, at about %d bytes of their JSON a token,", conversation.BytesPerToken),
	} {
		if !strings.Contains(help, want) {
			t.Errorf("the description does not say %q", want)
		}
	}
	if strings.Contains(help, "{{") {
		t.Errorf("the description holds a template action: %q", help[strings.Index(help, "{{"):])
	}
	for _, f := range app.Flags {
		if f.Names()[0] == flagDraws {
			if usage := fmt.Sprint(f); !strings.Contains(usage, fmt.Sprintf("(default: %d)", defaultDraws)) {
				t.Errorf("--%s's usage does not say its default is %d: %s", flagDraws, defaultDraws, usage)
			}
		}
		if f.Names()[0] == flagConcurrency {
			if usage := fmt.Sprint(f); !strings.Contains(usage, fmt.Sprintf("from %d up", capacity.AIMDStart)) {
				t.Errorf("--%s's usage does not say it starts at %d: %s", flagConcurrency, capacity.AIMDStart, usage)
			}
		}
	}
}
