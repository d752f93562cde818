package engine

import (
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// outLine is a line for stdout; answer marks the result of a record that
// succeeded (the others: Batch failure lines), which the summary counts as
// ok once it has reached stdout.
type outLine struct {
	line   []byte
	answer bool
}

// sink is one output of the collector (stdout, the errors file) and what
// reached it. It remembers the lines handed to its writer until they reach
// it whole, each marked counted or not, so that after a failed write (a
// full disk) the summary says how many records it holds and how many were
// lost, not how many were handed to it. It is used by the collector only.
type sink struct {
	w       *jsonl.Writer
	name    string // "stdout", or the file's name
	pending []bool // counted or not, for each line handed since base
	base    int64  // w.Lines() when pending[0] was handed
	written int64  // counted lines that reached it
	lost    int64  // counted lines that did not
	err     error  // the first failed write
}

func newSink(w *jsonl.Writer, name string) *sink { return &sink{w: w, name: name} }

// write hands line to the writer.
func (s *sink) write(line []byte, counted bool) error {
	s.pending = append(s.pending, counted)
	err := s.w.Write(line)
	s.settle(err)
	return err
}

// flush writes what the writer holds.
func (s *sink) flush() error {
	err := s.w.Flush()
	s.settle(err)
	return err
}

// settle moves the lines that reached the writer out of pending; after a
// failure the writer writes nothing more, so the rest are lost.
func (s *sink) settle(err error) {
	done := int(s.w.Lines() - s.base)
	for _, counted := range s.pending[:done] {
		if counted {
			s.written++
		}
	}
	s.base += int64(done)
	s.pending = append(s.pending[:0], s.pending[done:]...)
	if err == nil {
		return
	}
	if s.err == nil {
		s.err = err
	}
	for _, counted := range s.pending {
		if counted {
			s.lost++
		}
	}
	s.pending = s.pending[:0] // the writer is sticky: Lines stays where it is
}

// lostWhere says where the lost lines were to go and why they did not get
// there, for the summary; "" while nothing was lost.
func (s *sink) lostWhere() string {
	if s.lost == 0 {
		return ""
	}
	if cliutil.IsBrokenPipe(s.err) {
		return s.name + " was closed"
	}
	return "writing " + s.name + " failed: " + s.err.Error()
}
