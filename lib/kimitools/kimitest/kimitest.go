// Package kimitest reads the Kimi-K2.5 tool references of
// lib/kimitools/testdata (see the README there) for the tests that check a
// rendering against them: lib/kimitools, lib/chat, tokenize-prompts and
// to-train.
package kimitest

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
)

// Record is one line of testdata/public.jsonl or testdata/cases.jsonl: a
// conversation with tools and the prompt Kimi-K2.5's own tokenizer renders
// for it.
type Record struct {
	ID           string          `json:"id"`
	Messages     json.RawMessage `json:"messages"`
	Tools        json.RawMessage `json:"tools"`
	Declaration  string          `json:"declaration"` // "typescript" or "json"
	ExpectedText string          `json:"expected_text"`
	Line         []byte          `json:"-"` // the line as it is in the file
}

// Read returns the records of the files at paths, in order; it fails the
// test on a file it cannot read or a line that is not a record.
func Read(t testing.TB, paths ...string) []Record {
	t.Helper()
	var recs []Record
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			r := Record{Line: append([]byte(nil), sc.Bytes()...)}
			if err := json.Unmarshal(r.Line, &r); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			recs = append(recs, r)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return recs
}
