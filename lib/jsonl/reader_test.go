package jsonl

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/synthpipe/synthpipe/lib/exitcode"
)

// readResult is everything a Reader produced.
type readResult struct {
	lines []string
	pos   []string // FILE:LINE of each line
	warns []string
	stats Stats
	err   error
}

func readAll(t *testing.T, stdin io.Reader, names []string, opt Options) readResult {
	t.Helper()
	var res readResult
	opt.Warn = func(msg string) { res.warns = append(res.warns, msg) }
	r, err := Open(stdin, names, opt)
	if err != nil {
		res.err = err
		return res
	}
	defer r.Close()
	for r.Next() {
		res.lines = append(res.lines, string(r.Bytes()))
		res.pos = append(res.pos, r.Pos())
	}
	res.err = r.Err()
	res.stats = r.Stats()
	return res
}

// writeFile writes data to a new file in dir and returns its path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func zstded(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, err := zstd.NewWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// wantCode checks that err carries the exit code and mentions every part.
func wantCode(t *testing.T, err error, code int, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want exit %d", code)
	}
	var ce *exitcode.Error
	if !errors.As(err, &ce) || ce.Code != code {
		t.Fatalf("error %q (%T) does not carry exit %d", err, err, code)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

func TestReaderSources(t *testing.T) {
	dir := t.TempDir()
	rec := []byte("{\"id\":\"a\"}\n{\"id\":\"b\"}\n")
	plain := writeFile(t, dir, "plain.jsonl", rec)
	second := writeFile(t, dir, "second.jsonl", []byte("{\"id\":\"c\"}\n"))
	// the names say nothing: the magic bytes decide
	gz := writeFile(t, dir, "gz.txt", gzipped(t, rec))
	zst := writeFile(t, dir, "zst.txt", zstded(t, rec))
	// `cat a.gz b.gz > c.gz` makes a valid gzip file of several members
	catGz := writeFile(t, dir, "cat.gz", append(gzipped(t, rec), gzipped(t, []byte("{\"id\":\"c\"}\n"))...))
	catZst := writeFile(t, dir, "cat.zst", append(zstded(t, rec), zstded(t, []byte("{\"id\":\"c\"}\n"))...))
	tests := []struct {
		name  string
		stdin string
		files []string
		want  []string
		pos   []string
	}{
		{name: "stdin by default", stdin: string(rec), want: []string{`{"id":"a"}`, `{"id":"b"}`}, pos: []string{"<stdin>:1", "<stdin>:2"}},
		{name: "stdin as dash", stdin: string(rec), files: []string{"-"}, want: []string{`{"id":"a"}`, `{"id":"b"}`}},
		{name: "files in order", files: []string{second, plain}, want: []string{`{"id":"c"}`, `{"id":"a"}`, `{"id":"b"}`},
			pos: []string{second + ":1", plain + ":1", plain + ":2"}},
		{name: "file and stdin", stdin: "{\"id\":\"s\"}\n", files: []string{plain, "-"}, want: []string{`{"id":"a"}`, `{"id":"b"}`, `{"id":"s"}`}},
		{name: "gzip", files: []string{gz}, want: []string{`{"id":"a"}`, `{"id":"b"}`}},
		{name: "zstd", files: []string{zst}, want: []string{`{"id":"a"}`, `{"id":"b"}`}},
		{name: "concatenated gzip", files: []string{catGz}, want: []string{`{"id":"a"}`, `{"id":"b"}`, `{"id":"c"}`}},
		{name: "concatenated zstd", files: []string{catZst}, want: []string{`{"id":"a"}`, `{"id":"b"}`, `{"id":"c"}`}},
		{name: "gzip on stdin", stdin: string(gzipped(t, rec)), want: []string{`{"id":"a"}`, `{"id":"b"}`}},
		{name: "mixed", files: []string{zst, plain, gz}, want: []string{`{"id":"a"}`, `{"id":"b"}`, `{"id":"a"}`, `{"id":"b"}`, `{"id":"a"}`, `{"id":"b"}`}},
		{name: "empty stdin", stdin: "", want: nil},
		{name: "shorter than a magic", stdin: "{}", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := readAll(t, strings.NewReader(tc.stdin), tc.files, Options{Validate: true})
			if res.err != nil {
				t.Fatal(res.err)
			}
			if fmt.Sprint(res.lines) != fmt.Sprint(tc.want) {
				t.Errorf("lines = %q, want %q", res.lines, tc.want)
			}
			if tc.pos != nil && fmt.Sprint(res.pos) != fmt.Sprint(tc.pos) {
				t.Errorf("positions = %q, want %q", res.pos, tc.pos)
			}
		})
	}
}

func TestReaderDamagedCompression(t *testing.T) {
	dir := t.TempDir()
	rec := bytes.Repeat([]byte("{\"id\":\"a\",\"text\":\"some text that compresses\"}\n"), 2000)
	gz := gzipped(t, rec)
	truncGz := writeFile(t, dir, "trunc.jsonl.gz", gz[:len(gz)/2])
	zs := zstded(t, rec)
	truncZst := writeFile(t, dir, "trunc.jsonl.zst", zs[:len(zs)-10])
	garbage := writeFile(t, dir, "garbage.jsonl.zst", append(zstded(t, rec), []byte("this is not a zstd frame")...))
	badHeader := writeFile(t, dir, "header.gz", []byte{0x1f, 0x8b, 0, 0, 0})
	for _, tc := range []struct {
		name string
		file string
		// where the message says the damage is, and what was read before
		where []string
	}{
		{"truncated gzip", truncGz, []string{"lines before were read"}},
		{"truncated zstd", truncZst, nil},
		{"garbage after a zstd frame", garbage, []string{garbage + ":2001: ", "the 2000 lines before were read"}},
		{"bad gzip header", badHeader, []string{badHeader + ": "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := readAll(t, nil, []string{tc.file}, Options{})
			wantCode(t, res.err, exitcode.DataErr, append([]string{tc.file, "damaged or truncated", "restore it"}, tc.where...)...)
		})
	}
}

func TestReaderLongLines(t *testing.T) {
	big := func(n int) string {
		head := `{"id":"big","text":"`
		return head + strings.Repeat("x", n-len(head)-2) + `"}`
	}
	line70k, line20M := big(70<<10), big(20<<20)
	tests := []struct {
		name    string
		input   string
		opt     Options
		want    []string
		wantErr []string
		invalid int64
	}{
		{name: "over 64 KiB", input: line70k + "\n{}\n", want: []string{line70k, "{}"}},
		{name: "20 MB", input: "{}\n" + line20M + "\n{}\n", want: []string{"{}", line20M, "{}"}},
		{name: "over the cap", input: "{}\n" + line70k + "\n{}\n", opt: Options{MaxLine: 64 << 10, MaxLineFlag: "--max-line"},
			want: []string{"{}"}, wantErr: []string{"<stdin>:2:", "longer than 64 KiB", "--max-line"}},
		{name: "over the cap, own flag name", input: line70k + "\n", opt: Options{MaxLine: 1000, MaxLineFlag: "--line-cap"},
			wantErr: []string{"longer than 1000 bytes", "--line-cap"}},
		{name: "over the cap without newline", input: "{}\n" + line70k, opt: Options{MaxLine: 64 << 10},
			want: []string{"{}"}, wantErr: []string{"<stdin>:2:", "--max-line"}},
		{name: "skip an overlong line and go on", input: "{}\n" + line70k + "\n{\"a\":1}\n" + line70k + "\n{\"a\":2}\n",
			opt: Options{MaxLine: 64 << 10, SkipInvalid: true}, want: []string{"{}", `{"a":1}`, `{"a":2}`}, invalid: 2},
		{name: "exactly the cap", input: big(1000) + "\n", opt: Options{MaxLine: 1000}, want: []string{big(1000)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := readAll(t, strings.NewReader(tc.input), nil, tc.opt)
			if len(res.lines) != len(tc.want) {
				t.Fatalf("got %d lines, want %d (err %v)", len(res.lines), len(tc.want), res.err)
			}
			for i := range tc.want {
				if res.lines[i] != tc.want[i] {
					t.Errorf("line %d differs (%d bytes, want %d)", i+1, len(res.lines[i]), len(tc.want[i]))
				}
			}
			if tc.wantErr != nil {
				wantCode(t, res.err, exitcode.DataErr, tc.wantErr...)
			} else if res.err != nil {
				t.Fatal(res.err)
			}
			if res.stats.Invalid != tc.invalid {
				t.Errorf("Invalid = %d, want %d", res.stats.Invalid, tc.invalid)
			}
		})
	}
}

func TestReaderLineShapes(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		opt     Options
		want    []string
		blank   int64
		torn    int64
		warns   int
		wantErr []string
	}{
		{name: "blank lines", input: "\n{}\n  \n\t\r\n{\"a\":1}\n\n", want: []string{"{}", `{"a":1}`}, blank: 4},
		{name: "CRLF", input: "{\"a\":1}\r\n{\"a\":2}\r\n", want: []string{`{"a":1}`, `{"a":2}`}},
		{name: "BOM", input: "\xef\xbb\xbf{\"a\":1}\n{\"a\":2}\n", want: []string{`{"a":1}`, `{"a":2}`}},
		{name: "BOM only on the first line", input: "{}\n\xef\xbb\xbf{}\n", opt: Options{Validate: true},
			want: []string{"{}"}, wantErr: []string{"<stdin>:2:", "invalid JSON at byte 1", "byte order mark", "joined with cat"}},
		{name: "torn last line", input: "{\"a\":1}\n{\"a\":", want: []string{`{"a":1}`}, torn: 1, warns: 1},
		{name: "only a torn line", input: "{\"a\":1}", want: nil, torn: 1, warns: 1},
		{name: "invalid UTF-8", input: "{}\n{\"a\":\"b\xffc\"}\n", opt: Options{Validate: true},
			want: []string{"{}"}, wantErr: []string{"<stdin>:2:", "invalid UTF-8", "at byte 8", "--skip-invalid"}},
		{name: "non-object", input: "[1,2]\n", opt: Options{Validate: true}, wantErr: []string{"<stdin>:1:", "not an array"}},
		{name: "not validated", input: "[1,2]\nnot json\n", want: []string{"[1,2]", "not json"}},
		{name: "skip invalid", input: "{}\n[1]\nnope\n{\"a\":1}\n", opt: Options{Validate: true, SkipInvalid: true},
			want: []string{"{}", `{"a":1}`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := readAll(t, strings.NewReader(tc.input), nil, tc.opt)
			if fmt.Sprint(res.lines) != fmt.Sprint(tc.want) {
				t.Errorf("lines = %q, want %q", res.lines, tc.want)
			}
			if tc.wantErr != nil {
				wantCode(t, res.err, exitcode.DataErr, tc.wantErr...)
				return
			}
			if res.err != nil {
				t.Fatal(res.err)
			}
			if res.stats.Blank != tc.blank || res.stats.Torn != tc.torn || len(res.warns) != tc.warns {
				t.Errorf("blank %d torn %d warnings %q; want %d, %d, %d", res.stats.Blank, res.stats.Torn, res.warns, tc.blank, tc.torn, tc.warns)
			}
		})
	}
}

func TestReaderTornOncePerFile(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.jsonl", []byte("{\"n\":1}\n{\"n\":"))
	b := writeFile(t, dir, "b.jsonl", []byte("{\"n\":2}\n{\"n\":3}\n{\"x"))
	c := writeFile(t, dir, "c.jsonl.gz", gzipped(t, []byte("{\"n\":4}\n{")))
	res := readAll(t, nil, []string{a, b, c}, Options{Validate: true})
	if res.err != nil {
		t.Fatal(res.err)
	}
	if want := `[{"n":1} {"n":2} {"n":3} {"n":4}]`; fmt.Sprint(res.lines) != want {
		t.Errorf("lines = %s, want %s", res.lines, want)
	}
	want := []string{a + ":2: torn last line (5 bytes", b + ":3: torn last line (3 bytes", c + ":2: torn last line (1 bytes"}
	if len(res.warns) != len(want) {
		t.Fatalf("warnings = %q, want one per file", res.warns)
	}
	for i, w := range want {
		if !strings.HasPrefix(res.warns[i], w) {
			t.Errorf("warning %d = %q, want it to start with %q", i, res.warns[i], w)
		}
	}
	if res.stats.Torn != 3 {
		t.Errorf("Torn = %d, want 3", res.stats.Torn)
	}
}

func TestReaderBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.jsonl", []byte("{}\n"))
	unreadable := writeFile(t, dir, "secret.jsonl", []byte("{}\n"))
	if err := os.Chmod(unreadable, 0); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		files []string
		parts []string
		root  bool // whether the case holds when running as root
	}{
		{name: "missing", files: []string{good, filepath.Join(dir, "nope.jsonl")}, parts: []string{"open " + dir + "/nope.jsonl: no such file or directory"}, root: true},
		{name: "directory", files: []string{dir}, parts: []string{dir + " is a directory with no .parquet file"}, root: true},
		{name: "unreadable", files: []string{unreadable}, parts: []string{"open " + unreadable + ": permission denied"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.root && os.Geteuid() == 0 {
				t.Skip("root reads any file: permissions cannot make one unreadable")
			}
			// checked up front: nothing is read from the good first file
			_, err := Open(nil, tc.files, Options{})
			wantCode(t, err, exitcode.NoInput, tc.parts...)
		})
	}
}

func TestReaderBeforeRead(t *testing.T) {
	stop := errors.New("downstream closed")
	calls := 0
	opt := Options{BeforeRead: func() error {
		calls++
		if calls > 1 {
			return stop
		}
		return nil
	}}
	// a pipe delivers one write per read, so the hook runs between records
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte("{\"a\":1}\n"))
		pw.Write([]byte("{\"a\":2}\n"))
		pw.Close()
	}()
	res := readAll(t, pr, nil, opt)
	if !errors.Is(res.err, stop) || res.err != stop {
		t.Fatalf("err = %v, want the hook's own error, unwrapped", res.err)
	}
	if len(res.lines) != 1 {
		t.Errorf("lines = %q, want the first record only", res.lines)
	}
}

func TestReaderLineCapLimit(t *testing.T) {
	_, err := Open(nil, nil, Options{MaxLine: MaxLineLimit + 1})
	wantCode(t, err, exitcode.Usage, "above the limit")
}

func TestReaderContextCause(t *testing.T) {
	stop := errors.New("stopped by SIGTERM")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(stop)
	res := readAll(t, strings.NewReader("{}\n"), nil, Options{Context: ctx})
	if res.err != stop {
		t.Fatalf("err = %v, want the context's cause", res.err)
	}
	if len(res.lines) != 0 {
		t.Errorf("read %q after the context was done", res.lines)
	}
}

// TestReaderNamedPipe reads a FIFO, as in `budget-cut fifo` with a generator
// writing into it: it must be opened once only, when its turn comes.
func TestReaderNamedPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	wrote := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString("{\"a\":1}\n{\"a\":2}\n")
			f.Close()
		}
		wrote <- err
	}()
	done := make(chan readResult, 1)
	go func() { done <- readAll(t, nil, []string{fifo}, Options{Validate: true}) }()
	select {
	case res := <-done:
		if res.err != nil || len(res.lines) != 2 {
			t.Fatalf("lines %q, err %v; want both records", res.lines, res.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading a named pipe hung: it was opened and closed before its turn")
	}
	if err := <-wrote; err != nil {
		t.Fatalf("the writer failed: %v", err)
	}
}

func TestReaderSkippedHearsEveryInvalidLine(t *testing.T) {
	var skipped []string
	opt := Options{Validate: true, SkipInvalid: true, MaxLine: 16, Skipped: func(pos string, cause error) {
		skipped = append(skipped, pos+": "+cause.Error())
	}}
	input := "{}\n[1]\n{\"a\":\"far too long a line\"}\n{\"b\":2}\n"
	res := readAll(t, strings.NewReader(input), nil, opt)
	if fmt.Sprint(res.lines) != fmt.Sprint([]string{"{}", `{"b":2}`}) {
		t.Errorf("lines = %q", res.lines)
	}
	want := []string{"<stdin>:2: invalid JSON at byte 1: a record must be a JSON object, not an array",
		"<stdin>:3: line longer than 16 bytes; raise the cap with --max-line (up to 1G)"}
	if fmt.Sprint(skipped) != fmt.Sprint(want) {
		t.Errorf("skipped = %q, want %q", skipped, want)
	}
}

// TestLastLineRecord: with LastLineRecord a last line without its newline
// that is whole JSON is a record (read ahead or not); a cut one stays torn.
func TestLastLineRecord(t *testing.T) {
	dir := t.TempDir()
	var big bytes.Buffer
	for i := 0; int64(big.Len()) < aheadMinSize+4096; i++ {
		fmt.Fprintf(&big, "{\"id\":\"%d\"}\n", i)
	}
	for _, tc := range []struct {
		name, tail string
		record     bool
	}{
		{"whole", `{"id":"last"}`, true},
		{"whole with CR", "{\"id\":\"last\"}\r", true},
		{"cut", `{"id":"la`, false},
	} {
		for _, size := range []string{"small", "read ahead"} {
			t.Run(tc.name+", "+size, func(t *testing.T) {
				data := []byte("{\"id\":\"first\"}\n")
				if size != "small" {
					data = big.Bytes()
				}
				path := writeFile(t, dir, "in.jsonl", append(bytes.Clone(data), tc.tail...))
				var warned []string
				// Prepare reuses the values Next is done with, as tools do.
				prepare := func(l []byte, reuse any) any {
					n, _ := reuse.(*int)
					if n == nil {
						n = new(int)
					}
					*n = len(l)
					return n
				}
				opt := Options{LastLineRecord: true, Parallel: true, Prepare: prepare,
					Warn: func(m string) { warned = append(warned, m) }}
				r, err := Open(nil, []string{path}, opt)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				last := ""
				for r.Next() {
					last = string(r.Bytes())
					if *r.Prepared().(*int) != len(r.Bytes()) {
						t.Fatal("the record was not prepared")
					}
				}
				if r.Err() != nil {
					t.Fatal(r.Err())
				}
				if got := last == `{"id":"last"}`; got != tc.record {
					t.Errorf("last record %q; read as a record: %v, want %v", last, got, tc.record)
				}
				if len(warned) != 1 || strings.Contains(warned[0], "torn") == tc.record {
					t.Errorf("warnings %q", warned)
				}
				if torn := r.Stats().Torn; (torn == 1) == tc.record {
					t.Errorf("%d torn", torn)
				}
			})
		}
	}
}
