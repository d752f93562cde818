// Command genrecords writes generate-shaped JSONL records for the benchmarks:
// every field of synthpipe-records(7), with prompts of 500-1000 token ids and
// completions of 2000-4000, the shape that dominates real output files.
//
//	go run ./tests/bench/genrecords -size 200MB -o /tmp/records.jsonl
//
// The output is deterministic for a given -seed, so runs compare like with
// like.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/synthpipe/synthpipe/lib/cliutil"
)

func main() {
	size := flag.String("size", "200MB", "stop after this many bytes (200MB, 1GB, 500M, 64Mi)")
	out := flag.String("o", "-", "output file (- for stdout)")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	limit, err := cliutil.ParseCount(strings.TrimSuffix(strings.TrimSuffix(*size, "B"), "b"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "genrecords: -size: %v\n", err)
		os.Exit(64)
	}
	if err := write(*out, limit, *seed); err != nil {
		fmt.Fprintf(os.Stderr, "genrecords: %v\n", err)
		os.Exit(74)
	}
}

func write(path string, limit int64, seed uint64) error {
	f := os.Stdout
	if path != "-" {
		var err error
		if f, err = os.Create(path); err != nil {
			return err
		}
		defer f.Close()
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var line []byte
	var written int64
	for i := 0; written < limit; i++ {
		line = appendRecord(line[:0], rng, i)
		if _, err := w.Write(line); err != nil {
			return err
		}
		written += int64(len(line))
	}
	return w.Flush()
}

// vocab is the id range of a typical modern tokenizer.
const vocab = 151_000

// appendRecord appends one record and its newline to b.
func appendRecord(b []byte, rng *rand.Rand, i int) []byte {
	prompt := 500 + rng.IntN(501)
	completion := 2000 + rng.IntN(2001)
	b = append(b, `{"id":"bench-`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `","messages":[{"role":"system","content":"You are a careful assistant."},{"role":"user","content":"Question `...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `: explain the proof step by step.\nBe brief."}],"input_ids":`...)
	b = appendIDs(b, rng, prompt)
	b = append(b, `,"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"output_ids":`...)
	b = appendIDs(b, rng, completion)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"text":"The proof goes in three steps. First, \"normalize\" \u00e9 the terms; then…","finish_reason":"stop","usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"cached_tokens":0},"gen":{"backend":"sglang","model":"bench-model","endpoint":"http://127.0.0.1:30000","attempts":1,"latency_ms":`...)
	b = strconv.AppendInt(b, int64(1000+rng.IntN(30000)), 10)
	b = append(b, `,"temperature":0.7,"top_p":0.95}}`+"\n"...)
	return b
}

// appendIDs appends a JSON array of n token ids.
func appendIDs(b []byte, rng *rand.Rand, n int) []byte {
	b = append(b, '[')
	for k := 0; k < n; k++ {
		if k > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(rng.IntN(vocab)), 10)
	}
	return append(b, ']')
}
