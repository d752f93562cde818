package jsonl

import (
	"bytes"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/tests/bench/benchdata"
)

// benchLines are generate-shaped records, about 25 KB each.
var benchLines = bytes.Split(bytes.TrimSuffix(benchdata.Records(200, 1), []byte("\n")), []byte("\n"))

func BenchmarkScanObject(b *testing.B) {
	size := 0
	for _, l := range benchLines {
		size += len(l) + 1
	}
	b.SetBytes(int64(size))
	for b.Loop() {
		for _, l := range benchLines {
			if err := ScanObject(l, func(Member) {}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkReader(b *testing.B) {
	data := bytes.Join(benchLines, []byte("\n"))
	data = append(data, '\n')
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r, err := Open(bytes.NewReader(data), nil, Options{})
		if err != nil {
			b.Fatal(err)
		}
		for r.Next() {
		}
		if err := r.Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIntArrayLen measures the token-id fast path alone.
func BenchmarkIntArrayLen(b *testing.B) {
	var arr []byte // the output_ids of a generate-shaped record
	ScanObject(benchLines[0], func(m Member) {
		if string(m.Key) == "output_ids" {
			arr = m.Value
		}
	})
	b.SetBytes(int64(len(arr)))
	for b.Loop() {
		if _, ok := IntArrayLen(arr); !ok {
			b.Fatal("not an int array")
		}
	}
}

// BenchmarkAppendIntArray measures writing 1,000 token ids of a
// 200k-token vocabulary, as tokenize-prompts writes input_ids.
func BenchmarkAppendIntArray(b *testing.B) {
	ids := make([]int, 1000)
	for i := range ids {
		ids[i] = i * 7919 % 200_000
	}
	var out []byte
	for b.Loop() {
		out = AppendIntArray(out[:0], ids)
	}
	b.SetBytes(int64(len(out)))
}

// BenchmarkAppendString measures writing an answer's text as a JSON
// string: 2 KB of English prose with a line break every ~80 bytes, as
// generate writes every answer's text and reasoning.
func BenchmarkAppendString(b *testing.B) {
	var s strings.Builder
	for s.Len() < 2048 {
		s.WriteString("The draft model proposes several tokens, and the target model checks them in one pass.\n")
	}
	text := s.String()
	var out []byte
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		out = AppendString(out[:0], text)
	}
}
