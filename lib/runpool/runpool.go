// Package runpool runs functions on goroutines it keeps for the next one
// once they finish one, up to maxIdle of them. A function that reads and
// parses an answer, or prepares and sends a request, grows a goroutine's
// stack from the smallest (2 KiB) to 8 or 16 KiB, copying it on each step: a
// new goroutine per function paid that every time (a tenth to a sixth of
// generate's CPU at zero latency); a kept goroutine keeps its grown stack
// (see heldStack).
package runpool

import "sync"

// maxIdle bounds the goroutines kept idle: more than two cores' worth of
// functions in the time one takes to finish, and 2 MiB of stacks at most.
const maxIdle = 128

// idle is the goroutines kept for the next function, each waiting on its
// own channel.
var idle struct {
	mu      sync.Mutex
	waiting []chan func()
}

// Go runs f on an idle kept goroutine, or a new one. A function that
// panics ends the program, as on a goroutine of its own.
func Go(f func()) {
	idle.mu.Lock()
	if n := len(idle.waiting); n > 0 {
		c := idle.waiting[n-1]
		idle.waiting = idle.waiting[:n-1]
		idle.mu.Unlock()
		c <- f // buffered and empty: its goroutine takes it from there
		return
	}
	idle.mu.Unlock()
	go run(f)
}

// run runs f, then the functions handed to it while it is idle, until it
// finishes one when maxIdle goroutines are idle already.
func run(f func()) {
	c := make(chan func(), 1) // its sender never waits
	for {
		f()
		f = nil // not held while idle
		idle.mu.Lock()
		if len(idle.waiting) >= maxIdle {
			idle.mu.Unlock()
			return
		}
		idle.waiting = append(idle.waiting, c)
		idle.mu.Unlock()
		f = waitHolding(c)
	}
}

// heldStack is the stack an idle goroutine keeps in use while it waits. The
// collector halves the stack of a goroutine that uses less than a quarter
// of it, so a goroutine idle on a few hundred bytes lost the stack its
// functions grew (16 KiB for some of generate's) at every collection, and
// its next function grew it back, copying it at each doubling: 4% of
// generate's CPU against a fast server (CPU profile, 20,000 requests at
// concurrency 256), 0.5% with this. With 4 KiB in use while waiting, a
// stack of up to 16 KiB is kept; clearing the 4 KiB costs far less than
// one copy.
const heldStack = 4 << 10

// waitHolding waits for the next function on c with heldStack bytes of
// stack in use. Not inlined: in run's own frame the bytes would sit under
// every function run too, adding 4 KiB to the stack each one needs.
//
//go:noinline
func waitHolding(c chan func()) func() {
	var hold [heldStack]byte
	return receive(&hold, c)
}

// receive takes the next function from c; hold is the caller's frame, which
// cannot be optimized away while it is passed to a function not inlined.
//
//go:noinline
func receive(_ *[heldStack]byte, c chan func()) func() { return <-c }

// idleCount is how many goroutines are idle.
func idleCount() int {
	idle.mu.Lock()
	defer idle.mu.Unlock()
	return len(idle.waiting)
}
