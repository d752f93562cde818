package kimitools

import (
	"testing"

	"github.com/synthpipe/synthpipe/lib/kimitools/kimitest"
)

// BenchmarkPrepare: a typical function tool (the first public record's),
// sorted and declared.
func BenchmarkPrepare(b *testing.B) {
	tools := []byte(kimitest.Read(b, "testdata/public.jsonl")[0].Tools)
	b.SetBytes(int64(len(tools)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Prepare(tools); err != nil {
			b.Fatal(err)
		}
	}
}
