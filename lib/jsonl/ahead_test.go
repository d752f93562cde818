package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// forceReadAhead makes every file read ahead, in tiny buffers and batches so
// that lines cross buffers and batches, on at least two CPUs.
func forceReadAhead(t *testing.T, buffer, batchLines int) {
	t.Helper()
	oldMin, oldBuf, oldLines := aheadMinSize, aheadBuffer, aheadBatchLines
	aheadMinSize, aheadBuffer, aheadBatchLines = 0, buffer, batchLines
	oldProcs := runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))
	t.Cleanup(func() {
		aheadMinSize, aheadBuffer, aheadBatchLines = oldMin, oldBuf, oldLines
		runtime.GOMAXPROCS(oldProcs)
	})
}

// preparedLine is what the tests' Prepare makes of a line: enough to check
// that every record gets its own result.
func preparedLine(line []byte, _ any) any { return fmt.Sprintf("%d:%.10s", len(line), line) }

// readPrepared is readAll that also collects Reader.Prepared.
func readPrepared(t *testing.T, names []string, opt Options) (readResult, []any) {
	t.Helper()
	var res readResult
	var values []any
	opt.Warn = func(msg string) { res.warns = append(res.warns, msg) }
	opt.Skipped = func(pos string, cause error) { res.warns = append(res.warns, "skipped "+pos+": "+cause.Error()) }
	r, err := Open(nil, names, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Next() {
		res.lines = append(res.lines, string(r.Bytes()))
		res.pos = append(res.pos, r.Pos())
		values = append(values, r.Prepared())
	}
	res.err = r.Err()
	res.stats = r.Stats()
	return res, values
}

// TestReadAheadSameAsSerial reads files of every shape both ways: records,
// positions, warnings, counts and errors must be the same.
func TestReadAheadSameAsSerial(t *testing.T) {
	dir := t.TempDir()
	var many strings.Builder
	for i := range 500 {
		fmt.Fprintf(&many, "{\"id\":\"r%d\",\"ids\":[%s]}\n", i, strings.Repeat("7,", i%40)+"1")
		if i%97 == 0 {
			many.WriteString("\r\n  \n")
		}
	}
	long := `{"text":"` + strings.Repeat("x", 5000) + `"}`
	damaged := zstded(t, []byte(many.String()))
	inputs := map[string][]byte{
		"many":         []byte(many.String()),
		"BOM and CRLF": []byte("\xef\xbb\xbf{\"a\":1}\r\n{\"a\":2}\r\n\xef\xbb\xbf{}\n"),
		"torn":         []byte(many.String() + `{"id":"half`),
		"only torn":    []byte(`{"a":1}`),
		"empty":        nil,
		"invalid":      []byte("{}\n[1]\nnope\n{\"a\":\"b\xffc\"}\n{\"a\":1}\n"),
		"long lines":   []byte("{}\n" + long + "\n{}\n" + long + "\n" + long + "\n{\"a\":2}\n"),
		"gzip":         gzipped(t, []byte(many.String()+`{"torn`)),
		"zstd":         zstded(t, []byte(many.String())),
		"damaged zstd": damaged[:len(damaged)-10],
	}
	options := map[string]Options{
		"plain":                      {},
		"validate":                   {Validate: true},
		"validate, skip invalid":     {Validate: true, SkipInvalid: true},
		"line cap, skip invalid":     {MaxLine: 2000, SkipInvalid: true},
		"line cap":                   {MaxLine: 2000},
		"validate, prepare, skip":    {Validate: true, SkipInvalid: true, Prepare: preparedLine},
		"prepare without validating": {Prepare: preparedLine},
	}
	var files []string
	for name, data := range inputs {
		files = append(files, writeFile(t, dir, strings.ReplaceAll(name, " ", "-")+".jsonl", data))
	}
	serial := map[string]readResult{}
	serialValues := map[string][]any{}
	for oname, opt := range options {
		for _, f := range files {
			serial[oname+f], serialValues[oname+f] = readPrepared(t, []string{f}, opt)
		}
		serial[oname+"all"], serialValues[oname+"all"] = readPrepared(t, files, opt)
	}
	for _, size := range []struct{ buffer, batchLines int }{{64, 1}, {100, 3}, {4096, 7}, {1 << 20, 4096}} {
		t.Run(fmt.Sprintf("buffer %d, batches of %d lines", size.buffer, size.batchLines), func(t *testing.T) {
			forceReadAhead(t, size.buffer, size.batchLines)
			for oname, opt := range options {
				opt.Parallel = true
				check := func(key string, names []string) {
					t.Helper()
					got, values := readPrepared(t, names, opt)
					want := serial[key]
					if fmt.Sprintf("%q %q %q %+v", got.lines, got.pos, got.warns, got.stats) != fmt.Sprintf("%q %q %q %+v", want.lines, want.pos, want.warns, want.stats) {
						t.Errorf("%s, %v: read ahead got\n%q %q %q %+v\nwant\n%q %q %q %+v", oname, names, got.lines, got.pos, got.warns, got.stats, want.lines, want.pos, want.warns, want.stats)
					}
					if fmt.Sprint(got.err) != fmt.Sprint(want.err) {
						t.Errorf("%s, %v: error %v, want %v", oname, names, got.err, want.err)
					}
					if fmt.Sprint(values) != fmt.Sprint(serialValues[key]) {
						t.Errorf("%s, %v: prepared values differ", oname, names)
					}
				}
				for _, f := range files {
					check(oname+f, []string{f})
				}
				check(oname+"all", files)
			}
		})
	}
}

// TestReadAheadStopsEarly closes a reader part-way: the goroutines end, and
// nothing reads the file after Close.
func TestReadAheadStopsEarly(t *testing.T) {
	forceReadAhead(t, 256, 2)
	data := bytes.Repeat([]byte("{\"a\":1}\n"), 10000)
	path := writeFile(t, t.TempDir(), "big.jsonl", data)
	for _, stopAfter := range []int{0, 1, 5, 3000} {
		r, err := Open(nil, []string{path}, Options{Validate: true, Parallel: true, Prepare: preparedLine})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < stopAfter && r.Next(); i++ {
		}
		before := runtime.NumGoroutine()
		r.Close()
		if after := runtime.NumGoroutine(); stopAfter > 0 && after >= before {
			t.Errorf("after %d lines: %d goroutines before Close, %d after", stopAfter, before, after)
		}
	}
}

// TestReadAheadBeforeReadAndContext: the hook runs on the caller's goroutine
// (it is not safe for concurrent use), and a done context stops the reading
// with its cause.
func TestReadAheadBeforeReadAndContext(t *testing.T) {
	forceReadAhead(t, 128, 2)
	path := writeFile(t, t.TempDir(), "big.jsonl", bytes.Repeat([]byte("{\"a\":1}\n"), 2000))
	calls := 0 // no lock: the race detector checks it is touched by one goroutine
	res := readAll(t, nil, []string{path}, Options{Parallel: true, BeforeRead: func() error { calls++; return nil }})
	if res.err != nil || len(res.lines) != 2000 {
		t.Fatalf("read %d lines, error %v", len(res.lines), res.err)
	}
	t.Logf("BeforeRead ran %d times", calls)

	cause := errors.New("interrupted")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	r, err := Open(nil, []string{path}, Options{Parallel: true, Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for r.Next() {
		if n++; n == 10 {
			cancel(cause)
		}
	}
	if !errors.Is(r.Err(), cause) {
		t.Errorf("error %v, want the context's cause", r.Err())
	}
	if n == 2000 {
		t.Error("the context did not stop the reading")
	}
}

// TestReadsAhead: only large regular files are read ahead.
func TestReadsAhead(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one CPU: never reads ahead")
	}
	dir := t.TempDir()
	small := writeFile(t, dir, "small.jsonl", []byte("{}\n"))
	large := writeFile(t, dir, "large.jsonl", make([]byte, aheadMinSize))
	for _, tc := range []struct {
		path string
		want bool
	}{{small, false}, {large, true}, {dir, false}} {
		f, err := os.Open(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := readsAhead(f); got != tc.want {
			t.Errorf("readsAhead(%s) = %v, want %v", tc.path, got, tc.want)
		}
		f.Close()
	}
}
