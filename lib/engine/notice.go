package engine

import (
	"context"
	"sync"
)

// notice is how the parts of a run tell each other that something they wait
// for may have changed: a slot on a server freed, a budget reservation
// settled, an answer written, the reorder window moved. A waiter takes the
// channel of the next notice before it looks at the state it waits for, so
// that a change between the look and the wait is never missed; notify wakes
// every waiter at once, and costs nothing while nobody waits.
//
// The zero value is ready to use; a notice must not be copied after first
// use.
type notice struct {
	mu sync.Mutex
	ch chan struct{} // closed by the next notify; nil while nobody waits
}

// next is closed by the next notify.
func (n *notice) next() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

// notify wakes everything waiting on next.
func (n *notice) notify() {
	n.mu.Lock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
	n.mu.Unlock()
}

// await waits until ready holds, looking again after each notify; false
// when ctx ends first. ready must read state whose changes are notified.
func (n *notice) await(ctx context.Context, ready func() bool) bool {
	for {
		woken := n.next()
		if ready() {
			return true
		}
		select {
		case <-woken:
		case <-ctx.Done():
			return false
		}
	}
}
