package backend

import (
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
