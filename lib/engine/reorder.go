package engine

import (
	"context"
	"slices"
	"sync"
)

// reorder holds results that completed before an earlier record, so that
// --ordered output follows the input. The dispatcher starts no record more
// than window ahead of the oldest one not yet written, which bounds what is
// held.
type reorder struct {
	mu     sync.Mutex
	next   int64 // the oldest sequence number not yet written
	window int64
	held   map[int64]outLine // nil line: that record has no output
	moved  notice            // next moved on
}

func newReorder(window int) *reorder {
	return &reorder{window: int64(window), held: map[int64]outLine{}}
}

// put takes the output of seq (a nil line: none) and returns the lines now
// ready.
func (r *reorder) put(seq int64, line outLine) []outLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held[seq] = line
	var ready []outLine
	for {
		l, ok := r.held[r.next]
		if !ok {
			break
		}
		delete(r.held, r.next)
		r.next++
		if l.line != nil {
			ready = append(ready, l)
		}
	}
	if len(ready) > 0 || seq == r.next-1 {
		r.moved.notify()
	}
	return ready
}

// waitRoom waits until seq is within the window; false when ctx ends first.
func (r *reorder) waitRoom(ctx context.Context, seq int64) bool {
	return r.moved.await(ctx, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return seq < r.next+r.window
	})
}

// rest returns what is still held, in order, when the run ends.
func (r *reorder) rest() []outLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	var seqs []int64
	for seq, l := range r.held {
		if l.line != nil {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	out := make([]outLine, len(seqs))
	for i, seq := range seqs {
		out[i] = r.held[seq]
	}
	r.held = map[int64]outLine{}
	return out
}
