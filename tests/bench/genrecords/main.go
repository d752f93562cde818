// Command genrecords writes generate-shaped JSONL records for the benchmarks
// (see package benchdata for their shape).
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
	"os"
	"strings"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/tests/bench/benchdata"
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
	rng := benchdata.NewRand(seed)
	var line []byte
	var written int64
	for i := 0; written < limit; i++ {
		line = benchdata.AppendRecord(line[:0], rng, i)
		if _, err := w.Write(line); err != nil {
			return err
		}
		written += int64(len(line))
	}
	return w.Flush()
}
