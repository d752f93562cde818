package kimitools

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/kimitools/kimitest"
)

const declareOpen, declareClose = "<|im_system|>tool_declare<|im_middle|>", "<|im_end|>"

// TestDeclaration checks the declaration of every record that has one
// against the text the reference rendered, and that the others are the ones
// the reference could not (or did not need to) declare. The whole prompt is
// checked in lib/chat.
func TestDeclaration(t *testing.T) {
	for _, file := range []string{"testdata/public.jsonl", "testdata/cases.jsonl"} {
		recs := kimitest.Read(t, file)
		for _, r := range recs {
			t.Run(r.ID, func(t *testing.T) {
				tools, err := Prepare(r.Tools)
				if err != nil {
					t.Fatal(err)
				}
				if r.Declaration == "typescript" {
					if !tools.Declared || tools.Declaration == "" {
						t.Fatalf("no declaration (%v), want one", tools.Err)
					}
					i := strings.Index(r.ExpectedText, declareOpen)
					want, _, _ := strings.Cut(r.ExpectedText[i+len(declareOpen):], declareClose)
					if tools.Declaration != want {
						t.Errorf("declaration\n got %q\nwant %q", tools.Declaration, want)
					}
					return
				}
				if tools.Declared && tools.Declaration != "" {
					t.Errorf("declared %q, want the JSON fallback", tools.Declaration)
				}
				if tools.Err != nil && !errors.Is(tools.Err, ErrUnsupported) {
					t.Errorf("err %v does not wrap ErrUnsupported", tools.Err)
				}
			})
		}
	}
}

// TestDeclarationRandom checks 3,000 generated tool lists (half of them
// with odd values in every place a schema allows: numbers for
// descriptions, strings for enums, unknown types, missing $defs) against
// what the reference encoder made of them: whether it raises, and if not
// the declaration. See testdata/README.md.
func TestDeclarationRandom(t *testing.T) {
	f, err := os.Open("testdata/random.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<22)
	n, declared := 0, 0
	for sc.Scan() {
		var r struct {
			Tools       json.RawMessage `json:"tools"`
			Raises      bool            `json:"raises"`
			Declaration string          `json:"declaration"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		n++
		got, err := Prepare(r.Tools)
		switch {
		case err != nil:
			t.Fatalf("line %d: %v", n, err)
		case r.Raises && got.Err == nil:
			t.Errorf("line %d: the reference raises; got %q\n%s", n, got.Declaration, r.Tools)
		case !r.Raises && got.Err != nil:
			t.Errorf("line %d: %v; the reference declares %q\n%s", n, got.Err, r.Declaration, r.Tools)
		case !r.Raises && got.Declaration != r.Declaration:
			t.Errorf("line %d: declaration\n got %q\nwant %q\n%s", n, got.Declaration, r.Declaration, r.Tools)
		}
		if got.Declaration != "" {
			declared++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 3000 || declared < 1000 {
		t.Fatalf("%d lines, %d declared: the file is not the one described", n, declared)
	}
}
