package deduperesume

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/synthpipe/synthpipe/lib/idset"
	"github.com/synthpipe/synthpipe/lib/record"
)

func writeLines(t testing.TB, path string, n int, format string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, format+"\n", i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLoadDone(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	errs := filepath.Join(dir, "errors.jsonl")
	writeLines(t, out, 100, `{"id":"ok-%d","completion_tokens":3}`)
	writeLines(t, errs, 10, `{"id":"failed-%d","error":{"kind":"timeout"}}`)
	missing := filepath.Join(dir, "later.jsonl")
	for _, tc := range []struct {
		name        string
		retryErrors bool
		wantLen     int
	}{
		{"failures count as done", false, 110},
		{"failures are retried", true, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reported []string
			cfg := &config{done: []string{out, errs, missing}, retryErrors: tc.retryErrors}
			set, _, err := loadDone(cfg, record.NewScanner("id", true, ""), func(p string) { reported = append(reported, p) })
			if err != nil {
				t.Fatal(err)
			}
			if set.Len() != tc.wantLen {
				t.Errorf("%d done ids, want %d", set.Len(), tc.wantLen)
			}
			if !set.ContainsString("ok-99") || set.ContainsString("ok-100") {
				t.Error("wrong ids in the done set")
			}
			if len(reported) != 1 || reported[0] != missing {
				t.Errorf("missing files reported: %q, want only %q", reported, missing)
			}
		})
	}
}

// BenchmarkLoadDone measures reading done ids of 30 bytes, the resume path:
// 10 million must load in seconds.
func BenchmarkLoadDone(b *testing.B) {
	const n = 1 << 20
	path := filepath.Join(b.TempDir(), "out.jsonl")
	writeLines(b, path, n, `{"id":"dataset-%012d-abcdefghi","finish_reason":"stop"}`)
	cfg := &config{done: []string{path}}
	scan := record.NewScanner("id", true, "")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := loadDone(cfg, scan, func(string) {}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/id")
}

func TestSetFiller(t *testing.T) {
	set := idset.New(0)
	f := newSetFiller(set)
	const n = 3*batchIDs + 5 // several whole batches and a partial one
	for i := 0; i < n; i++ {
		f.add(fmt.Sprint(i))
	}
	f.add("0") // a repeat
	f.wait()
	f.wait() // a second wait (the deferred one) is harmless
	if set.Len() != n {
		t.Fatalf("%d ids in the set, want %d", set.Len(), n)
	}
	if !set.ContainsString("0") || !set.ContainsString(fmt.Sprint(n-1)) {
		t.Error("first or last id missing")
	}
}

// TestExpectedIDs: the estimate from the first lines is close for files of
// lines of one length, and compressed or missing files add nothing.
func TestExpectedIDs(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	writeLines(t, a, 50000, `{"id":"dataset-%012d-abcdefghi"}`)
	writeLines(t, b, 100, `{"id":"x-%06d"}`)
	gz := filepath.Join(dir, "c.jsonl.gz")
	if err := os.WriteFile(gz, []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, '\n'}, 0o644); err != nil {
		t.Fatal(err)
	}
	got := expectedIDs([]string{a, b, gz, filepath.Join(dir, "missing.jsonl")})
	if want := 50100; got < want || got > want+want/10 {
		t.Errorf("expectedIDs = %d, want %d to 10%% more", got, want)
	}
}
