package estimate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/capacity"
)

// The help states generate's sizing constants, which estimate models: from
// lib/capacity, so that they cannot drift from it.
func TestHelpNamesConstants(t *testing.T) {
	app := NewApp()
	help := strings.Join(strings.Fields(app.Description), " ")
	for _, want := range []string{
		fmt.Sprintf("as many as the cache holds, plus %.0f%%)", 100*capacity.QueueMargin),
		fmt.Sprintf("in flight (%d, one more per window of answers;", capacity.AIMDStart),
	} {
		if !strings.Contains(help, want) {
			t.Errorf("the description does not say %q", want)
		}
	}
	if strings.Contains(help, "{{") {
		t.Errorf("the description holds a template action: %q", help[strings.Index(help, "{{"):])
	}
	for _, f := range app.Flags {
		if f.Names()[0] == flagConcurrency {
			if usage := fmt.Sprint(f); !strings.Contains(usage, fmt.Sprintf("from %d up", capacity.AIMDStart)) {
				t.Errorf("--%s's usage does not say it starts at %d: %s", flagConcurrency, capacity.AIMDStart, usage)
			}
		}
	}
}
