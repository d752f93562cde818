package backend

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

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
		fd := -1 // asked by newWait, or given as the transport gives it
		if i%2 == 0 {
			fd = connFD(client)
		}
		w := new(pollWait)
		var ready bool
		if !p.newWait(w, client, fd, &ready, func() {
			ran[i].Add(1)
			wg.Done() // a second run makes the count negative: a panic
		}) {
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
