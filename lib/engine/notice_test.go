package engine

import (
	"context"
	"sync"
	"testing"
)

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestNoticeWakesEveryWaiter(t *testing.T) {
	var n notice
	const waiters = 8
	var ready, woken sync.WaitGroup
	ready.Add(waiters)
	woken.Add(waiters)
	for range waiters {
		go func() {
			c := n.next()
			ready.Done()
			<-c
			woken.Done()
		}()
	}
	ready.Wait()
	n.notify()
	woken.Wait() // hangs if one waiter was not woken
}

func TestNoticeIsNotKeptForLaterWaiters(t *testing.T) {
	var n notice
	n.notify() // nobody waits: nothing to wake, nothing kept
	before := n.next()
	if closed(before) {
		t.Fatal("a notify with nobody waiting woke a later waiter")
	}
	if again := n.next(); again != before {
		t.Fatal("two waiters before one notify got different channels")
	}
	n.notify()
	if !closed(before) {
		t.Fatal("notify did not wake the waiter that took next before it")
	}
	if closed(n.next()) {
		t.Fatal("the channel after a notify is already closed")
	}
}

func TestNoticeAwait(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	var n notice
	if !n.await(cancelled, func() bool { return true }) {
		t.Error("await refused a state that is ready, because ctx had ended")
	}
	if n.await(cancelled, func() bool { return false }) {
		t.Error("await returned true for a state that never became ready")
	}
}

// The waiter must see every change, whichever goroutine runs first: a change
// made between its look at the state and its wait would otherwise be lost
// and the waiter would hang.
func TestNoticeAwaitNeverMissesAChange(t *testing.T) {
	var (
		n     notice
		mu    sync.Mutex
		count int
	)
	const changes = 2000
	go func() {
		for range changes {
			mu.Lock()
			count++
			mu.Unlock()
			n.notify()
		}
	}()
	for want := 1; want <= changes; want++ {
		ok := n.await(context.Background(), func() bool {
			mu.Lock()
			defer mu.Unlock()
			return count >= want
		})
		if !ok {
			t.Fatalf("await gave up waiting for change %d", want)
		}
	}
}
