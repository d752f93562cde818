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
	ids := flag.Int("ids", 0, "write this many id-only records (a done file for dedupe-resume) instead")
	flag.Parse()
	if *ids > 0 {
		if err := writeIDs(*out, *ids); err != nil {
			fmt.Fprintf(os.Stderr, "genrecords: %v\n", err)
			os.Exit(74)
		}
		return
	}
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

// create opens path for writing ("-": stdout).
func create(path string) (*os.File, error) {
	if path == "-" {
		return os.Stdout, nil
	}
	return os.Create(path)
}

func write(path string, limit int64, seed uint64) error {
	f, err := create(path)
	if err != nil {
		return err
	}
	defer f.Close()
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

func writeIDs(path string, n int) error {
	f, err := create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	var line []byte
	for i := 0; i < n; i++ {
		line = benchdata.AppendIDRecord(line[:0], i)
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return w.Flush()
}
