package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/synthpipe/synthpipe/lib/exitcode"
)

const parquetDir = "testdata/parquet"

// readAll reads names with a Reader and returns each record decoded.
func readParquetInputs(t *testing.T, names []string, stdin *os.File) ([]any, error) {
	t.Helper()
	r, err := Open(stdin, names, Options{Validate: true})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var got []any
	for r.Next() {
		got = append(got, decodeJSON(t, r.Bytes()))
	}
	return got, r.Err()
}

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return v
}

// wantRecords reads the JSONL the fixture's writer wrote beside it.
func wantRecords(t *testing.T, name string) []any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(parquetDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var want []any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		want = append(want, decodeJSON(t, []byte(line)))
	}
	return want
}

// TestParquetReadsAsWritten reads files written by another implementation
// (parquet-wasm) with snappy, zstd and no compression, with and without
// dictionary pages, in one and several row groups, with lists of structs
// holding nulls at every level: each row must be the record it was written
// from.
func TestParquetReadsAsWritten(t *testing.T) {
	for _, name := range []string{"snappy_dict_groups", "zstd_plain", "uncompressed"} {
		t.Run(name, func(t *testing.T) {
			got, err := readParquetInputs(t, []string{filepath.Join(parquetDir, name+".parquet")}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := wantRecords(t, name+".jsonl"); !reflect.DeepEqual(got, want) {
				t.Fatalf("rows read as\n%v\nwant\n%v", got, want)
			}
		})
	}
}

// TestParquetFolderOfShards reads a dataset as the Hub lays it out: a folder
// whose data/ holds numbered shards, read in name order as one input.
func TestParquetFolderOfShards(t *testing.T) {
	got, err := readParquetInputs(t, []string{filepath.Join(parquetDir, "hf")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := wantRecords(t, "hf.jsonl"); !reflect.DeepEqual(got, want) {
		t.Fatalf("rows read as\n%v\nwant\n%v", got, want)
	}
	if _, err := Open(nil, []string{t.TempDir()}, Options{}); codeOf(err) != exitcode.NoInput || !strings.Contains(err.Error(), "no .parquet file beneath it") {
		t.Fatalf("an empty folder: %v (status %d), want 66 saying it has no .parquet file", err, codeOf(err))
	}
}

// TestParquetFromRedirectedStdin reads a Parquet file given as stdin (the
// shell's < opens a regular file, which can be read at any offset) and
// refuses one on a pipe with a usage error saying to name the file.
func TestParquetFromRedirectedStdin(t *testing.T) {
	f, err := os.Open(filepath.Join(parquetDir, "zstd_plain.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := readParquetInputs(t, nil, f)
	if err != nil || len(got) != 5 {
		t.Fatalf("stdin from a file: %d records, %v", len(got), err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		data, _ := os.ReadFile(filepath.Join(parquetDir, "zstd_plain.parquet"))
		pw.Write(data)
		pw.Close()
	}()
	defer pr.Close()
	_, err = readParquetInputs(t, nil, pr)
	if codeOf(err) != exitcode.Usage || !strings.Contains(err.Error(), "name the file") {
		t.Fatalf("Parquet on a pipe: %v (status %d), want 64 saying to name the file", err, codeOf(err))
	}
}

// TestParquetDamaged: a truncated file and one with a damaged page fail
// with 65, naming the file and, past the footer, the row group; the rows
// before the damage are read, none after.
func TestParquetDamaged(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(parquetDir, "uncompressed.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	truncated := filepath.Join(dir, "truncated.parquet")
	if err := os.WriteFile(truncated, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = readParquetInputs(t, []string{truncated}, nil)
	if codeOf(err) != exitcode.DataErr || !strings.Contains(err.Error(), truncated) || !strings.Contains(err.Error(), "not a readable Parquet file") {
		t.Fatalf("truncated: %v (status %d), want 65 naming the file", err, codeOf(err))
	}

	// The second row group's first page: its data is damaged, the file's
	// index is intact.
	damaged := filepath.Join(dir, "damaged.parquet")
	bad := bytes.Clone(good)
	meta, err := parquet.OpenFile(bytes.NewReader(good), int64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	chunk := meta.Metadata().RowGroups[1].Columns[0].MetaData
	start := chunk.DataPageOffset
	if chunk.DictionaryPageOffset != 0 {
		start = chunk.DictionaryPageOffset
	}
	for i := start; i < start+16; i++ {
		bad[i] = 0xff
	}
	if err := os.WriteFile(damaged, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readParquetInputs(t, []string{damaged}, nil)
	if codeOf(err) != exitcode.DataErr || !strings.Contains(err.Error(), damaged) || !strings.Contains(err.Error(), "row group 2 of 2") {
		t.Fatalf("damaged: %v (status %d), want 65 naming the file and row group 2", err, codeOf(err))
	}
	if len(got) != 3 {
		t.Fatalf("damaged: %d records read before the error, want the first row group's 3", len(got))
	}
}

// codeOf is the exit status err carries, 0 without one.
func codeOf(err error) int {
	var e *exitcode.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// parquetShapes is a row of the layouts the fixtures do not hold: a
// repeated field with no LIST around it (the legacy layout), maps, an
// optional struct, unsigned and small integers, and a list of structs of
// lists.
type parquetShapes struct {
	ID     string           `parquet:"id"`
	Tags   []string         `parquet:"tags"`
	Counts map[string]int64 `parquet:"counts"`
	ByID   map[int32]string `parquet:"by_id"`
	Inner  *parquetInner    `parquet:"inner,optional"`
	Small  int8             `parquet:"small"`
	Big    uint64           `parquet:"big"`
	Turns  []parquetTurnIDs `parquet:"turns,list"`
	Score  *float64         `parquet:"score,optional"`
}

type parquetInner struct {
	A int32  `parquet:"a"`
	B string `parquet:"b,optional"`
}

type parquetTurnIDs struct {
	Role string  `parquet:"role"`
	IDs  []int64 `parquet:"ids,list"`
}

// TestParquetShapes reads rows of every nested layout back as the JSON a
// user would write.
func TestParquetShapes(t *testing.T) {
	score := 0.5
	rows := []parquetShapes{
		{ID: "a", Tags: []string{"x", "y"}, Counts: map[string]int64{"k": 1}, ByID: map[int32]string{7: "seven"},
			Inner: &parquetInner{A: -3, B: "b"}, Small: -8, Big: 1 << 63,
			Turns: []parquetTurnIDs{{Role: "user", IDs: []int64{1, 2}}, {Role: "assistant", IDs: []int64{}}}, Score: &score},
		{ID: "b"},
	}
	want := []string{
		`{"id":"a","tags":["x","y"],"counts":{"k":1},"by_id":[{"key":7,"value":"seven"}],"inner":{"a":-3,"b":"b"},"small":-8,"big":9223372036854775808,"turns":[{"role":"user","ids":[1,2]},{"role":"assistant","ids":[]}],"score":0.5}`,
		`{"id":"b","tags":[],"counts":{},"by_id":[],"inner":null,"small":0,"big":0,"turns":[],"score":null}`,
	}
	path := filepath.Join(t.TempDir(), "shapes.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[parquetShapes](f)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r, err := Open(nil, []string{path}, Options{Validate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	for r.Next() {
		got = append(got, string(r.Bytes()))
	}
	if r.Err() != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("read %q (%v), want %q", got, r.Err(), want)
	}
}
