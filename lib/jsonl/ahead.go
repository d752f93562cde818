package jsonl

import (
	"errors"
	"os"
	"runtime"
	"sync"
)

// Reading ahead: with Options.Parallel, a large regular file is read on
// goroutines of its own while the tool handles the records before. One
// goroutine reads (and decompresses) the file and cuts it into batches of
// whole lines; workers prepare the lines of each batch (the reader's checks
// and Options.Prepare: validating and scanning a record is most of a tool's
// work); Next hands the lines out in order, exactly as the serial path would,
// errors included. A few batches are in flight at a time, so memory stays
// bounded whatever the file's size.

// Tuning of the read-ahead; variables so that tests can force it on small
// inputs.
var (
	// aheadMinSize is the smallest file read ahead: below it, starting the
	// goroutines costs more than they save.
	aheadMinSize int64 = 4 << 20
	// aheadBuffer is the size of the splitter's buffers, and so about the
	// bytes of a batch. 256 KiB stays in a core's L2 cache from the read
	// that fills it to the worker that scans it: with 1 MiB buffers the
	// kernel's copy and the scan both went to memory, and tokstat --total
	// cost about 12% more CPU (scripts/bench/records.sh).
	aheadBuffer = 256 << 10
	// aheadBatchLines caps the lines of a batch, so that a file of short
	// lines is prepared in pieces the workers can share.
	aheadBatchLines = 4096
)

// aheadInFlight is how many batches may wait for Next beyond those being
// prepared.
const aheadInFlight = 4

// readsAhead reports whether f is worth reading ahead: a large regular file,
// with more than one CPU to share the work.
func readsAhead(f *os.File) bool {
	if runtime.GOMAXPROCS(0) < 2 {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular() && fi.Size() >= aheadMinSize
}

// aheadLine is one result of the splitter, prepared when it is a line.
type aheadLine struct {
	raw   []byte
	first bool // the file's first line
	err   error
	prepared
}

// batch is consecutive lines of a file, all in one buffer of the splitter
// (or, read in chunks, the lines that begin in one chunk of the file, in a
// buffer of its own); done is closed once they are prepared.
type batch struct {
	lines      []aheadLine
	buf        []byte
	generation int // of buf
	done       chan struct{}
	off        int64 // read in chunks: the chunk's offset in the file
	last       bool  // read in chunks: the last chunk, read to the end of the file
}

// pipeline reads a source ahead of Next.
type pipeline struct {
	ordered    chan *batch // batches in file order, for Next
	free       chan []byte // buffers whose lines Next has handed out
	chunks     *fileChunks // a plain file read in chunks; nil: split in order
	freeChunks chan *batch // read in chunks: batches Next is done with, and their buffers
	quit       chan struct{}
	quitOnce   sync.Once
	running    sync.WaitGroup
	beforeWait func() error // Options.BeforeRead, run before Next blocks
	// beforeReuse (Options.BeforeReuse) runs before Next leaves a batch,
	// whose buffer the reading goroutines may then fill again.
	beforeReuse func() error

	cur *batch
	pos int
}

// readAhead starts reading src ahead. Its reads must no longer run the
// BeforeRead hook (it is not safe for concurrent use): Next runs beforeWait
// instead, whenever it has to wait for the reading goroutine.
//
// A plain file f (not compressed) is read in chunks (see fileChunks), the
// reads running on the workers; hook then runs before each of them.
func (src *source) readAhead(beforeWait func() error, f *os.File, maxLine int, hook func() error) {
	workers := runtime.GOMAXPROCS(0)
	p := &pipeline{
		free:       make(chan []byte, aheadInFlight+workers+2),
		quit:       make(chan struct{}),
		beforeWait: beforeWait,
	}
	p.running.Add(1 + workers)
	var work chan *batch
	if fi, err := statPlain(src, f); err == nil {
		// A batch waits in ordered for Next, or is being read: one per
		// worker keeps them busy, and each costs a chunk's buffer.
		p.ordered, work = make(chan *batch, workers), make(chan *batch)
		p.chunks = &fileChunks{f: f, size: fi.Size(), maxLine: maxLine, hook: hook}
		p.freeChunks = make(chan *batch, 2*workers+2)
		go p.dispatch(p.chunks, work)
	} else {
		p.ordered, work = make(chan *batch, aheadInFlight), make(chan *batch, aheadInFlight)
		src.lines.keepLines = true
		src.lines.size = aheadBuffer
		src.lines.newBuffer = p.newBuffer
		go p.split(src, work)
	}
	for range workers {
		go p.prepareBatches(src.prepare, work)
	}
	src.ahead = p
}

// statPlain is the file info of f when src reads it as it is (not
// decompressed), so that it can be read at any offset.
func statPlain(src *source, f *os.File) (os.FileInfo, error) {
	if f == nil || !src.plain {
		return nil, errors.ErrUnsupported
	}
	return f.Stat()
}

// newBuffer is a recycled buffer, or a new one when there is none of the
// size.
func (p *pipeline) newBuffer(size int) []byte {
	if size == aheadBuffer {
		select {
		case buf := <-p.free:
			return buf
		default:
		}
	}
	return make([]byte, size)
}

// split cuts the source into batches, sending each to the workers and to
// Next, until the end of the file or its first read error. A batch ends
// where the splitter moves to a new buffer, so that Next knows when the
// lines of a buffer are all handed out.
func (p *pipeline) split(src *source, work chan<- *batch) {
	defer p.running.Done()
	defer close(work)
	var carried []aheadLine // the first line of the next batch, if read
	for {
		b := &batch{lines: carried, buf: src.lines.buf, generation: src.lines.generation, done: make(chan struct{})}
		carried = nil
		last := len(b.lines) > 0 && endsFile(b.lines[0].err)
		for !last && len(b.lines) < aheadBatchLines {
			line, first, err := src.nextLine()
			l := aheadLine{raw: line, first: first, err: err}
			if src.lines.generation != b.generation {
				if len(b.lines) > 0 {
					carried = []aheadLine{l}
					break
				}
				b.buf, b.generation = src.lines.buf, src.lines.generation
			}
			b.lines = append(b.lines, l)
			last = endsFile(err)
		}
		if !p.send(work, b) || last {
			return
		}
	}
}

// send hands b to a worker, then to Next; false when the pipeline stops
// first.
func (p *pipeline) send(work chan<- *batch, b *batch) bool {
	select {
	case work <- b:
	case <-p.quit:
		return false
	}
	select {
	case p.ordered <- b:
		return true
	case <-p.quit:
		return false
	}
}

// endsFile reports whether the splitter returns nothing after err: the end
// of the file, or a read error (which it repeats).
func endsFile(err error) bool {
	var torn *tornError
	return err != nil && !errors.Is(err, errLineTooLong) && !errors.As(err, &torn)
}

// prepareBatches prepares the lines of batches until there are no more, or
// the pipeline stops (then the batches left are only marked done).
func (p *pipeline) prepareBatches(prepare prepareFn, work <-chan *batch) {
	defer p.running.Done()
	for b := range work {
		select {
		case <-p.quit:
		default:
			if p.chunks != nil {
				p.readChunk(p.chunks, b)
			}
			for i := range b.lines {
				if l := &b.lines[i]; l.err == nil {
					l.prepared = prepare(l.raw, l.first, l.value)
				}
			}
		}
		close(b.done)
	}
}

// next returns the next prepared line, in file order.
func (p *pipeline) next() (prepared, error) {
	for p.cur == nil || p.pos == len(p.cur.lines) {
		var b *batch
		select {
		case b = <-p.ordered:
		default:
			// About to wait for the file: the tool's writers flush first.
			if err := p.beforeWait(); err != nil {
				return prepared{}, &hookError{err}
			}
			b = <-p.ordered
		}
		<-b.done
		if p.cur != nil && p.beforeReuse != nil {
			if err := p.beforeReuse(); err != nil {
				return prepared{}, &hookError{err}
			}
		}
		switch {
		case p.cur == nil:
		case p.chunks != nil:
			p.recycleChunk(p.cur)
		case p.cur.generation != b.generation:
			p.recycle(p.cur.buf)
		}
		p.cur, p.pos = b, 0
	}
	// After the last line (io.EOF or a read error) the Reader closes the
	// source or stops: next is not called again.
	l := p.cur.lines[p.pos]
	p.pos++
	return l.prepared, l.err
}

// recycle hands a buffer back to the splitter, once the lines in it have
// all been handed out and the one before Next is done with (the caller may
// not keep a line past the next call to Next).
func (p *pipeline) recycle(buf []byte) {
	if len(buf) != aheadBuffer {
		return // a buffer grown for a long line
	}
	select {
	case p.free <- buf:
	default:
	}
}

// stop ends the goroutines and waits for them: after it, nothing reads the
// file.
func (p *pipeline) stop() {
	p.quitOnce.Do(func() { close(p.quit) })
	p.running.Wait()
}
