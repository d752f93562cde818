package runview

import (
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/iostreams"
)

// stderrOn is streams whose stderr is a terminal of cols columns (0: it
// does not say), or no terminal.
func stderrOn(terminal bool, cols int) *iostreams.IOStreams {
	s, _, _, _ := iostreams.Test()
	s.SetStderrTTY(terminal)
	s.SetTerminalWidth(cols)
	return s
}

func TestProgressFitsTheTerminal(t *testing.T) {
	t.Setenv("TERM", "xterm")
	t.Setenv("NO_COLOR", "")
	t.Setenv("COLUMNS", "80") // what the terminal says wins over the shell's hint
	p := NewProgress(stderrOn(true, 132), time.Minute)
	if !p.live || p.width != 131 || p.every != LiveRedraw {
		t.Errorf("on a 132-column terminal: live %v, width %d, every %v; want live, 131 (one short of the edge), every %v", p.live, p.width, p.every, LiveRedraw)
	}
}

func TestProgressTerminalWithoutSize(t *testing.T) {
	t.Setenv("TERM", "xterm")
	for _, tc := range []struct {
		columns string
		want    int
	}{
		{"", DefaultColumns - 1},
		{"150", 149},
		{"wide", DefaultColumns - 1},
	} {
		t.Run("COLUMNS="+tc.columns, func(t *testing.T) {
			t.Setenv("COLUMNS", tc.columns)
			p := NewProgress(stderrOn(true, 0), time.Minute)
			if !p.live || p.width != tc.want {
				t.Errorf("live %v, width %d; want live, %d", p.live, p.width, tc.want)
			}
		})
	}
}

func TestProgressNotATerminal(t *testing.T) {
	t.Setenv("TERM", "xterm")
	if p := NewProgress(stderrOn(false, 132), time.Minute); p.live || p.every != time.Minute {
		t.Errorf("stderr no terminal: live %v, every %v; want plain lines every minute", p.live, p.every)
	}
}
