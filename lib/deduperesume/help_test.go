package deduperesume

import (
	"fmt"
	"testing"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/idset"
)

// TestHelpNamesConstants: the help states what a done id costs as the set
// that holds them does (idset.IDOverhead, checked there against its layout).
func TestHelpNamesConstants(t *testing.T) {
	for _, p := range cliutil.Unsaid(NewApp().Description,
		fmt.Sprintf("Done ids take about their length plus %d bytes of memory each.", idset.IDOverhead)) {
		t.Errorf("the description does not say %q", p)
	}
}
