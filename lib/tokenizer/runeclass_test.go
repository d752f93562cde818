package tokenizer

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// TestClassOfEqualsComputeClass: the cached classes are the computed ones,
// classUpdates included, for every code point and for values past the end.
// Goroutines start from an empty cache of the supplementary planes and race
// to fill it (run with -race), and the blocks it ends up holding are few.
func TestClassOfEqualsComputeClass(t *testing.T) {
	want := make([]runeClass, unicode.MaxRune+1)
	for r := range want {
		want[r] = computeClass(rune(r))
	}
	for i := range astralBlocks {
		astralBlocks[i].Store(nil)
	}
	const workers = 4
	var wg sync.WaitGroup
	errs := make(chan string, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range want {
				r := rune((k + w*len(want)/workers) % len(want))
				if got := classOf(r); got != want[r] {
					errs <- fmt.Sprintf("classOf(%U) = %#x, computeClass = %#x", r, got, want[r])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	for _, r := range []rune{-1, math.MinInt32, unicode.MaxRune + 1, math.MaxInt32} {
		if got, want := classOf(r), computeClass(r); got != want {
			t.Errorf("classOf(%d) = %#x, computeClass = %#x", r, got, want)
		}
	}
	blocks := map[*astralBlock]bool{}
	for i := range astralBlocks {
		blocks[astralBlocks[i].Load()] = true
	}
	if size := len(blocks) * int(unsafe.Sizeof(astralBlock{})); size > 100<<10 {
		t.Errorf("the supplementary planes take %d blocks, %d bytes; want at most 100 KiB", len(blocks), size)
	}
}

// TestRuneAtClasses: runeAt decodes every rune with its computed class, and
// reads invalid UTF-8 (surrogates, values past U+10FFFF, overlong and cut
// sequences) as one byte of U+FFFD with the class of U+FFFD.
func TestRuneAtClasses(t *testing.T) {
	var buf []byte
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if utf8.ValidRune(r) {
			buf = utf8.AppendRune(buf[:0], r)
		} else { // a surrogate, encoded as if it were allowed
			buf = append(buf[:0], 0xED, byte(0x80|r>>6&0x3F), byte(0x80|r&0x3F))
		}
		s := string(append(buf, 'x'))
		gotR, gotC, gotN := runeAt(s, 0)
		wantR, wantN := r, len(buf)
		if !utf8.ValidRune(r) {
			wantR, wantN = utf8.RuneError, 1
		}
		if wantC := computeClass(wantR); gotR != wantR || gotC != wantC || gotN != wantN {
			t.Fatalf("runeAt(%q) = %U, %#x, %d; want %U, %#x, %d", s, gotR, gotC, gotN, wantR, wantC, wantN)
		}
	}
	invalid := []string{"\xf4\x90\x80\x80", "\xf7\xbf\xbf\xbf", "\xc0\x80", "\xe0\x80\x80", "\x80", "\xff", "\xf0\x9f\x98", "\xf0\x9f"}
	for _, s := range invalid {
		r, c, n := runeAt(s, 0)
		if want := computeClass(utf8.RuneError); r != utf8.RuneError || c != want || n != 1 {
			t.Errorf("runeAt(%q) = %U, %#x, %d; want U+FFFD, %#x, 1", s, r, c, n, want)
		}
	}
	if r, c, n := runeAt("a", 1); r != -1 || c != 0 || n != 0 {
		t.Errorf("runeAt at the end = %d, %#x, %d; want -1, 0, 0", r, c, n)
	}
}
