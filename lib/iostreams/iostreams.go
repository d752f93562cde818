// Package iostreams is a tool's standard streams with what is known about
// them: whether each is a terminal, and how wide stderr's terminal is. The
// terminal question is asked here, one way (an ioctl through
// golang.org/x/term: a terminal, not any character device), once per
// stream when the tool starts; the tools read the answers, and tests set
// them (Test, SetStdoutTTY...) instead of opening pseudo-terminals. It is
// its own package, under jsonl and cliutil, because both need it and
// cliutil imports jsonl.
package iostreams

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams is stdin, stdout and stderr and their terminal facts.
type IOStreams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer

	stdinTTY, stdoutTTY, stderrTTY bool
	width                          int
}

// System returns the streams a tool was started with, their facts read
// from the files under them: a stream that is no *os.File (a buffer, a pipe
// inside the process) is no terminal.
func System(in io.Reader, out, errw io.Writer) *IOStreams {
	s := &IOStreams{In: in, Out: out, Err: errw,
		stdinTTY: IsTerminal(in), stdoutTTY: IsTerminal(out), stderrTTY: IsTerminal(errw)}
	if f := FileOf(errw); s.stderrTTY && f != nil {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			s.width = cols
		}
	}
	return s
}

// Test returns streams over buffers (stdin empty), none a terminal until a
// Set method says so, and the buffers.
func Test() (s *IOStreams, in, out, errw *bytes.Buffer) {
	in, out, errw = new(bytes.Buffer), new(bytes.Buffer), new(bytes.Buffer)
	return &IOStreams{In: in, Out: out, Err: errw}, in, out, errw
}

// IsStdinTTY reports whether stdin is a terminal.
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// IsStdoutTTY reports whether stdout is a terminal: a person reads the
// records as they come.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY reports whether stderr is a terminal: a progress line can be
// redrawn in place there.
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// SetStdinTTY says whether stdin is a terminal.
func (s *IOStreams) SetStdinTTY(on bool) { s.stdinTTY = on }

// SetStdoutTTY says whether stdout is a terminal.
func (s *IOStreams) SetStdoutTTY(on bool) { s.stdoutTTY = on }

// SetStderrTTY says whether stderr is a terminal.
func (s *IOStreams) SetStderrTTY(on bool) { s.stderrTTY = on }

// TerminalWidth is the columns of stderr's terminal as the kernel knows it
// when the tool started (a window resized later is not followed); 0 when
// stderr is no terminal or the terminal does not say.
func (s *IOStreams) TerminalWidth() int { return s.width }

// SetTerminalWidth sets the columns of stderr's terminal (0: unknown).
func (s *IOStreams) SetTerminalWidth(cols int) { s.width = cols }

// WithOut returns a copy of s writing to out instead, with the same facts:
// a wrapper of stdout (one that counts, one that remembers errors) is still
// the same terminal.
func (s *IOStreams) WithOut(out io.Writer) *IOStreams {
	c := *s
	c.Out = out
	return &c
}

// WithErr returns a copy of s writing errors to errw, with the same facts.
func (s *IOStreams) WithErr(errw io.Writer) *IOStreams {
	c := *s
	c.Err = errw
	return &c
}

// IsTerminal reports whether a stream is a terminal: one that says so
// itself (a Terminal method, as the stdout that cliutil.Main hands a tool
// has, answering from its IOStreams), or a file on a terminal.
func IsTerminal(stream any) bool {
	if t, ok := stream.(interface{ Terminal() bool }); ok {
		return t.Terminal()
	}
	f := FileOf(stream)
	return f != nil && term.IsTerminal(int(f.Fd()))
}

// FileOf is the *os.File under a stream: the stream itself, or the file of a
// wrapper that says which (a File method, as cliutil's stdout has); nil for
// anything else (a pipe inside the process, a buffer). Tools ask it what
// only the file tells (Stat: a regular file, a pipe, the same file as an
// input; Fd: its open flags), never whether it is a terminal.
func FileOf(stream any) *os.File {
	switch s := stream.(type) {
	case *os.File:
		return s
	case interface{ File() *os.File }:
		return s.File()
	}
	return nil
}
