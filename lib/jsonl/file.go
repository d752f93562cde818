package jsonl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/synthpipe/synthpipe/lib/exitcode"
)

// OutputFile is an output the tool controls (-o FILE): every record reaches
// the file whole and flushed, and a write that fails part-way (a full disk)
// is cut back so that the file still ends in a whole record.
type OutputFile struct {
	*Writer
	f    *safeFile
	path string
}

// CreateOutput opens path for writing records: truncated, or appended to with
// appendMode.
//
// When appending, the file is locked first (an exclusive flock, held until
// Close): a second process appending to it at the same time is refused with
// exit 75 instead of writing past the budget the first one counts. A
// compressed file is refused (64) untouched: plain records appended to it
// would be neither gzip nor JSONL. Then a torn last line left by an earlier
// run that was killed is cut off and kept in path+".torn"; warn says so.
func CreateOutput(path string, appendMode bool, warn func(string)) (*OutputFile, error) {
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendMode {
		flags = os.O_RDWR | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, exitcode.CantCreatef("create %s: %v", path, unwrapPath(err))
	}
	size := int64(0)
	if appendMode {
		if err := lockForAppend(f, path); err != nil {
			f.Close()
			return nil, err
		}
		if size, err = cutTornTail(f, path, warn); err != nil {
			f.Close()
			return nil, err
		}
	}
	sf := &safeFile{f: f, path: path, good: size}
	w := NewWriter(sf)
	w.SetFlushEach(true)
	return &OutputFile{Writer: w, f: sf, path: path}, nil
}

// OpenOutput returns where a tool writes its records: the file at path (-o;
// see CreateOutput), or stdout when path is empty. finish flushes, and for a
// file closes it: call it once at the end and keep its error, so that what
// was done reaches the output even when the run fails.
func OpenOutput(path string, appendMode bool, stdout io.Writer, warn func(string)) (w *Writer, finish func() error, err error) {
	if path == "" {
		w = NewWriter(stdout)
		return w, w.Flush, nil
	}
	f, err := CreateOutput(path, appendMode, warn)
	if err != nil {
		return nil, nil, err
	}
	return f.Writer, f.Close, nil
}

// Close flushes and closes the file.
func (o *OutputFile) Close() error {
	ferr := o.Flush()
	cerr := o.f.f.Close()
	if ferr != nil {
		return ferr
	}
	if cerr != nil {
		return exitcode.IOErrorf("close %s: %v", o.path, unwrapPath(cerr))
	}
	return nil
}

// lockForAppend takes the exclusive lock of a file to append to, without
// waiting, and refuses a compressed one.
func lockForAppend(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return exitcode.CantCreatef("stat %s: %v", path, unwrapPath(err))
	}
	if !fi.Mode().IsRegular() {
		return nil // a pipe or a device: nothing to lock, nothing to repair
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return exitcode.TempFailf("%s is being appended to by another process (another run at the same time?): refused, so that its budget holds; try again when that run ends", path)
		}
		return exitcode.CantCreatef("lock %s: %v", path, err)
	}
	head := make([]byte, 4)
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return exitcode.NoInputf("read %s: %v", path, unwrapPath(err))
	}
	if kind := compression(head[:n]); kind != "" {
		return exitcode.Usagef("%s is %s-compressed: records appended to it would be plain text in a compressed file; append to an uncompressed file instead (and compress it when the job is done)", path, kind)
	}
	return nil
}

// cutTornTail removes bytes after the last newline of f and saves them to
// path.torn. It returns the size of what is kept.
func cutTornTail(f *os.File, path string, warn func(string)) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, exitcode.CantCreatef("stat %s: %v", path, unwrapPath(err))
	}
	size := fi.Size()
	if size == 0 || !fi.Mode().IsRegular() {
		return size, nil
	}
	// Walk back in chunks to the last newline.
	const chunk = 64 << 10
	end := size
	buf := make([]byte, chunk)
	for end > 0 {
		start := max(end-chunk, 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && err != io.EOF {
			return 0, exitcode.NoInputf("read %s: %v", path, unwrapPath(err))
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			end = start + int64(i) + 1
			break
		}
		end = start
	}
	if end == size {
		return size, nil
	}
	torn := make([]byte, size-end)
	if _, err := f.ReadAt(torn, end); err != nil && err != io.EOF {
		return 0, exitcode.NoInputf("read %s: %v", path, unwrapPath(err))
	}
	if err := os.WriteFile(path+".torn", torn, 0o644); err != nil {
		return 0, exitcode.CantCreatef("save the torn last line of %s: %v", path, unwrapPath(err))
	}
	if err := f.Truncate(end); err != nil {
		return 0, exitcode.IOErrorf("cut the torn last line of %s: %v", path, unwrapPath(err))
	}
	if warn != nil {
		warn(fmt.Sprintf("%s: cut off a torn last line (%d bytes, kept in %s.torn): that record will be redone", path, size-end, path))
	}
	return end, nil
}

// outputStream is what safeFile needs of its file: an *os.File, or in tests
// one that fails part-way through a write.
type outputStream interface {
	io.WriteCloser
	Truncate(size int64) error
}

// safeFile is an output file that undoes a partial write.
type safeFile struct {
	f    outputStream
	path string
	good int64 // size after the last whole write
}

func (s *safeFile) Write(p []byte) (int, error) {
	n, err := s.f.Write(p)
	if err == nil {
		s.good += int64(n)
		return n, nil
	}
	undone := ""
	if n > 0 {
		if terr := s.f.Truncate(s.good); terr == nil {
			undone = " (the partial record was removed; the file ends in a whole record)"
		} else {
			undone = fmt.Sprintf(" (and removing the partial record failed: %v)", unwrapPath(terr))
		}
	}
	// %w keeps the cause visible: a closed pipe (-o /dev/stdout) is no failure.
	return 0, exitcode.WithCode(exitcode.IOErr, fmt.Errorf("write %s: %w%s", s.path, unwrapPath(err), undone))
}

// ExistingFiles returns the paths that exist, telling missing of each one
// that does not: the earlier outputs a resumable run reads (--done,
// --already) do not exist before its first run, and count as empty. Any
// other failure (a directory, no permission) is left for Open to report.
func ExistingFiles(paths []string, missing func(path string)) []string {
	var existing []string
	for _, p := range paths {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			if missing != nil {
				missing(p)
			}
			continue
		}
		existing = append(existing, p)
	}
	return existing
}
