package record

import (
	"bytes"
	"testing"

	"github.com/synthpipe/synthpipe/tests/bench/benchdata"
)

func BenchmarkRecordScan(b *testing.B) {
	data := benchdata.Records(200, 1)
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	s := NewScanner("", true, "")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		for _, l := range lines {
			if _, err := s.Scan(l); err != nil {
				b.Fatal(err)
			}
		}
	}
}
