package totrain

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// TestParquetOutput: -o train.parquet holds the samples the JSONL output
// holds, row for row; --format specforge refuses Parquet (64) and a failed
// run leaves no file behind.
func TestParquetOutput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "out.jsonl")
	records := `{"id":"a","input_ids":[1,2,3],"output_ids":[4,5],"finish_reason":"stop"}
{"id":"b","input_ids":[7],"output_ids":[8,9,10],"finish_reason":"stop"}
`
	if err := os.WriteFile(in, []byte(records), 0o644); err != nil {
		t.Fatal(err)
	}
	var want, stderr bytes.Buffer
	if code := Main([]string{"to-train", "-q", "-f", "tokens", in}, nil, &want, &stderr); code != 0 {
		t.Fatalf("JSONL: exit %d: %s", code, stderr.String())
	}
	out := filepath.Join(dir, "train.parquet")
	if code := Main([]string{"to-train", "-q", "-f", "tokens", "-o", out, in}, nil, &bytes.Buffer{}, &stderr); code != 0 {
		t.Fatalf("Parquet: exit %d: %s", code, stderr.String())
	}
	r, err := jsonl.Open(nil, []string{out}, jsonl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got strings.Builder
	for r.Next() {
		got.Write(r.Bytes())
		got.WriteByte('\n')
	}
	if r.Err() != nil || got.String() != want.String() {
		t.Fatalf("read back %q (%v), want %q", got.String(), r.Err(), want.String())
	}

	stderr.Reset()
	refused := filepath.Join(dir, "specforge.parquet")
	if code := Main([]string{"to-train", "-q", "-o", refused, in}, nil, &bytes.Buffer{}, &stderr); code != 64 || !strings.Contains(stderr.String(), "--format tokens") {
		t.Fatalf("specforge to Parquet: exit %d: %s", code, stderr.String())
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"id":"c","input_ids":[1],"output_ids":[2]}`+"\n{not json\n"), 0o644)
	failed := filepath.Join(dir, "failed.parquet")
	if code := Main([]string{"to-train", "-q", "-f", "tokens", "-o", failed, bad}, nil, &bytes.Buffer{}, &bytes.Buffer{}); code != 65 {
		t.Fatalf("invalid input: exit %d, want 65", code)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Fatalf("a failed run left files behind: %v", entries)
	}
}
