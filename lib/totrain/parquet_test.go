package totrain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
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
	want, out := tokensBothWays(t, in, filepath.Join(dir, "train.parquet"))
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

	var stderr bytes.Buffer
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

// TestParquetReadBackIndependently: what -o train.parquet holds, read by
// parquet-wasm (Apache Arrow's Rust reader, run with node by
// scripts/parquet-fixtures/readback.mjs), equals the JSONL output row for row,
// over more rows than one row group holds. scripts/ensure-test-deps.sh
// installs node and the pinned npm packages (make test runs it).
func TestParquetReadBackIndependently(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "scripts", "parquet-fixtures", "readback.mjs")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: scripts/ensure-test-deps.sh installs Debian's nodejs and the npm packages this test runs (make test runs it)")
	}
	if _, err := os.Stat(filepath.Join(root, "scripts", "parquet-fixtures", "node_modules", "parquet-wasm")); err != nil {
		t.Fatal("parquet-wasm is not installed beside scripts/parquet-fixtures/package.json: run bash scripts/ensure-test-deps.sh (make test runs it)")
	}

	dir := t.TempDir()
	in := filepath.Join(dir, "out.jsonl")
	var records strings.Builder
	rows := jsonl.ParquetRowGroupRows + 1500
	for i := range rows {
		fmt.Fprintf(&records, `{"id":"r%d","input_ids":[%d,%d],"output_ids":[%d],"finish_reason":"stop"}`+"\n", i, i%163840, 163839-i%1000, i*7%163840)
	}
	if err := os.WriteFile(in, []byte(records.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	want, out := tokensBothWays(t, in, filepath.Join(dir, "train.parquet"))
	cmd := exec.Command(node, script, out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("parquet-wasm could not read %s: %v: %s", out, err, stderr.String())
	}
	wantRows, gotRows := strings.Split(want.String(), "\n"), strings.Split(string(got), "\n")
	if len(gotRows) != len(wantRows) {
		t.Fatalf("parquet-wasm read %d rows, the JSONL output has %d", len(gotRows)-1, len(wantRows)-1)
	}
	for i := range wantRows {
		var w, g any
		if i == len(wantRows)-1 {
			break // both end with a newline
		}
		if json.Unmarshal([]byte(wantRows[i]), &w) != nil || json.Unmarshal([]byte(gotRows[i]), &g) != nil || !reflect.DeepEqual(w, g) {
			t.Fatalf("row %d: parquet-wasm read %s, the JSONL output has %s", i, gotRows[i], wantRows[i])
		}
	}
}

// tokensBothWays runs to-train --format tokens on in twice: to stdout as
// JSONL (returned) and to the Parquet file out (returned too).
func tokensBothWays(t *testing.T, in, out string) (*bytes.Buffer, string) {
	t.Helper()
	var want, stderr bytes.Buffer
	if code := Main([]string{"to-train", "-q", "-f", "tokens", in}, nil, &want, &stderr); code != 0 {
		t.Fatalf("JSONL: exit %d: %s", code, stderr.String())
	}
	if code := Main([]string{"to-train", "-q", "-f", "tokens", "-o", out, in}, nil, &bytes.Buffer{}, &stderr); code != 0 {
		t.Fatalf("Parquet: exit %d: %s", code, stderr.String())
	}
	return &want, out
}

// TestTokensRowTags ties the struct tags that name tokensRow's columns (a
// tag cannot name a constant) to the record field names, in both the JSON
// it is decoded from and the Parquet it is written as.
func TestTokensRowTags(t *testing.T) {
	typ := reflect.TypeOf(tokensRow{})
	for name, want := range map[string]string{"ID": record.FieldID, "InputIDs": record.FieldInputIDs, "LossMask": record.FieldLossMask} {
		f, ok := typ.FieldByName(name)
		if !ok {
			t.Fatalf("tokensRow has no field %s", name)
		}
		for _, key := range []string{"json", "parquet"} {
			if got, _, _ := strings.Cut(f.Tag.Get(key), ","); got != want {
				t.Errorf("tokensRow.%s: %s tag %q, want %q", name, key, got, want)
			}
		}
	}
}
