// Package jsonl reads and writes JSON Lines the way every synthpipe tool
// needs: files or stdin, gzip and zstd by magic bytes, lines of any length up
// to a cap, positions in every error, torn last lines detected, large files
// read and checked ahead on the spare CPUs (Options.Parallel), and a writer
// that emits whole lines only.
package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/synthpipe/synthpipe/lib/exitcode"
)

// DefaultMaxLine is the longest line read unless raised: far beyond any
// real record (a 16k-token answer is ~100 KB, a long agent trajectory a few
// MB) but small enough that a file of garbage without newlines fails fast.
const DefaultMaxLine = 64 << 20

// MaxLineLimit is the highest cap that may be set.
const MaxLineLimit = 1 << 30

// StdinName is how standard input is named in messages.
const StdinName = "<stdin>"

// Options tunes a Reader. The zero value reads strictly with the defaults.
type Options struct {
	// MaxLine caps a line's length in bytes (0: DefaultMaxLine).
	MaxLine int
	// MaxLineFlag names the flag that raises MaxLine, for the error message.
	MaxLineFlag string
	// Validate checks that every line is one JSON object. Tools that scan
	// each record themselves (record.Scan validates as it goes) leave it off
	// and call Reader.Invalid with their own error.
	Validate bool
	// SkipInvalid counts invalid lines (see Reader.Stats) and goes on instead
	// of stopping with an error.
	SkipInvalid bool
	// Skipped, with SkipInvalid, hears of each line skipped as invalid: its
	// "FILE:LINE" and why. The lines the reader refuses itself (too long)
	// reach it too, so a tool that names skipped lines misses none.
	Skipped func(pos string, cause error)
	// Warn receives notes for the user, such as a torn last line. nil: dropped.
	Warn func(msg string)
	// BeforeRead runs before every read that may block: writers flush there,
	// so that a slow producer's records reach the next stage at once, and a
	// signal that arrives while waiting finds nothing unflushed.
	BeforeRead func() error
	// BeforeReuse runs before the reader reuses the memory of the lines it
	// returned: a Writer that holds lines where they lie writes them there
	// (Writer.HoldLines, Writer.WriteHeld).
	BeforeReuse func() error
	// LastLineRecord reads a file's last line that has no newline as a
	// record, with a warning, when it is one whole JSON object: a file of
	// prompts written by hand or by a script often ends so. Without it such
	// a line is torn (see Stats.Torn), which is right for outputs, where a
	// writer killed mid-record leaves one.
	LastLineRecord bool
	// Context, when done, stops reading with its cause.
	Context context.Context
	// Prepare, if not nil, runs on every record line (after the reader's
	// own checks) before Next returns it; Reader.Prepared returns its
	// result. A tool puts its per-record work here (scanning the record) so
	// that, with Parallel, that work runs ahead on other cores. Like the
	// line, what it returns may refer to the line only until the next call
	// to Next. reuse is nil, or what Prepare returned for an earlier line
	// that Next is done with: a Prepare that returns a pointer can write
	// into that one and return it, so that no record costs an allocation
	// (and so a Prepared value is valid only until the next call to Next).
	Prepare func(line []byte, reuse any) any
	// Parallel reads a large regular file ahead on goroutines of its own,
	// preparing its lines on every CPU while the tool handles the records
	// before: records, errors and their positions come out exactly as they
	// would otherwise. Prepare must then be safe for concurrent use, and
	// BeforeRead runs only when Next has to wait for the file.
	Parallel bool
}

// Stats counts what a Reader saw.
type Stats struct {
	Records int64 // lines returned by Next
	Blank   int64 // empty or white-space lines skipped
	Invalid int64 // lines skipped by SkipInvalid
	Torn    int64 // files that ended in a line without its newline
	Bytes   int64 // uncompressed bytes read
}

// Reader iterates over the records of one or more files in order.
type Reader struct {
	opt      Options
	stdin    io.Reader
	names    []string
	idx      int
	cur      *source
	line     []byte
	prepared any
	lineNo   int64
	err      error
	stats    Stats
	maxLine  int
	rows     bool // the current file is Parquet: its records are rows, not lines
}

// Open prepares to read names in order ("-" or no names: stdin). Every file is
// checked up front, so that a missing third file fails before the first is
// consumed.
func Open(stdin io.Reader, names []string, opt Options) (*Reader, error) {
	if len(names) == 0 {
		names = []string{"-"}
	}
	maxLine := opt.MaxLine
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	if maxLine > MaxLineLimit {
		return nil, exitcode.Usagef("line cap %d is above the limit of 1 GiB", maxLine)
	}
	names, err := expandFolders(names)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if n == "-" {
			continue
		}
		if err := checkReadable(n); err != nil {
			return nil, err
		}
	}
	return &Reader{opt: opt, stdin: stdin, names: names, idx: -1, maxLine: maxLine}, nil
}

func checkReadable(name string) error {
	fi, err := os.Stat(name)
	if err != nil {
		return exitcode.WithCode(exitcode.NoInput, fmt.Errorf("open %s: %w", name, unwrapPath(err)))
	}
	if fi.IsDir() {
		return exitcode.NoInputf("%s is a directory with no .parquet file beneath it (a folder is read as its Parquet shards, in name order), not a JSONL file", name)
	}
	if !fi.Mode().IsRegular() {
		// A named pipe must not be opened twice: opening blocks until a
		// writer comes, and closing again would cut that writer off. Such
		// inputs show their errors when they are read.
		return nil
	}
	f, err := os.Open(name)
	if err != nil {
		return exitcode.WithCode(exitcode.NoInput, fmt.Errorf("open %s: %w", name, unwrapPath(err)))
	}
	return f.Close()
}

// unwrapPath drops the *PathError's own "open NAME:" so that messages name
// the file once.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Next advances to the next record and reports whether there is one.
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	for {
		if r.cur == nil {
			if !r.openNext() {
				return false
			}
		}
		p, err := r.cur.next(r.prepared)
		if err == io.EOF {
			r.closeCur()
			continue
		}
		r.lineNo++
		if err != nil {
			var ok bool
			if p, ok = r.lastLineRecord(err); !ok {
				if !r.goesOnAfter(err) {
					return false
				}
				continue
			}
		}
		r.stats.Bytes += int64(p.rawLen) + 1
		if p.blank {
			r.stats.Blank++
			continue
		}
		if p.invalid != nil {
			if e := r.Invalid(p.invalid); e != nil {
				return false
			}
			continue
		}
		r.line, r.prepared = p.line, p.value
		r.stats.Records++
		return true
	}
}

// lastLineRecord makes a record of a last line without its newline, with
// LastLineRecord, when the line is one whole JSON object.
func (r *Reader) lastLineRecord(err error) (prepared, bool) {
	torn, ok := err.(*tornError)
	if !ok || !r.opt.LastLineRecord {
		return prepared{}, false
	}
	line := torn.line
	if torn.first {
		line = bytes.TrimPrefix(line, utf8BOM)
	}
	if ScanObject(bytes.TrimSuffix(line, []byte{'\r'}), nil) != nil {
		return prepared{}, false
	}
	r.warn(fmt.Sprintf("%s:%d: the last line has no final newline; read as a record, since it is whole JSON", r.Name(), r.lineNo))
	return r.prepare(torn.line, torn.first, nil), true
}

// goesOnAfter handles an error of the splitter in place of a line (kept
// apart from the path of records, where errors.As would cost an allocation)
// and reports whether reading goes on.
func (r *Reader) goesOnAfter(err error) bool {
	var torn *tornError
	switch {
	case errors.As(err, &torn):
		r.stats.Torn++
		r.warn(fmt.Sprintf("%s:%d: torn last line (%d bytes with no final newline) ignored: the writer was probably stopped mid-record; that record counts as not done", r.Name(), r.lineNo, torn.n))
		r.closeCur()
		return true
	case errors.Is(err, errLineTooLong):
		return r.Invalid(&tooLongError{limit: r.maxLine, flag: r.flagName()}) == nil
	}
	r.err = r.readError(err)
	return false
}

// prepare makes a line ready for Next: it drops a BOM from the file's first
// line and a trailing CR, tells blank lines, validates, and runs
// Options.Prepare. It reads nothing of the Reader but its options, so that
// it can run on other goroutines (see Options.Parallel).
func (r *Reader) prepare(line []byte, first bool, reuse any) prepared {
	p := prepared{rawLen: len(line)}
	if first {
		line = bytes.TrimPrefix(line, utf8BOM)
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(bytes.TrimSpace(line)) == 0 {
		p.blank = true
		return p
	}
	if r.opt.Validate {
		if err := ScanObject(line, nil); err != nil {
			p.invalid = err
			return p
		}
	}
	p.line = line
	if r.opt.Prepare != nil {
		p.value = r.opt.Prepare(line, reuse)
	}
	return p
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func (r *Reader) flagName() string {
	if r.opt.MaxLineFlag != "" {
		return r.opt.MaxLineFlag
	}
	return "--max-line"
}

func (r *Reader) openNext() bool {
	if r.idx+1 >= len(r.names) {
		return false
	}
	r.idx++
	r.lineNo = 0
	name := r.names[r.idx]
	var raw io.Reader
	var closer io.Closer
	var file *os.File
	ahead := false
	if name == "-" {
		raw = r.stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			r.err = exitcode.WithCode(exitcode.NoInput, fmt.Errorf("open %s: %w", name, unwrapPath(err)))
			return false
		}
		raw, closer, file = f, f, f
		ahead = r.opt.Parallel && readsAhead(f)
	}
	hook := r.beforeRead
	if ahead {
		hook = r.contextErr // the reads run on another goroutine
	}
	src, err := newSource(raw, closer, r.maxLine, hook, r.prepare)
	if err != nil {
		if closer != nil {
			closer.Close()
		}
		r.err = r.readError(err)
		return false
	}
	switch {
	case ahead && src.rows == nil:
		src.readAhead(r.beforeRead, file, r.maxLine, hook)
		src.ahead.beforeReuse = r.beforeReuse
	case src.rows != nil:
		src.rows.beforeReuse = r.beforeReuse
	default:
		src.lines.beforeReuse = r.beforeReuse
	}
	r.rows = src.rows != nil
	r.cur = src
	return true
}

// beforeReuse runs Options.BeforeReuse.
func (r *Reader) beforeReuse() error {
	if r.opt.BeforeReuse != nil {
		return r.opt.BeforeReuse()
	}
	return nil
}

func (r *Reader) beforeRead() error {
	if err := r.contextErr(); err != nil {
		return err
	}
	if r.opt.BeforeRead != nil {
		return r.opt.BeforeRead()
	}
	return nil
}

// contextErr is the cause of the Context's end, once it is done.
func (r *Reader) contextErr() error {
	if r.opt.Context != nil && r.opt.Context.Err() != nil {
		return context.Cause(r.opt.Context)
	}
	return nil
}

func (r *Reader) closeCur() {
	if r.cur != nil {
		r.cur.close()
		r.cur = nil
	}
}

// readError turns a failure of the byte stream (not of a line's JSON) into an
// error naming the file: a corrupt or truncated gzip/zstd stream is bad data
// (65); a failed read is an unreadable input (66). Errors the BeforeRead hook
// returned (a closed downstream, a signal) pass through untouched.
func (r *Reader) readError(err error) error {
	var hook *hookError
	if errors.As(err, &hook) {
		return hook.err
	}
	var enc *encodingError
	if errors.As(err, &enc) {
		file := r.Name()
		if file == StdinName {
			file = "FILE"
		}
		return exitcode.DataErrorf("%s: %v: convert it first, e.g. iconv -f UTF-16 -t UTF-8 %s > %s.utf8", r.Name(), err, file, file)
	}
	var pq *parquetError
	if errors.As(err, &pq) {
		return exitcode.DataErrorf("%s: %v (the Parquet file is damaged or truncated: download or write it again%s)", r.Name(), pq, r.rowsBefore())
	}
	if errors.Is(err, errParquetStream) {
		return exitcode.Usagef("%s: %v", r.Name(), err)
	}
	var dec *decodeError
	if errors.As(err, &dec) {
		return exitcode.DataErrorf("%s: %v (the compressed file is damaged or truncated: restore it or compress it again%s)",
			r.posOrName(), dec.err, r.linesBefore())
	}
	return exitcode.WithCode(exitcode.NoInput, fmt.Errorf("read %s: %w", r.Name(), unwrapPath(err)))
}

// posOrName is "FILE:LINE" once a line of the file has been reached, else
// "FILE": a stream that fails in its header has no line to name.
func (r *Reader) posOrName() string {
	if r.lineNo == 0 {
		return r.Name()
	}
	return r.Pos()
}

// rowsBefore tells how many rows of a damaged Parquet file were read.
func (r *Reader) rowsBefore() string {
	if n := r.lineNo - 1; n > 0 {
		return fmt.Sprintf("; the %d row(s) before were read", n)
	}
	return ""
}

// linesBefore tells how much of a damaged file was read, so that the user
// knows the records before the damage went through.
func (r *Reader) linesBefore() string {
	switch n := r.lineNo - 1; {
	case n < 1:
		return ""
	case n == 1:
		return "; the line before was read"
	default:
		return fmt.Sprintf("; the %d lines before were read", n)
	}
}

// Invalid reports that the current line is unusable. With SkipInvalid it
// counts the line and returns nil (the caller moves on); otherwise it returns
// (and keeps) an exit-65 error naming FILE:LINE.
func (r *Reader) Invalid(cause error) error {
	if r.opt.SkipInvalid {
		r.stats.Invalid++
		if r.opt.Skipped != nil {
			r.opt.Skipped(r.Pos(), cause)
		}
		return nil
	}
	hint := " (fix or remove that line, or pass --skip-invalid to count and skip such lines)"
	var tooLong *tooLongError
	if errors.As(cause, &tooLong) {
		hint = ""
	}
	r.err = exitcode.DataErrorf("%s: %v%s", r.Pos(), cause, hint)
	return r.err
}

// Bytes returns the current record's line, without its newline (and without a
// trailing CR or a leading BOM). It is valid until the next call to Next.
func (r *Reader) Bytes() []byte { return r.line }

// Prepared returns what Options.Prepare made of the current record (nil
// without it). It is valid until the next call to Next.
func (r *Reader) Prepared() any { return r.prepared }

// Name is the current file's name as messages show it.
func (r *Reader) Name() string {
	if r.idx < 0 || r.idx >= len(r.names) {
		return ""
	}
	if r.names[r.idx] == "-" {
		return StdinName
	}
	return r.names[r.idx]
}

// Line is the current line number in the current file, from 1.
func (r *Reader) Line() int64 { return r.lineNo }

// Pos is "FILE:LINE" for messages; in a Parquet file, "FILE: row N".
func (r *Reader) Pos() string { return r.Position().String() }

// Position is where the current record was read. Unlike Pos it costs no
// formatting: a tool that handles millions of records keeps it and writes
// Pos only for the few that need a message.
func (r *Reader) Position() Position {
	return Position{Name: r.Name(), Line: r.lineNo, Row: r.rows}
}

// Position is where a record was read: a line of a file, or a row of a
// Parquet file.
type Position struct {
	Name string
	Line int64 // the line or row number, from 1
	Row  bool  // Line counts Parquet rows
}

// String is "FILE:LINE", or "FILE: row N" in a Parquet file.
func (p Position) String() string {
	if p.Row {
		return fmt.Sprintf("%s: row %d", p.Name, p.Line)
	}
	return fmt.Sprintf("%s:%d", p.Name, p.Line)
}

// Err returns the error that stopped Next, if any.
func (r *Reader) Err() error { return r.err }

// Stats returns the counts so far.
func (r *Reader) Stats() Stats { return r.stats }

// Close releases the open file, if any.
func (r *Reader) Close() error {
	r.closeCur()
	return nil
}

func (r *Reader) warn(msg string) {
	if r.opt.Warn != nil {
		r.opt.Warn(msg)
	}
}

type tooLongError struct {
	limit int
	flag  string
}

func (e *tooLongError) Error() string {
	return fmt.Sprintf("line longer than %s; raise the cap with %s (up to 1G)", humanBytes(e.limit), e.flag)
}

func humanBytes(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
