package tokstat

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// writeGenerated writes records shaped like generate's output (prompt of
// 500-1000 ids, completion of 2000-4000) and returns the file's size.
func writeGenerated(b *testing.B, path string, n int) int64 {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	ids := func(k, seed int) []byte {
		s := []byte{'['}
		for i := 0; i < k; i++ {
			if i > 0 {
				s = append(s, ',')
			}
			s = strconv.AppendInt(s, int64((seed*7919+i*104729)%151000), 10)
		}
		return append(s, ']')
	}
	for i := 0; i < n; i++ {
		p, c := 500+i*37%500, 2000+i*71%2000
		fmt.Fprintf(w, `{"id":"ds-%08d","dataset":"d%d","input_ids":%s,"prompt_tokens":%d,"output_ids":%s,"completion_tokens":%d,"finish_reason":"stop"}`+"\n",
			i, i%3, ids(p, i), p, ids(c, i+1), c)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	f.Close()
	return fi.Size()
}

// BenchmarkCollect reads a generated file the way tokstat does: --total (the
// fast path) and the full report.
func BenchmarkCollect(b *testing.B) {
	path := filepath.Join(b.TempDir(), "out.jsonl")
	size := writeGenerated(b, path, 2000)
	for _, tc := range []struct {
		name   string
		format format
	}{{"total", formatTotal}, {"report", formatTable}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := &config{files: []string{path}, format: tc.format, idPath: "id"}
			cfg.input.SkipInvalid = true
			b.SetBytes(size)
			for b.Loop() {
				col := newCollector(cfg, func(string) {})
				if err := col.readFile(nil, path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
