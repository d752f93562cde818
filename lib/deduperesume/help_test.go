package deduperesume

import (
	"fmt"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/idset"
)

// TestHelpNamesConstants: the help states what a done id costs as the set
// that holds them does (idset.IDOverhead, checked there against its layout).
func TestHelpNamesConstants(t *testing.T) {
	help := strings.Join(strings.Fields(NewApp().Description), " ")
	if want := fmt.Sprintf("Done ids take about their length plus %d bytes of memory each.", idset.IDOverhead); !strings.Contains(help, want) {
		t.Errorf("the description does not say %q", want)
	}
}
