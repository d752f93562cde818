package jsonl

import (
	"bytes"
	"io"
	"unsafe"

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
	// hold: lines that lie in memory that stays as it is (a Reader's, or
	// the caller's own) followed by their newline are not copied but
	// held, as one span while they follow each other there, and written
	// at once (see HoldLines).
	hold      bool
	held      []byte
	heldLines int64 // the lines in held, counted as they are held
}

// HoldLines makes WriteStableLine keep lines where they are instead of
// copying them: lines that follow each other in memory are written with
// one write, whole. Their owner must write them (WriteHeld) before it
// reuses their memory: for a Reader's lines, Options.BeforeReuse =
// w.WriteHeld.
func (w *Writer) HoldLines() { w.hold = true }

// WriteStableLine writes line like Write; with HoldLines it may hold it
// where it lies instead of copying it. line must not change until
// WriteHeld (or Flush) has run: what a Reader's Bytes returned, until the
// reader runs BeforeReuse, or a line in a buffer of the caller's own that
// it writes over only after WriteHeld. Write is for every other line.
func (w *Writer) WriteStableLine(line []byte) error {
	if w.err == nil && w.holds(line) {
		return w.holdLine(line)
	}
	return w.Write(line)
}

// WriteHeld writes the lines held (see HoldLines).
func (w *Writer) WriteHeld() error {
	if w.err != nil || len(w.held) == 0 {
		return w.err
	}
	p, lines := w.held, w.heldLines
	w.held, w.heldLines = nil, 0
	n, err := w.w.Write(p)
	if err != nil && n < len(p) {
		// only the lines the failed write took whole count (counting
		// the span's newlines always, once, cost a pass over every
		// byte written)
		lines = int64(bytes.Count(p[:n], newline))
	}
	w.lines += lines
	w.err = err
	return err
}

// holds reports whether Write can hold line: it is followed by its newline
// in memory, and nothing is buffered before it.
func (w *Writer) holds(line []byte) bool {
	return w.hold && !w.flushEach && len(w.buf) == 0 && cap(line) > len(line) && line[:len(line)+1][len(line)] == '\n'
}

// holdLine adds line to the span held, or writes the span and starts
// another when line does not follow it in memory.
func (w *Writer) holdLine(line []byte) error {
	n := len(w.held)
	if n > 0 && n+len(line)+1 <= cap(w.held) && unsafe.Add(unsafe.Pointer(unsafe.SliceData(w.held)), n) == unsafe.Pointer(unsafe.SliceData(line)) {
		w.held = w.held[:n+len(line)+1]
		w.heldLines++
		return nil
	}
	if err := w.WriteHeld(); err != nil {
		return err
	}
	w.held, w.heldLines = line[:len(line)+1], 1
	return nil
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
	if err := w.WriteHeld(); err != nil {
		return err
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

// Flush writes what is buffered, and the lines held.
func (w *Writer) Flush() error {
	if err := w.WriteHeld(); err != nil {
		return err
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
func (w *Writer) Buffered() int { return len(w.buf) + len(w.held) }
