package iostreams

import (
	"bytes"
	"fmt"
	"os"
	"testing"

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

func TestSystemOnATerminal(t *testing.T) {
	tty := openPTY(t, 132, 40)
	s := System(tty, tty, tty)
	if !s.IsStdinTTY() || !s.IsStdoutTTY() || !s.IsStderrTTY() || s.TerminalWidth() != 132 {
		t.Errorf("all on a 132-column terminal: %v %v %v, width %d", s.IsStdinTTY(), s.IsStdoutTTY(), s.IsStderrTTY(), s.TerminalWidth())
	}
	if s := System(tty, tty, openPTY(t, 0, 0)); !s.IsStderrTTY() || s.TerminalWidth() != 0 {
		t.Errorf("a terminal that does not say its size: terminal %v, width %d; want a terminal, 0", s.IsStderrTTY(), s.TerminalWidth())
	}
}

func TestSystemNotATerminal(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	var buf bytes.Buffer
	for _, tc := range []struct {
		name   string
		stream *os.File
	}{
		// The null device is a character device, as a terminal is, but
		// no terminal: a bar redrawn there, or a flush after each
		// record, would be work thrown away.
		{"the null device", null},
		{"a pipe", w},
	} {
		s := System(tc.stream, tc.stream, tc.stream)
		if s.IsStdinTTY() || s.IsStdoutTTY() || s.IsStderrTTY() || s.TerminalWidth() != 0 {
			t.Errorf("%s: a terminal (%v %v %v, width %d)", tc.name, s.IsStdinTTY(), s.IsStdoutTTY(), s.IsStderrTTY(), s.TerminalWidth())
		}
	}
	if s := System(&buf, &buf, &buf); s.IsStdinTTY() || s.IsStdoutTTY() || s.IsStderrTTY() {
		t.Error("a buffer: a terminal")
	}
}

// terminalSays is a stream that says whether it is a terminal.
type terminalSays struct {
	bytes.Buffer
	terminal bool
}

func (t *terminalSays) Terminal() bool { return t.terminal }

func TestIsTerminalAsksTheStreamFirst(t *testing.T) {
	if !IsTerminal(&terminalSays{terminal: true}) {
		t.Error("a stream that says it is a terminal: not one")
	}
	if IsTerminal(&terminalSays{}) {
		t.Error("a stream that says it is no terminal: one")
	}
}

func TestTestStreamsAreSettable(t *testing.T) {
	s, _, out, _ := Test()
	if s.IsStdinTTY() || s.IsStdoutTTY() || s.IsStderrTTY() {
		t.Fatal("test streams start as terminals")
	}
	s.SetStdoutTTY(true)
	s.SetTerminalWidth(80)
	c := s.WithErr(new(bytes.Buffer))
	if !c.IsStdoutTTY() || c.TerminalWidth() != 80 || c.Out != out {
		t.Errorf("WithErr lost the facts or stdout: %v %d", c.IsStdoutTTY(), c.TerminalWidth())
	}
}
