package cliutil

import (
	"io"
	"os"
	"sync/atomic"
)

// watchedWriter is stdout as Main hands it to a tool: it remembers the first
// failed write, so that what a library prints without checking (urfave/cli's
// --help and --version) cannot fail silently: "tool --help > /dev/full" must
// not exit 0.
type watchedWriter struct {
	w        io.Writer
	terminal bool // stdout's fact, from the run's IOStreams
	err      atomic.Pointer[error]
}

func (w *watchedWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		w.err.CompareAndSwap(nil, &err)
	}
	return n, err
}

// File is the file under the writer, if it is one: the tools look at what
// stdout is (the same file as an input, opened to append) through it.
func (w *watchedWriter) File() *os.File {
	f, _ := w.w.(*os.File)
	return f
}

// Terminal reports whether stdout is a terminal, as the run's IOStreams
// says: iostreams.IsTerminal asks it, so that a test that sets the fact is
// believed by every writer over stdout.
func (w *watchedWriter) Terminal() bool { return w.terminal }

// failed is the first write error, or nil.
func (w *watchedWriter) failed() error {
	if p := w.err.Load(); p != nil {
		return *p
	}
	return nil
}
