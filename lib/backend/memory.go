package backend

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// The memory of the answers being received. MaxResponseBytes bounds one
// answer, but a server (or several) answering thousands of requests at once
// with huge bodies would still take the client's memory many times over: 8
// answers of 300 MB took 5.7 GB. So the answers in flight of one backend
// share one budget: each exchange holds what its answer takes so far (the
// body read, or a stream's line buffers and what its parser accumulated),
// and the answer that would pass the budget fails instead, retryably,
// releasing what it held.

// DefaultMaxInFlightBytes is Options.MaxInFlightBytes when 0: far above
// what thousands of ordinary answers hold together, far below trouble on a
// machine that runs a pipeline.
const DefaultMaxInFlightBytes = 1 << 30

// ErrAnswerMemory is the cause of the error (errors.Is finds it) of an
// answer that failed because the answers in flight held
// Options.MaxInFlightBytes, so that a caller can name its own setting.
var ErrAnswerMemory = errors.New("answers in flight hold too much memory")

// memBudget is the bytes the answers in flight may hold together.
type memBudget struct {
	limit int64
	used  atomic.Int64
}

func (m *memBudget) take(n int64) bool {
	if m.used.Add(n) > m.limit {
		m.used.Add(-n)
		return false
	}
	return true
}

func (m *memBudget) give(n int64) { m.used.Add(-n) }

// heldBytes is implemented by answer parsers that accumulate a stream's
// output: the bytes they hold.
type heldBytes interface {
	heldBytes() int64
}

// hold sets what this exchange's answer holds now to total bytes, taking
// the difference from the shared budget; an error when the budget has no
// room for it.
func (x *exchange) hold(total int64) *Error {
	if x.mem == nil {
		return nil
	}
	delta := total - x.held
	if delta <= 0 {
		x.mem.give(-delta)
		x.held = total
		return nil
	}
	if !x.mem.take(delta) {
		return &Error{Kind: KindProtocol, Retryable: true, cause: ErrAnswerMemory, Message: fmt.Sprintf(
			"the answers being received would hold more than %s together (this one %s so far): it gives way, to be retried",
			byteSize(x.mem.limit), byteSize(total))}
	}
	x.held = total
	return nil
}

// release gives back what the exchange held.
func (x *exchange) release() {
	if x.mem != nil && x.held > 0 {
		x.mem.give(x.held)
		x.held = 0
	}
}

// grow returns buf moved into a buffer of want bytes (at most most),
// charged to the memory bound before it is allocated: both buffers while
// the bytes are copied, then the new one alone.
func (x *exchange) grow(buf []byte, want, most int64) ([]byte, error) {
	want = min(want, most)
	if e := x.hold(int64(cap(buf)) + want); e != nil {
		return nil, e
	}
	bigger := make([]byte, len(buf), want)
	copy(bigger, buf)
	x.hold(want) // smaller: cannot fail
	return bigger, nil
}

// byteSize renders a byte count for messages: 1 GiB, 300 MiB, 12 KiB.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
