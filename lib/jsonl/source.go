package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// Compressed reports whether head, the first bytes of a file, starts a gzip
// or zstd stream (which the Reader decompresses).
func Compressed(head []byte) bool { return compression(head) != "" }

// compression names the compression head starts ("gzip", "zstd"), or "".
func compression(head []byte) string {
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		return "gzip"
	case bytes.HasPrefix(head, zstdMagic):
		return "zstd"
	}
	return ""
}

// errLineTooLong is returned by lineSplitter when a line passes the cap; the
// splitter has then skipped to the start of the next line.
var errLineTooLong = errors.New("line too long")

// tornError is a last line with no newline: its writer stopped mid-record,
// or (in a file written by hand) the editor wrote no final newline. line is
// valid until the splitter's next call.
type tornError struct {
	n     int
	line  []byte
	first bool // the file's first line
}

func (e *tornError) Error() string { return "torn last line" }

// decodeError marks a failure of the decompressor, as opposed to the file.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }

// encodingError is a file in a text encoding other than UTF-8.
type encodingError struct{ encoding string }

func (e *encodingError) Error() string {
	return "the file is " + e.encoding + ", not UTF-8 (saved as \"Unicode\" by a Windows editor or PowerShell?)"
}

// utf16Encoding names the UTF-16 encoding head, a file's first bytes, is
// written in: by its byte order mark, or by the zero byte next to the '{'
// of a first record. "" for anything else.
func utf16Encoding(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte{0xff, 0xfe}), bytes.HasPrefix(head, []byte{'{', 0}):
		return "UTF-16 (little-endian)"
	case bytes.HasPrefix(head, []byte{0xfe, 0xff}), bytes.HasPrefix(head, []byte{0, '{'}):
		return "UTF-16 (big-endian)"
	}
	return ""
}

// hookError carries an error from the BeforeRead hook through the reads.
type hookError struct{ err error }

func (e *hookError) Error() string { return e.err.Error() }

// source is one open input: the file, its decompressor and the line splitter.
type source struct {
	lines   *lineSplitter
	rows    *parquetRows // non-nil: a Parquet file, read row by row instead of lines
	closer  []io.Closer
	served  int64     // results of lines.next so far
	prepare prepareFn // makes a line ready for Next
	ahead   *pipeline // non-nil: lines are read and prepared ahead, on other goroutines
	plain   bool      // the lines are the file's bytes, not decompressed
}

// prepareFn makes one line ready for Next (see Reader.prepare); first says it
// is the file's first line, the only one that may start with a BOM; reuse is
// for Options.Prepare.
type prepareFn func(line []byte, first bool, reuse any) prepared

// prepared is a line made ready for Next: trimmed, checked, and given to
// Options.Prepare.
type prepared struct {
	line    []byte // the record, trimmed; nil when blank or invalid
	rawLen  int    // the line's length as read, for Stats.Bytes
	blank   bool
	invalid error // why Options.Validate refused it
	value   any   // what Options.Prepare returned
}

// next returns the next line, prepared, or the splitter's error for it
// (io.EOF at the end).
//
// reuse is a value of Options.Prepare that Next is done with.
func (s *source) next(reuse any) (prepared, error) {
	if s.ahead != nil {
		return s.ahead.next()
	}
	line, first, err := s.nextLine()
	if err != nil {
		return prepared{}, err
	}
	return s.prepare(line, first, reuse), nil
}

// nextLine is the splitter's next line, and whether it is the file's first.
func (s *source) nextLine() (line []byte, first bool, err error) {
	if s.rows != nil {
		line, err = s.rows.next()
	} else {
		line, err = s.lines.next()
	}
	first = s.served == 0
	s.served++
	if torn, ok := err.(*tornError); ok {
		torn.first = first
	}
	return line, first, err
}

func (s *source) close() {
	if s.ahead != nil {
		s.ahead.stop() // the goroutines read the file: they end first
	}
	for i := len(s.closer) - 1; i >= 0; i-- {
		s.closer[i].Close()
	}
}

// hookedReader runs the hook before every read of the underlying stream.
type hookedReader struct {
	r    io.Reader
	hook func() error
}

func (h *hookedReader) Read(p []byte) (int, error) {
	if err := h.hook(); err != nil {
		return 0, &hookError{err}
	}
	return h.r.Read(p)
}

// gzipMembers reads the members of a gzip file one after another, as gzip -d
// does, and like it accepts zero bytes after the last one: tape and block
// devices pad files with them, and gzip -t calls such a file sound.
type gzipMembers struct {
	zr *gzip.Reader
	br *bufio.Reader
}

func (g *gzipMembers) Read(p []byte) (int, error) {
	g.zr.Multistream(false)
	for {
		n, err := g.zr.Read(p)
		if err != io.EOF {
			return n, err
		}
		if n > 0 {
			return n, nil // the member's end: the next call looks further
		}
		next, err := g.br.Peek(len(gzipMagic))
		switch {
		case len(next) == 0 && err == io.EOF:
			return 0, io.EOF
		case bytes.Equal(next, gzipMagic):
			if err := g.zr.Reset(g.br); err != nil {
				return 0, err
			}
			g.zr.Multistream(false)
		case onlyZeros(g.br):
			return 0, io.EOF
		default:
			return 0, errors.New("gzip: data after the last member that is neither a gzip member nor zero padding")
		}
	}
}

// onlyZeros reports whether the rest of r is zero bytes (reading it all).
func onlyZeros(r *bufio.Reader) bool {
	for {
		c, err := r.ReadByte()
		if err != nil {
			return err == io.EOF
		}
		if c != 0 {
			return false
		}
	}
}

// decodingReader marks the decompressor's errors so they read as bad data.
type decodingReader struct{ r io.Reader }

func (d *decodingReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		var hook *hookError
		if !errors.As(err, &hook) {
			err = &decodeError{err}
		}
	}
	return n, err
}

// newSource opens raw (closed with closer, if not nil): it sniffs the
// compression and sets up the splitter. hook runs before every read.
func newSource(raw io.Reader, closer io.Closer, maxLine int, hook func() error, prepare prepareFn) (*source, error) {
	src := &source{prepare: prepare}
	if closer != nil {
		src.closer = append(src.closer, closer)
	}
	br := bufio.NewReaderSize(&hookedReader{r: raw, hook: hook}, 64<<10)
	head, err := br.Peek(4)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, err
	}
	if enc := utf16Encoding(head); enc != "" {
		return nil, &encodingError{enc}
	}
	if IsParquet(head) {
		return src, src.openParquet(raw, hook)
	}
	var r io.Reader = br
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &decodeError{err}
		}
		src.closer = append(src.closer, zr)
		r = &decodingReader{&gzipMembers{zr: zr, br: br}}
	case bytes.HasPrefix(head, zstdMagic):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(1<<30))
		if err != nil {
			return nil, &decodeError{err}
		}
		src.closer = append(src.closer, zr.IOReadCloser())
		r = &decodingReader{zr}
	}
	src.lines = newLineSplitter(r, maxLine)
	src.plain = r == io.Reader(br)
	return src, nil
}

// lineSplitter cuts a stream into lines in a buffer of its own, handing out
// slices of it: no copy per line, and no line-length limit below maxLine.
type lineSplitter struct {
	r        io.Reader
	buf      []byte
	start    int // first unread byte
	end      int // end of valid data
	scanned  int // bytes after start already searched for '\n'
	eof      bool
	err      error
	size     int // of a new buffer (longer lines get longer ones)
	maxLine  int
	skipping bool // discarding the rest of an overlong line
	// keepLines leaves the lines already returned untouched: a full buffer
	// is replaced by a new one instead of being reused, so that lines can
	// wait in a pipeline while the splitter reads on. The garbage collector
	// frees a buffer once no line of it is referenced.
	keepLines bool
	// newBuffer, if not nil, gives the new buffers of keepLines (recycled
	// ones, when it has them); generation counts them.
	newBuffer  func(size int) []byte
	generation int
	// beforeReuse runs before the lines returned are overwritten (not with
	// keepLines, whose buffers are only ever replaced).
	beforeReuse func() error
}

const minBuffer = 256 << 10

func newLineSplitter(r io.Reader, maxLine int) *lineSplitter {
	// The buffer is made on the first read: a file read ahead in chunks
	// never reads through the splitter.
	return &lineSplitter{r: r, size: minBuffer, maxLine: maxLine}
}

// next returns the next line without its newline; io.EOF at the end; a
// *tornError (with the dropped bytes counted) for a final line without a
// newline; errLineTooLong once for each overlong line.
func (l *lineSplitter) next() ([]byte, error) {
	for {
		if i := bytes.IndexByte(l.buf[l.start+l.scanned:l.end], '\n'); i >= 0 {
			nl := l.start + l.scanned + i
			line := l.buf[l.start:nl]
			l.start, l.scanned = nl+1, 0
			if l.skipping {
				l.skipping = false
				continue
			}
			if len(line) > l.maxLine {
				return nil, errLineTooLong
			}
			return line, nil
		}
		l.scanned = l.end - l.start
		if l.skipping {
			l.start, l.scanned = l.end, 0
		} else if l.scanned > l.maxLine {
			l.skipping = true
			l.start, l.scanned = l.end, 0
			return nil, errLineTooLong
		}
		if l.eof {
			if l.err != nil {
				return nil, l.err
			}
			if n := l.end - l.start; n > 0 && !l.skipping {
				line := l.buf[l.start:l.end]
				l.start, l.scanned = l.end, 0
				return nil, &tornError{n: n, line: line}
			}
			return nil, io.EOF
		}
		l.fill()
	}
}

// fill reads more data, first moving the partial line to the front of the
// buffer, growing the buffer when a line is longer than it.
func (l *lineSplitter) fill() {
	if l.buf == nil && !l.keepLines {
		l.buf = make([]byte, minBuffer)
	}
	if l.keepLines {
		if l.end == len(l.buf) {
			l.moveToNewBuffer()
		}
		l.read()
		return
	}
	if l.start > 0 {
		if l.beforeReuse != nil {
			if err := l.beforeReuse(); err != nil {
				l.eof, l.err = true, &hookError{err}
				return
			}
		}
		n := copy(l.buf, l.buf[l.start:l.end])
		l.start, l.end = 0, n
	}
	if l.end == len(l.buf) {
		grown := make([]byte, 2*len(l.buf))
		copy(grown, l.buf[:l.end])
		l.buf = grown
	} else if l.end == 0 && len(l.buf) > 4*minBuffer {
		l.buf = make([]byte, minBuffer) // give back the memory of a huge line
	}
	l.read()
}

// moveToNewBuffer copies the partial line to the front of a new buffer of
// the splitter's size, or of twice the line's length when it is long.
func (l *lineSplitter) moveToNewBuffer() {
	partial := l.buf[l.start:l.end]
	size := l.size
	if 2*len(partial) > size {
		size = 2 * len(partial)
	}
	var buf []byte
	if l.newBuffer != nil {
		buf = l.newBuffer(size)
	} else {
		buf = make([]byte, size)
	}
	l.start, l.end = 0, copy(buf, partial)
	l.buf = buf
	l.generation++
}

// read appends what the stream has to the buffer, which has room.
func (l *lineSplitter) read() {
	n, err := l.r.Read(l.buf[l.end:])
	l.end += n
	if err != nil {
		l.eof = true
		if err != io.EOF {
			l.err = err
		}
	}
}

// openParquet makes src read raw, a Parquet file, row by row. Parquet keeps
// its index at the end, so raw must be a regular file (a named one, or stdin
// redirected from one), not a pipe.
func (s *source) openParquet(raw io.Reader, hook func() error) error {
	f, ok := raw.(*os.File)
	if !ok {
		return errParquetStream
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return errParquetStream
	}
	rows, err := openParquet(f, hook)
	if err != nil {
		return err
	}
	s.rows = rows
	s.closer = append(s.closer, rows)
	return nil
}
