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
	w   io.Writer
	err atomic.Pointer[error]
}

func (w *watchedWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		w.err.CompareAndSwap(nil, &err)
	}
	return n, err
}

// File is the file under the writer, if it is one: the tools look at what
// stdout is (a terminal, the same file as an input) through it.
func (w *watchedWriter) File() *os.File {
	f, _ := w.w.(*os.File)
	return f
}

// failed is the first write error, or nil.
func (w *watchedWriter) failed() error {
	if p := w.err.Load(); p != nil {
		return *p
	}
	return nil
}
