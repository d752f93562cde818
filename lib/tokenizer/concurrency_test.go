package tokenizer

import (
	"sync"
	"testing"
)

// TestConcurrentEncode shares one Tokenizer between goroutines, as a worker
// pool does, and checks that they all get the sequential ids. Run with
// -race to check the piece cache and the scratch pool.
func TestConcurrentEncode(t *testing.T) {
	lines := corpus(t)
	if testing.Short() {
		lines = lines[:200]
	}
	for _, fam := range []string{"qwen3", "kimi_k2"} {
		tok := loadFamily(t, fam)
		want := make([][]int, len(lines))
		for i, l := range lines {
			want[i] = tok.Encode(l.Text, true)
		}
		tok.model.cache = newPieceCache() // start cold so that goroutines race to fill it
		const workers = 4
		var wg sync.WaitGroup
		errs := make(chan string, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(offset int) {
				defer wg.Done()
				var ids []int
				for k := range lines {
					i := (k + offset*len(lines)/workers) % len(lines)
					ids = tok.AppendEncode(ids[:0], lines[i].Text, true)
					if !equalIDs(ids, want[i]) {
						errs <- fam + " " + lines[i].ID
						return
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Errorf("concurrent encode differs: %s", e)
		}
	}
}
