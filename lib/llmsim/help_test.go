package llmsim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/sim"
)

// TestHelpNamesConstants: the help states lib/sim's defaults and what the
// simulated key reports.
func TestHelpNamesConstants(t *testing.T) {
	flags := NewApp().Flags
	def := sim.Default()
	for flag, want := range map[string]string{
		flagLengths:      fmt.Sprintf("(default: fixed:%d)", def.Lengths.Fixed),
		flagKeyRateLimit: "requests per " + sim.KeyRateInterval + " that GET /api/v1/key reports",
	} {
		if help := cliutil.FlagHelp(flags, flag); !strings.Contains(help, want) {
			t.Errorf("--%s's help does not say %q: %s", flag, want, help)
		}
	}
	// The description says the times default to zero.
	if len(cliutil.Unsaid(description, "(all zero: as fast as the machine allows)")) > 0 {
		t.Errorf("the description no longer says the times default to zero: update this test")
	} else if def.StepTime != 0 || def.PerTokenTime != 0 || def.PrefillTimePerToken != 0 {
		t.Errorf("sim's default times are %v, %v and %v: the description says all zero", def.StepTime, def.PerTokenTime, def.PrefillTimePerToken)
	}
	if def.Lengths.Kind != sim.LengthFixed {
		t.Errorf("sim's default lengths are %s: this test reads a fixed length", def.Lengths)
	}
}
