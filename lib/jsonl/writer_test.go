package jsonl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/synthpipe/synthpipe/lib/exitcode"
)

// recorder keeps every Write it receives, separately.
type recorder struct {
	writes [][]byte
	failAt int // fail the Nth write (from 1) and after; 0: never
	err    error
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.failAt > 0 && len(r.writes)+1 >= r.failAt {
		r.writes = append(r.writes, nil)
		return 0, r.err
	}
	r.writes = append(r.writes, bytes.Clone(p))
	return len(p), nil
}

func TestWriterWholeLines(t *testing.T) {
	sizes := []int{10, 1000, DefaultWriteBuffer - 1, DefaultWriteBuffer, DefaultWriteBuffer + 1, 5 * DefaultWriteBuffer, 3, 40000, 40000}
	var want bytes.Buffer
	rec := &recorder{}
	w := NewWriter(rec)
	for i, n := range sizes {
		line := []byte(fmt.Sprintf("%d:%s", i, strings.Repeat("x", n)))
		want.Write(line)
		want.WriteByte('\n')
		if err := w.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	for i, p := range rec.writes {
		if len(p) == 0 || p[len(p)-1] != '\n' {
			t.Errorf("write %d (%d bytes) does not end in a newline: a torn line could reach the output", i, len(p))
		}
		if len(p) > DefaultWriteBuffer && bytes.Count(p, []byte("\n")) > 1 {
			t.Errorf("write %d holds a big line and others: %d bytes", i, len(p))
		}
		got.Write(p)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("output differs from the lines written")
	}
	if w.Buffered() != 0 {
		t.Errorf("Buffered = %d after Flush", w.Buffered())
	}
}

func TestWriterFlushEach(t *testing.T) {
	for _, tc := range []struct {
		name   string
		each   bool
		writes int
	}{
		{"buffered", false, 1},
		{"flush each", true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			w := NewWriter(rec)
			w.SetFlushEach(tc.each)
			for _, l := range []string{"{}", `{"a":1}`, `{"b":2}`} {
				if err := w.Write([]byte(l)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if len(rec.writes) != tc.writes {
				t.Errorf("%d writes reached the file, want %d", len(rec.writes), tc.writes)
			}
		})
	}
}

func TestWriterStickyError(t *testing.T) {
	boom := errors.New("boom")
	rec := &recorder{failAt: 1, err: boom}
	w := NewWriter(rec)
	w.SetFlushEach(true)
	if err := w.Write([]byte("{}")); err != boom {
		t.Fatalf("first Write = %v, want %v", err, boom)
	}
	for i := 0; i < 3; i++ {
		if err := w.Write([]byte("{}")); err != boom {
			t.Fatalf("Write after the error = %v, want %v", err, boom)
		}
		if err := w.Flush(); err != boom {
			t.Fatalf("Flush after the error = %v, want %v", err, boom)
		}
	}
	if len(rec.writes) != 1 {
		t.Errorf("the failed writer was called %d times, want once", len(rec.writes))
	}
}

func TestWriterBrokenPipe(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr.Close()
	defer pw.Close()
	w := NewWriter(pw)
	w.SetFlushEach(true)
	err = w.Write([]byte("{}"))
	if !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Write to a closed pipe = %v, want EPIPE", err)
	}
	if err2 := w.Write([]byte("{}")); err2 != err {
		t.Errorf("second Write = %v, want the same error", err2)
	}
}

func TestCreateOutputTornTail(t *testing.T) {
	long := strings.Repeat("y", 200<<10) // a torn tail longer than the chunk walked back
	tests := []struct {
		name     string
		existing string
		keep     string
		torn     string
	}{
		{name: "torn tail", existing: "{\"a\":1}\n{\"a\":", keep: "{\"a\":1}\n", torn: `{"a":`},
		{name: "long torn tail", existing: "{\"a\":1}\n" + long, keep: "{\"a\":1}\n", torn: long},
		{name: "nothing whole", existing: `{"a":`, keep: "", torn: `{"a":`},
		{name: "clean", existing: "{\"a\":1}\n", keep: "{\"a\":1}\n"},
		{name: "empty", existing: "", keep: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "out.jsonl", []byte(tc.existing))
			var warns []string
			o, err := CreateOutput(path, true, func(m string) { warns = append(warns, m) })
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Write([]byte(`{"new":true}`)); err != nil {
				t.Fatal(err)
			}
			if err := o.Close(); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if want := tc.keep + "{\"new\":true}\n"; string(got) != want {
				t.Errorf("file = %.80q, want %.80q", got, want)
			}
			saved, err := os.ReadFile(path + ".torn")
			if tc.torn == "" {
				if err == nil || len(warns) != 0 {
					t.Errorf("a clean file got a .torn file or a warning: %q", warns)
				}
				return
			}
			if string(saved) != tc.torn {
				t.Errorf(".torn = %.80q, want %.80q", saved, tc.torn)
			}
			want := fmt.Sprintf("%s: cut off a torn last line (%d bytes, kept in %s.torn)", path, len(tc.torn), path)
			if len(warns) != 1 || !strings.HasPrefix(warns[0], want) {
				t.Errorf("warnings = %q, want one starting %q", warns, want)
			}
		})
	}
}

func TestCreateOutputTruncates(t *testing.T) {
	path := writeFile(t, t.TempDir(), "out.jsonl", []byte("old\nold"))
	o, err := CreateOutput(path, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.Write([]byte("{}"))
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "{}\n" {
		t.Errorf("file = %q, want only the new record", got)
	}
}

// shortFile is an output stream that takes only room more bytes and then
// fails with ENOSPC, the way a full disk does part-way through a write.
type shortFile struct {
	data []byte
	room int
}

func (f *shortFile) Write(p []byte) (int, error) {
	n := min(len(p), f.room)
	f.data = append(f.data, p[:n]...)
	f.room -= n
	if n < len(p) {
		return n, &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}
	}
	return n, nil
}

func (f *shortFile) Truncate(size int64) error { f.data = f.data[:size]; return nil }
func (f *shortFile) Close() error              { return nil }

func TestSafeFileUndoesPartialWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		room  int
		whole string
		msg   string
	}{
		{name: "fails mid-record", room: 12, whole: "{\"a\":1}\n", msg: "(the partial record was removed; the file ends in a whole record)"},
		{name: "fails at a record boundary", room: 8, whole: "{\"a\":1}\n", msg: "write out.jsonl: no space left on device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &shortFile{room: tc.room}
			w := NewWriter(&safeFile{f: f, path: "out.jsonl"})
			w.SetFlushEach(true)
			var err error
			for i := 1; err == nil && i < 10; i++ {
				err = w.Write([]byte(fmt.Sprintf(`{"a":%d}`, i)))
			}
			wantCode(t, err, exitcode.IOErr, tc.msg)
			if !errors.Is(err, syscall.ENOSPC) {
				t.Errorf("error %q does not wrap ENOSPC", err)
			}
			if string(f.data) != tc.whole {
				t.Errorf("file = %q, want %q", f.data, tc.whole)
			}
		})
	}
}

// TestOutputFullDisk fills a real, tiny file system: the file must end in a
// whole record and the error must carry exit 74.
func TestOutputFullDisk(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v %s", err, bytes.TrimSpace(out))
	}
	defer exec.Command("umount", dir).Run()
	path := filepath.Join(dir, "out.jsonl")
	o, err := CreateOutput(path, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(`{"id":"` + strings.Repeat("z", 3000) + `"}`)
	written := 0
	for ; written < 1000; written++ {
		if err = o.Write(line); err != nil {
			break
		}
	}
	o.Close()
	wantCode(t, err, exitcode.IOErr, path, "no space left on device")
	data, rerr := os.ReadFile(path)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(data) != written*(len(line)+1) {
		t.Errorf("file holds %d bytes, want %d whole records (%d bytes)", len(data), written, written*(len(line)+1))
	}
}

func TestCreateOutputErrors(t *testing.T) {
	t.Run("dev full", func(t *testing.T) {
		o, err := CreateOutput("/dev/full", false, nil)
		if err != nil {
			t.Skipf("no /dev/full: %v", err)
		}
		err = o.Write([]byte("{}"))
		o.Close()
		wantCode(t, err, exitcode.IOErr, "write /dev/full: no space left on device")
	})
	t.Run("missing directory", func(t *testing.T) {
		_, err := CreateOutput(filepath.Join(t.TempDir(), "no", "out.jsonl"), false, nil)
		wantCode(t, err, exitcode.CantCreate, "no such file or directory")
	})
}

func TestFilesCheck(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "in.jsonl", []byte("{}\n"))
	other := writeFile(t, dir, "other.jsonl", []byte("{}\n"))
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Link(in, link); err != nil {
		t.Fatal(err)
	}
	open := func(path string, flag int) *os.File {
		f, err := os.OpenFile(path, flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	devNull := open(os.DevNull, os.O_RDWR)
	tests := []struct {
		name  string
		files func(fs *Files)
		want  string // "" for no clash
	}{
		{"different files", func(fs *Files) { fs.Inputs(nil, []string{in, "-"}); fs.Output("-o", other, false) }, ""},
		{"new output", func(fs *Files) { fs.Inputs(nil, []string{in}); fs.Output("-o", filepath.Join(dir, "new.jsonl"), false) }, ""},
		{"same name", func(fs *Files) { fs.Inputs(nil, []string{other, in}); fs.Output("-o", in, false) }, "is also the input " + in + ": it would be emptied before it is read"},
		{"hard link", func(fs *Files) { fs.Inputs(nil, []string{in}); fs.Output("-o", link, true) }, "the run would read back its own output"},
		{"character device", func(fs *Files) { fs.Inputs(devNull, nil); fs.Stdout(devNull); fs.Output("-o", os.DevNull, false) }, ""},
		{"stdin is the output", func(fs *Files) { fs.Inputs(open(in, os.O_RDONLY), nil); fs.Output("--errors", in, false) }, "--errors " + in + " is also stdin"},
		{"stdout emptied by the shell", func(fs *Files) { fs.Inputs(nil, []string{in}); fs.Stdout(open(in, os.O_WRONLY)) }, "stdout is also the input " + in + ", which the shell emptied"},
		{"stdout appended to is read", func(fs *Files) { fs.Inputs(open(in, os.O_RDONLY), nil); fs.Stdout(open(in, os.O_WRONLY|os.O_APPEND)) }, "stdout is also stdin: the run would read back its own output"},
		{"two outputs", func(fs *Files) { fs.Stdout(open(in, os.O_WRONLY|os.O_APPEND)); fs.Output("--errors", link, false) }, "are the same file: the two outputs would be mixed"},
		{"two new outputs", func(fs *Files) { fs.Output("-o", "x.jsonl", false); fs.Output("--errors", "./x.jsonl", false) }, "are the same file"},
		{"resume: --already is the output appended to", func(fs *Files) { fs.State("--already", []string{in}); fs.Output("-o", link, true) }, ""},
		{"resume: --already is stdout appended to", func(fs *Files) { fs.State("--already", []string{in}); fs.Stdout(open(in, os.O_WRONLY|os.O_APPEND)) }, ""},
		{"--already is the output truncated", func(fs *Files) { fs.State("--already", []string{in}); fs.Output("-o", in, false) }, "it would be emptied before it is read"},
		{"inputs read twice", func(fs *Files) {
			fs.Inputs(open(in, os.O_RDONLY), []string{in, "-", link})
			fs.State("--done", []string{in})
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var fs Files
			tc.files(&fs)
			err := fs.Check()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantCode(t, err, exitcode.Usage, tc.want)
		})
	}
}

// aliasRecorder notes which writes came straight from the block's memory.
type aliasRecorder struct {
	block  []byte
	out    bytes.Buffer
	direct []bool
}

func (a *aliasRecorder) Write(p []byte) (int, error) {
	a.direct = append(a.direct, &p[0] == &a.block[0] || &p[0] == &a.block[len(a.block)-len(p)])
	if p[len(p)-1] != '\n' {
		return 0, fmt.Errorf("a write of %d bytes does not end in a newline", len(p))
	}
	return a.out.Write(p)
}

// TestWriterLinesFromReaderMemory writes long lines that are slices of one
// block, as a Reader hands them out: where the next byte in memory is the
// line's own newline the line goes out from there, uncopied, but never with
// a byte that is not its newline.
func TestWriterLinesFromReaderMemory(t *testing.T) {
	long := strings.Repeat("x", DefaultWriteBuffer/2)
	block := []byte(long + "\n{}\n" + long + "\r\n" + long + "Z\n" + long + "\n")
	// slices of the block that keep its capacity, as a Reader's lines do
	// (bytes.Split would cut the capacity at each line's end)
	var lines [][]byte
	for start := 0; start < len(block); {
		end := start + bytes.IndexByte(block[start:], '\n')
		line := block[start:end]
		line = bytes.TrimSuffix(line, []byte("\r")) // '\r' follows in memory
		line = bytes.TrimSuffix(line, []byte("Z"))  // 'Z' follows in memory
		lines = append(lines, line)
		start = end + 1
	}
	rec := &aliasRecorder{block: block}
	w := NewWriter(rec)
	var want bytes.Buffer
	for _, l := range lines {
		want.Write(l)
		want.WriteByte('\n')
		if err := w.Write(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec.out.Bytes(), want.Bytes()) {
		t.Errorf("output differs from the lines written: %d bytes, want %d", rec.out.Len(), want.Len())
	}
	// the first and last lines went out uncopied; the others through the buffer
	if want := []bool{true, false, false, true}; fmt.Sprint(rec.direct) != fmt.Sprint(want) {
		t.Errorf("uncopied writes %v, want %v", rec.direct, want)
	}
}

// TestCreateOutputAppendLocks: a second writer appending to the same file is
// refused (75) while the first holds it, and may append once it is closed.
func TestCreateOutputAppendLocks(t *testing.T) {
	path := writeFile(t, t.TempDir(), "out.jsonl", []byte("{\"id\":\"a\"}\n"))
	first, err := CreateOutput(path, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = CreateOutput(path, true, nil)
	wantCode(t, err, exitcode.TempFail, "is being appended to by another process")
	if err := first.Write([]byte(`{"id":"b"}`)); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err := CreateOutput(path, true, nil)
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	second.Close()
}

// TestCreateOutputAppendCompressed: appending to a gzip or zstd file is
// refused (64) and leaves it byte for byte as it was: no torn tail cut, no
// .torn file.
func TestCreateOutputAppendCompressed(t *testing.T) {
	for name, data := range map[string][]byte{
		"out.jsonl.gz":  {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 'x'},
		"out.jsonl.zst": {0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeFile(t, dir, name, data)
			_, err := CreateOutput(path, true, nil)
			wantCode(t, err, exitcode.Usage, "-compressed: records appended to it would be plain text")
			got, _ := os.ReadFile(path)
			if !bytes.Equal(got, data) {
				t.Errorf("file changed: %q", got)
			}
			if _, err := os.Stat(path + ".torn"); err == nil {
				t.Error("a .torn file was written")
			}
		})
	}
}

func TestFilesStdinReadOnce(t *testing.T) {
	var fs Files
	fs.Inputs(nil, nil)
	fs.State("--already", []string{"-"})
	wantCode(t, fs.Check(), exitcode.Usage, "stdin is read by both the input and --already -")
	var ok Files
	ok.Inputs(nil, []string{"in.jsonl", "-", "-"})
	if err := ok.Check(); err != nil {
		t.Errorf("stdin named twice as an input: %v", err)
	}
}

// TestWriterLines: Lines counts the lines that reached the writer whole,
// through a failed write too, so that a caller can say which were lost;
// lines held where they lie (HoldLines) likewise.
func TestWriterLines(t *testing.T) {
	for _, tc := range []struct {
		name      string
		room      int
		flushEach bool
		hold      bool
		want      int64
	}{
		{"all written", 1000, false, false, 9},
		{"buffered, cut mid-line", 20, false, false, 2},    // 8+8 bytes whole, the third cut
		{"flushed each, cut mid-line", 20, true, false, 2}, // the same, a write per line
		{"undone by a safe file", 20, false, false, 0},     // the partial buffer is removed whole
		{"held, all written", 1000, false, true, 9},
		{"held, cut mid-line", 20, false, true, 2}, // one write of the nine, cut in the third
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &shortFile{room: tc.room}
			var sink io.Writer = f
			if strings.HasPrefix(tc.name, "undone") {
				sink = &safeFile{f: f, path: "out.jsonl"}
			}
			w := NewWriter(sink)
			w.SetFlushEach(tc.flushEach)
			if tc.hold {
				w.HoldLines()
			}
			// the lines one after the other, each followed by its
			// newline, as a Reader leaves them
			var mem []byte
			for i := 1; i < 10; i++ {
				mem = fmt.Appendf(mem, "{\"a\":%d}\n", i)
			}
			for i := range 9 {
				if w.WriteStableLine(mem[8*i:8*i+7]) != nil {
					break
				}
			}
			w.Flush()
			if got := w.Lines(); got != tc.want {
				t.Fatalf("Lines() = %d, want %d (file %q)", got, tc.want, f.data)
			}
		})
	}
}

// wholeLines records each write it is given, refusing one that does not end
// a line.
type wholeLines struct {
	t      *testing.T
	out    bytes.Buffer
	writes int
}

func (w *wholeLines) Write(p []byte) (int, error) {
	if len(p) == 0 || p[len(p)-1] != '\n' {
		w.t.Errorf("a write that does not end a line: %q", p)
	}
	w.writes++
	return w.out.Write(p)
}

// TestHoldLines reads files of every shape, serially (lines crossing the
// splitter's buffer, whose memory it then reuses) and ahead (in tiny
// chunks and batches), and writes each record through a Writer that holds
// the lines where the reader left them: the output must be exactly what a
// Writer that copies them writes, in whole lines.
func TestHoldLines(t *testing.T) {
	dir := t.TempDir()
	var many strings.Builder
	for i := 0; many.Len() < 3*minBuffer; i++ {
		fmt.Fprintf(&many, "{\"id\":\"r%d\",\"ids\":[%s]}\n", i, strings.Repeat("7,", i%300)+"1")
		switch i % 50 {
		case 7:
			many.WriteString("\n  \n")
		case 9:
			fmt.Fprintf(&many, "{\"crlf\":%d}\r\n", i)
		case 11:
			fmt.Fprintf(&many, "{\"long\":\"%s\"}\n", strings.Repeat("x", 3000+i))
		}
	}
	inputs := map[string][]byte{
		"many":      []byte(many.String()),
		"torn":      []byte(many.String() + `{"id":"last"}`),
		"BOM, CRLF": []byte("\xef\xbb\xbf{\"a\":1}\n{\"a\":2}\r\n{\"a\":3}\n"),
		"gzip":      gzipped(t, []byte(many.String())),
	}
	var files []string
	for name, data := range inputs {
		files = append(files, writeFile(t, dir, strings.ReplaceAll(strings.ReplaceAll(name, " ", ""), ",", "")+".jsonl", data))
	}
	files = append(files, filepath.Join(parquetDir, "snappy_dict_groups.parquet"))
	copyAll := func(names []string, opt Options, hold bool) (string, int) {
		t.Helper()
		sink := &wholeLines{t: t}
		w := NewWriter(sink)
		opt.LastLineRecord = true
		if hold {
			w.HoldLines()
			opt.BeforeReuse = w.WriteHeld
		}
		opt.BeforeRead = w.Flush
		r, err := Open(nil, names, opt)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			if err := w.WriteStableLine(r.Bytes()); err != nil {
				t.Fatal(err)
			}
		}
		if r.Err() != nil {
			t.Fatal(r.Err())
		}
		r.Close()
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		return sink.out.String(), sink.writes
	}
	for _, names := range append([][]string{files}, func() (each [][]string) {
		for _, f := range files {
			each = append(each, []string{f})
		}
		return each
	}()...) {
		want, copies := copyAll(names, Options{}, false)
		got, writes := copyAll(names, Options{}, true)
		if got != want {
			t.Errorf("%v, read serially: holding the lines wrote %d bytes, copying them %d, not the same", names, len(got), len(want))
		}
		t.Logf("%v: %d writes holding the lines, %d copying them", names, writes, copies)
		for _, size := range []int{64, 4096} {
			forceReadAhead(t, size, 3)
			if got, _ := copyAll(names, Options{Parallel: true, Prepare: preparedLine}, true); got != want {
				t.Errorf("%v, read ahead in %d-byte chunks: holding the lines wrote %d bytes, copying them %d, not the same", names, size, len(got), len(want))
			}
		}
	}
}

// TestWriteCopiesWithHoldLines: with HoldLines, a line given to Write (not
// WriteStableLine) is copied even when a newline follows it in memory: its
// caller may write over it at once, as a reused scratch buffer is.
func TestWriteCopiesWithHoldLines(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	w.HoldLines()
	scratch := []byte("{\"a\":1}\n{\"b\":2}\n")
	for _, want := range []string{`{"a":1}`, `{"c":3}`} {
		line := append(scratch[:0], want...)
		if err := w.Write(line); err != nil {
			t.Fatal(err)
		}
		copy(scratch, "XXXXXXXX")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "{\"a\":1}\n{\"c\":3}\n" {
		t.Errorf("wrote %q", got)
	}
}
