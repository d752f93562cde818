// Package runpool runs functions on goroutines it keeps for the next one
// once they finish one, up to maxIdle of them. A function that reads and
// parses an answer, or prepares and sends a request, grows a goroutine's
// stack from the smallest (2 KiB) to 8 KiB, copying it on each step: a new
// goroutine per function paid that every time (a tenth to a sixth of
// generate's CPU at zero latency); a kept goroutine keeps its grown stack.
package runpool

import "sync"

// maxIdle bounds the goroutines kept idle: more than two cores' worth of
// functions in the time one takes to finish, and 1 MiB of stacks at most.
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
		f = <-c
	}
}

// idleCount is how many goroutines are idle.
func idleCount() int {
	idle.mu.Lock()
	defer idle.mu.Unlock()
	return len(idle.waiting)
}
