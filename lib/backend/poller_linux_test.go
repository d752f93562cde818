package backend

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// TestRunnersRunEachOnce: functions handed to the runners from several
// goroutines at once each run once, with their own argument, and no more
// than maxIdleRunners goroutines stay behind for the next ones.
func TestRunnersRunEachOnce(t *testing.T) {
	const senders, each = 8, 500
	var r runners
	ran := make([]atomic.Int32, senders*each)
	var wg sync.WaitGroup
	wg.Add(senders * each)
	for s := range senders {
		go func() {
			for i := s * each; i < (s+1)*each; i++ {
				r.run(&pollWait{then: func(ready bool) {
					if ready != (i%2 == 0) {
						t.Errorf("function %d ran with ready %v", i, ready)
					}
					ran[i].Add(1)
					wg.Done() // a second run makes the count negative: a panic
				}}, i%2 == 0)
			}
		}()
	}
	wg.Wait()
	for i := range ran {
		if n := ran[i].Load(); n != 1 {
			t.Errorf("function %d ran %d times", i, n)
		}
	}
	r.mu.Lock()
	idle := len(r.idle)
	r.mu.Unlock()
	if idle > maxIdleRunners {
		t.Errorf("%d runners idle, want at most %d", idle, maxIdleRunners)
	}
}

// TestPollerWaitRunsOnce: a wait whose connection becomes readable while
// it is being closed runs its function once, whichever comes first; the
// race detector checks the poller's and the closers' sides (go test
// -race).
func TestPollerWaitRunsOnce(t *testing.T) {
	p := sharedPoller()
	if p == nil {
		t.Skip("no epoll here")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const n = 200
	ran := make([]atomic.Int32, n)
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
		client, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		server, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer server.Close()
		w := p.newWait(client, func(bool) {
			ran[i].Add(1)
			wg.Done() // a second run makes the count negative: a panic
		})
		if w == nil {
			t.Fatal("a TCP connection cannot be watched")
		}
		// The answer and the cancellation race; every third wait is
		// closed before it starts (start must not register it then),
		// every fifth is never answered.
		if i%3 == 0 {
			w.Close()
			w.start()
		} else {
			w.start()
			go w.Close()
		}
		if i%5 != 0 {
			go server.Write([]byte("x"))
		}
	}
	wg.Wait()
	for i := range ran {
		if got := ran[i].Load(); got != 1 {
			t.Errorf("wait %d ran %d times", i, got)
		}
	}
	p.mu.Lock()
	left := len(p.waits)
	p.mu.Unlock()
	if left != 0 {
		t.Errorf("%d waits left in the poller", left)
	}
}
