package tokenizeprompts

import (
	"fmt"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/shuffle"
)

// TestHelpNamesConstants: the help states the constants the code applies:
// --shuffle-memory's default and a held record's cost, and how many bad
// lines --skip-invalid names.
func TestHelpNamesConstants(t *testing.T) {
	app := NewApp()
	for _, p := range cliutil.Unsaid(app.Description,
		fmt.Sprintf("held up to --shuffle-memory (%dMi; each record costs its bytes plus about %d)", defaultShuffleMemory>>20, shuffle.RecordOverhead)) {
		t.Errorf("the description does not say %q", p)
	}
	if help, want := cliutil.FlagHelp(app.Flags, flagShuffleMemory), fmt.Sprintf("(default: %dMi)", defaultShuffleMemory>>20); !strings.Contains(help, want) {
		t.Errorf("--%s's help does not say %q: %s", flagShuffleMemory, want, help)
	}
	var exit65 string
	for _, e := range app.Spec.ExitStatuses() {
		if e.Code == 65 {
			exit65 = e.Meaning
		}
	}
	if want := fmt.Sprintf("naming the first %s on stderr", cliutil.Word(cliutil.ShownInvalid)); !strings.Contains(exit65, want) {
		t.Errorf("exit status 65 does not say %q: %q", want, exit65)
	}
}
