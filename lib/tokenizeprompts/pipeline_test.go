package tokenizeprompts

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/bundle"
)

// spun keeps the busy loops below from being optimized away.
var spun atomic.Int64

// TestPipelineKeepsOrder runs items that finish in a scrambled order and
// checks that they come out in the order they went in.
func TestPipelineKeepsOrder(t *testing.T) {
	for _, workers := range []int{1, 2, 7} {
		const n = 300
		var got []int
		p := pipeline[int, int]{
			workers: workers,
			produce: func(ctx context.Context, send func(int) bool) error {
				for i := range n {
					if !send(i) {
						return nil
					}
				}
				return nil
			},
			work: func(i int) int {
				// Uneven work scrambles the order in which items finish.
				sum := 0
				for k := range rand.IntN(200000) {
					sum += k
				}
				spun.Add(int64(sum))
				return i
			},
			consume: func(i int) error { got = append(got, i); return nil },
		}
		if err := p.run(context.Background()); err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if v != i {
				t.Fatalf("workers=%d: item %d came out at %d", workers, v, i)
			}
		}
		if len(got) != n {
			t.Fatalf("workers=%d: %d items out of %d", workers, len(got), n)
		}
	}
}

// TestPipelineStops checks that an error from consume ends the run with it
// at once, even when produce would go on for ever, and that produce's
// error comes back after the items it sent.
func TestPipelineStops(t *testing.T) {
	errFull := errors.New("full")
	p := pipeline[int, int]{
		workers: 3,
		produce: func(ctx context.Context, send func(int) bool) error {
			for i := 0; ; i++ {
				if !send(i) {
					return nil
				}
			}
		},
		work: func(i int) int { return i },
		consume: func(i int) error {
			if i == 10 {
				return errFull
			}
			return nil
		},
	}
	if err := p.run(context.Background()); err != errFull {
		t.Fatalf("got %v, want %v", err, errFull)
	}

	errRead := errors.New("read failed")
	var consumed int
	readFails := pipeline[int, int]{
		workers: 2,
		produce: func(ctx context.Context, send func(int) bool) error {
			for i := range 5 {
				send(i)
			}
			return errRead
		},
		work:    func(i int) int { return i },
		consume: func(int) error { consumed++; return nil },
	}
	if err := readFails.run(context.Background()); err != errRead || consumed != 5 {
		t.Fatalf("got %v after %d items, want %v after 5", err, consumed, errRead)
	}
}

// TestPipelineBoundsWork checks that a slow first item holds back the
// producer instead of letting results pile up behind it.
func TestPipelineBoundsWork(t *testing.T) {
	release := make(chan struct{})
	var sent atomic.Int64
	done := make(chan error)
	p := pipeline[int, int]{
		workers: 2,
		produce: func(ctx context.Context, send func(int) bool) error {
			for i := range 1000 {
				if !send(i) {
					return nil
				}
				sent.Add(1)
			}
			return nil
		},
		work: func(i int) int {
			if i == 0 {
				<-release
			}
			return i
		},
		consume: func(int) error { return nil },
	}
	go func() { done <- p.run(context.Background()) }()
	time.Sleep(100 * time.Millisecond)
	if limit := int64(2 * inFlightPerWorker); sent.Load() > limit {
		t.Errorf("%d items sent while the first was stuck; at most %d may be in flight", sent.Load(), limit)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestSameOutputAnyWorkers runs the bundled sample prompts through the tool
// with one and with two workers, twice: the outputs must be identical.
func TestSameOutputAnyWorkers(t *testing.T) {
	r, err := bundle.Prompts()
	if err != nil {
		t.Fatal(err)
	}
	prompts, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	var first string
	for _, jobs := range []string{"1", "2", "1", "2"} {
		stdout, stderr, code := runTool(t, string(prompts), "-j", jobs, "--tokenizer", "builtin:kimi-k2.5")
		if code != 0 {
			t.Fatalf("-j %s: exit %d: %s", jobs, code, stderr)
		}
		if first == "" {
			first = stdout
			if n := bytes.Count([]byte(stdout), []byte("\n")); n != 400 {
				t.Fatalf("%d records out of 400: %s", n, stderr)
			}
		} else if stdout != first {
			t.Fatalf("-j %s wrote another output", jobs)
		}
	}
}
