package jsonl

import (
	"bytes"
	"io"
	"os"
	"slices"
)

// Reading a plain file ahead in chunks: the splitter of a compressed file
// must read it in order, on one goroutine, but a plain file can be read at
// any offset. Each batch is then a chunk of the file, [off, off+aheadBuffer),
// and the worker that prepares it also reads it (pread) and cuts it into
// lines: the kernel's copy of the file and the search for newlines, which
// one splitter goroutine did while the workers waited for it, run on every
// core.
//
// A chunk holds the lines that begin in it. Its worker reads one byte before
// it (a line begins at off when that byte is a newline), skips the end of a
// line that began before, and reads past the chunk's end to finish its last
// line. The file is read as it was when it was opened: the lines that begin
// before its size then (a record appended since is left for the next run,
// as if the file had been read a moment sooner). Lines, errors and their
// order are otherwise exactly the splitter's.

// chunkStep is the first read past a chunk's end, for the line that crosses
// it; each further read doubles it. Small, since lines are mostly short: a
// read of the next chunk's bytes is a copy the next worker makes again.
const chunkStep = 8 << 10

// chunkSlack is the room past a chunk in its buffer, for the line that
// crosses its end: a buffer grown for a longer one costs a copy of the
// chunk, and fresh memory.
const chunkSlack = 64 << 10

// chunkAlign: a chunk is read from a file offset that is a multiple of it,
// into the start of its buffer (which Go allocates aligned to a page, being
// large), so that the kernel copies between addresses equally aligned: on
// AMD EPYC, copying from a page cache address to one that differs from it
// modulo 32 cost about 4 times the CPU (scripts/bench/records.sh's file read
// in 256 KiB chunks from one byte before each: 0.13 s of system time, 0.03 s
// read from the chunk's offset).
const chunkAlign = 64

// chunkBuffer is the size of a chunk's buffer: the chunk, the bytes before
// it from the aligned offset its read begins at (see chunkAlign), and the
// slack past it.
func chunkBuffer() int { return chunkAlign + aheadBuffer + chunkSlack }

// fileChunks reads the chunks of a plain file.
type fileChunks struct {
	f       *os.File
	size    int64 // when the file was opened: no line that begins past it is read
	maxLine int
	hook    func() error // runs before each read (reads run on the workers)
}

// dispatch sends the chunks of the file, in file order, to the workers and
// to Next.
func (p *pipeline) dispatch(c *fileChunks, work chan<- *batch) {
	defer p.running.Done()
	defer close(work)
	for k := 0; ; k++ {
		off := int64(k) * int64(aheadBuffer)
		b := p.chunkBatch()
		b.off, b.last, b.generation, b.done = off, off+int64(aheadBuffer) > c.size, k, make(chan struct{})
		if !p.send(work, b) || b.last {
			return
		}
	}
}

// chunkBatch is a batch Next is done with, to be read again, or a new one.
// Reusing them (their buffers above all) saves a chunk's worth of fresh
// memory, and its page faults, per chunk.
func (p *pipeline) chunkBatch() *batch {
	select {
	case b := <-p.freeChunks:
		return b
	default:
		return &batch{}
	}
}

// recycleChunk hands b back to the dispatcher once Next is done with its
// lines. A buffer grown for a long line is left to the garbage collector.
func (p *pipeline) recycleChunk(b *batch) {
	if cap(b.buf) > 4*chunkBuffer() {
		b.buf = nil
	}
	select {
	case p.freeChunks <- b:
	default:
	}
}

// chunkRead is a worker reading one chunk: the chunk's buffer, and where
// in the file it starts.
type chunkRead struct {
	c     *fileChunks
	b     *batch
	start int64 // the file offset of b.buf[0]
	step  int   // of the next read past the chunk
	eof   bool
	err   error
}

// readChunk reads b's chunk and cuts it into b.lines, on a worker. The last
// chunk ends with io.EOF; a failed read ends a chunk with its error.
func (p *pipeline) readChunk(c *fileChunks, b *batch) {
	if cap(b.buf) < chunkBuffer() {
		b.buf = make([]byte, 0, chunkBuffer())
	}
	b.buf, b.lines = b.buf[:0], b.lines[:0]
	// the read begins at or before the byte before the chunk
	cur := &chunkRead{c: c, b: b, start: max(b.off-1, 0) &^ (chunkAlign - 1), step: chunkStep}
	end := b.off + int64(aheadBuffer) // where the next chunk's lines begin
	if b.last {
		end = c.size
	}
	cur.readTo(end)
	pos := 0 // of the next line in b.buf
	if b.off > 0 {
		// A line begins after the first newline from the byte before the
		// chunk on; none may begin in the chunk. (A buffer that ends
		// before that byte ends with a failed read or the file's end.)
		i := cur.find(min(int(b.off-1-cur.start), len(b.buf)), end)
		if i < 0 || cur.start+int64(i)+1 >= end {
			cur.finish()
			return
		}
		pos = i + 1
	}
	for cur.start+int64(pos) < end {
		i := cur.find(pos, cur.start+int64(pos)+int64(c.maxLine)+1)
		if i >= 0 {
			l := aheadLine{raw: b.buf[pos:i], first: cur.start+int64(pos) == 0}
			if i-pos > c.maxLine {
				l = aheadLine{err: errLineTooLong}
			}
			b.add(l)
			pos = i + 1
			continue
		}
		// The line has no newline within its cap (it goes on past the
		// chunk, and so would the next one), or before the file ends.
		n := len(b.buf) - pos
		switch {
		case cur.err != nil:
		case n > c.maxLine:
			b.lines = append(b.lines, aheadLine{err: errLineTooLong})
		case n > 0: // the file ends in a line without its newline
			b.lines = append(b.lines, aheadLine{err: &tornError{n: n, line: b.buf[pos:], first: cur.start+int64(pos) == 0}})
		}
		break
	}
	cur.finish()
}

// add appends l to the batch's lines, with the value of Options.Prepare
// its slot held when the batch was read before: Prepare may reuse it.
func (b *batch) add(l aheadLine) {
	if n := len(b.lines); n < cap(b.lines) {
		l.value = b.lines[:n+1][n].value
	}
	b.lines = append(b.lines, l)
}

// finish ends the chunk's lines: a failed read's error, or io.EOF after the
// last chunk's.
func (cur *chunkRead) finish() {
	switch {
	case cur.err != nil:
		cur.b.lines = append(cur.b.lines, aheadLine{err: cur.err})
	case cur.b.last:
		cur.b.lines = append(cur.b.lines, aheadLine{err: io.EOF})
	}
}

// find returns the index in the buffer of the first newline at or after
// from, reading on while the buffer ends before limit (a file offset): -1
// when there is none before limit, the end of the file or a failed read.
func (cur *chunkRead) find(from int, limit int64) int {
	for {
		if i := bytes.IndexByte(cur.b.buf[from:], '\n'); i >= 0 {
			return from + i
		}
		from = len(cur.b.buf)
		have := cur.start + int64(from)
		if cur.eof || cur.err != nil || have >= limit {
			return -1
		}
		cur.readTo(min(limit, have+int64(cur.step)))
		cur.step *= 2
	}
}

// readTo appends the file's bytes up to the offset end to the buffer,
// growing it when they do not fit, and notes the end of the file or a
// failed read.
func (cur *chunkRead) readTo(end int64) {
	b := cur.b
	for !cur.eof && cur.err == nil {
		have := cur.start + int64(len(b.buf))
		if have >= end {
			return
		}
		if err := cur.c.hook(); err != nil {
			cur.err = &hookError{err}
			return
		}
		if len(b.buf) == cap(b.buf) {
			b.buf = slices.Grow(b.buf, cap(b.buf))
		}
		room := b.buf[len(b.buf):cap(b.buf)]
		if int64(len(room)) > end-have {
			room = room[:end-have]
		}
		n, err := cur.c.f.ReadAt(room, have)
		b.buf = b.buf[:len(b.buf)+n]
		switch {
		case err == io.EOF:
			cur.eof = true
		case err != nil:
			cur.err = err
		}
	}
}
