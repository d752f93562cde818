package jsonl

import (
	"bytes"
	"io"

	"github.com/synthpipe/synthpipe/lib/iostreams"
)

// DefaultWriteBuffer is the Writer's buffer size.
const DefaultWriteBuffer = 64 << 10

// Writer writes records as lines. It only ever hands whole lines to the
// underlying writer, so a process stopped between two writes leaves no torn
// record behind, and it is sticky: after the first error every call returns
// it (a closed pipe ends the run, it does not repeat).
type Writer struct {
	w         io.Writer
	buf       []byte
	size      int
	flushEach bool
	err       error
	// lines counts the lines that reached w whole, so that a caller can say
	// which records a failed write lost.
	lines int64
}

// NewWriter returns a Writer with a DefaultWriteBuffer buffer. It flushes
// after each record when w is a terminal (iostreams.IsTerminal: the stdout
// a tool is given answers from its IOStreams), where a person is watching.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, buf: make([]byte, 0, DefaultWriteBuffer), size: DefaultWriteBuffer, flushEach: iostreams.IsTerminal(w)}
}

// SetFlushEach makes every Write reach the underlying writer at once (slow
// producers, files that others tail).
func (w *Writer) SetFlushEach(on bool) { w.flushEach = on }

// Write writes line (without newline) and a newline.
func (w *Writer) Write(line []byte) error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) > 0 && len(w.buf)+len(line)+1 > w.size {
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if len(w.buf) == 0 && len(line) >= w.size/4 && cap(line) > len(line) && line[:len(line)+1][len(line)] == '\n' {
		// A long line fresh from a Reader is followed in memory by its own
		// newline: write it from there, whole, and skip copying it.
		return w.writeDirect(line[:len(line)+1])
	}
	w.buf = append(w.buf, line...)
	w.buf = append(w.buf, '\n')
	if w.flushEach || len(w.buf) >= w.size {
		return w.Flush()
	}
	return nil
}

// Flush writes what is buffered.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.w.Write(w.buf)
	if err == nil {
		n = len(w.buf)
	}
	w.lines += int64(bytes.Count(w.buf[:n], newline))
	if cap(w.buf) > 4*w.size {
		w.buf = make([]byte, 0, w.size) // a huge line came through: give it back
	} else {
		w.buf = w.buf[:0]
	}
	if err != nil {
		w.err = err
	}
	return err
}

// writeDirect writes one whole line, newline included, past the buffer.
func (w *Writer) writeDirect(p []byte) error {
	if n, err := w.w.Write(p); err != nil {
		if n == len(p) {
			w.lines++
		}
		w.err = err
		return err
	}
	w.lines++
	return nil
}

var newline = []byte{'\n'}

// Lines is the number of lines written whole to the underlying writer:
// after a failed write, the lines handed to Write beyond it were lost (a
// line cut short by it is not counted).
func (w *Writer) Lines() int64 { return w.lines }

// Buffered is the number of bytes not yet written.
func (w *Writer) Buffered() int { return len(w.buf) }
