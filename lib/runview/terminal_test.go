package runview

import (
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal of cols x rows and returns its terminal
// side, the file a program's stderr is when a person watches it.
func openPTY(t *testing.T, cols, rows uint16) *os.File {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows}); err != nil {
		t.Fatalf("set pty size: %v", err)
	}
	return tty
}

func TestProgressFitsTheTerminal(t *testing.T) {
	t.Setenv("TERM", "xterm")
	t.Setenv("NO_COLOR", "")
	t.Setenv("COLUMNS", "80") // what the terminal says wins over the shell's hint
	p := NewProgress(openPTY(t, 132, 40), time.Minute)
	if !p.live || p.width != 131 {
		t.Errorf("on a 132-column terminal: live %v, width %d; want live, 131 (one short of the edge)", p.live, p.width)
	}
}

func TestProgressTerminalWithoutSize(t *testing.T) {
	t.Setenv("TERM", "xterm")
	for _, tc := range []struct {
		columns string
		want    int
	}{
		{"", defaultColumns - 1},
		{"150", 149},
		{"wide", defaultColumns - 1},
	} {
		t.Run("COLUMNS="+tc.columns, func(t *testing.T) {
			t.Setenv("COLUMNS", tc.columns)
			p := NewProgress(openPTY(t, 0, 0), time.Minute)
			if !p.live || p.width != tc.want {
				t.Errorf("live %v, width %d; want live, %d", p.live, p.width, tc.want)
			}
		})
	}
}

func TestProgressNotATerminal(t *testing.T) {
	t.Setenv("TERM", "xterm")
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	// The null device is a character device, as a terminal is, but no
	// terminal: a bar redrawn there would be bytes thrown away each second.
	if p := NewProgress(null, time.Minute); p.live || p.every != time.Minute {
		t.Errorf("the null device: live %v, every %v; want plain lines every minute", p.live, p.every)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if p := NewProgress(w, time.Minute); p.live {
		t.Error("a pipe: live bar; want plain lines")
	}
}
