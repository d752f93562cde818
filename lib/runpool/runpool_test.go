package runpool

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestGoRunsEachOnce: functions handed to Go from several goroutines at
// once each run once, functions may hand on others, and no more than
// maxIdle goroutines stay behind for the next ones.
func TestGoRunsEachOnce(t *testing.T) {
	const senders, each = 8, 500
	ran := make([]atomic.Int32, 2*senders*each)
	var wg sync.WaitGroup
	wg.Add(len(ran))
	mark := func(i int) {
		ran[i].Add(1)
		wg.Done() // a second run makes the count negative: a panic
	}
	for s := range senders {
		go func() {
			for i := s * each; i < (s+1)*each; i++ {
				Go(func() {
					mark(i)
					Go(func() { mark(len(ran)/2 + i) })
				})
			}
		}()
	}
	wg.Wait()
	for i := range ran {
		if n := ran[i].Load(); n != 1 {
			t.Errorf("function %d ran %d times", i, n)
		}
	}
	if n := idleCount(); n > maxIdle {
		t.Errorf("%d goroutines idle, want at most %d", n, maxIdle)
	}
}
