package tokenizeprompts

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
	"github.com/synthpipe/synthpipe/lib/shuffle"
)

// invalidHint ends the message of a record that stops the run.
const invalidHint = " (fix or remove that line, or pass --skip-invalid to count and skip such lines)"

// gcPercent is the heap growth the tool lets the collector allow (GOGC).
// Its live heap is mostly the tokenizer's tables, which last the whole run:
// every collection marks them again, so at the default of 100 a collection
// comes every few hundred records and takes a sixth of the CPU, as much as
// a second worker's gain on two cores. At 400 the heap peaks near five
// times the tables (about 150 MB for Kimi-K2.5) and collections are rare.
const gcPercent = 400

func run(c *cli.Context, cfg *config) (err error) {
	if os.Getenv("GOGC") == "" { // a GOGC the user set wins
		previous := debug.SetGCPercent(gcPercent)
		defer debug.SetGCPercent(previous)
	}
	var files jsonl.Files
	files.Inputs(c.App.Reader, c.Args().Slice())
	files.Stdout(c.App.Writer)
	if err := files.Check(); err != nil {
		return err
	}
	if err := cfg.check(c); err != nil {
		return err
	}
	batches := &batcher{}
	// Skipped lines are named, even with -q: it is about the data.
	invalid := cliutil.NewInvalidNamer(func(msg string) { cliutil.Notef(c.App.ErrWriter, c.App.Name, "%s", msg) })
	opt := cfg.input
	opt.BeforeRead = batches.flush
	opt.Skipped = invalid.Name
	opt.LastLineRecord = true // prompts are often written without a final newline
	in, err := jsonl.Open(c.App.Reader, c.Args().Slice(), opt)
	if err != nil {
		return err
	}
	// in is closed by tokenizeAll's reading goroutine, which may still be
	// in a read when the run ends early (see pipeline).
	w := &writer{cfg: cfg, invalid: invalid, out: jsonl.NewWriter(c.App.Writer)}
	// The lines are written from the batches' own buffers, each batch's
	// at once, rather than copied into the writer's buffer one by one:
	// that copy was half of the writing goroutine's CPU time, which on
	// two cores is taken from the workers.
	w.out.HoldLines()
	defer func() { // what is done reaches stdout even when we fail
		if ferr := w.out.Flush(); err == nil {
			err = ferr
		}
	}()
	if cfg.shuffle {
		w.sorter = shuffle.New(cfg.shuffleMemory, "")
		defer w.sorter.Close()
	}
	err = tokenizeAll(c.Context, cfg, in, batches, w)
	if err == errStop {
		err = nil
	}
	invalid.Done()
	if err == nil && w.sorter != nil {
		err = writeShuffled(w.sorter, w.out, cfg, &w.sum)
	}
	if err == nil && !cfg.quiet {
		cliutil.Notef(c.App.ErrWriter, c.App.Name, "%s", w.sum.String(cfg))
	}
	return err
}

// tokenizeAll reads the records of in in batches, converts them with
// cfg.jobs workers and hands the results to w in input order.
func tokenizeAll(ctx context.Context, cfg *config, in *jsonl.Reader, batches *batcher, w *writer) error {
	p := pipeline[*batch, *batch]{
		workers: cfg.jobs,
		produce: func(ctx context.Context, send func(*batch) bool) error {
			// Closed here, once reading is over: a run that failed or
			// reached --limit returns while this may still be in Next,
			// and a Close from there would race with it.
			defer in.Close()
			batches.start(ctx, send, func() int64 { return in.Stats().Invalid })
			for in.Next() {
				if err := batches.add(in.Position(), in.Bytes()); err != nil {
					return err
				}
			}
			// The records before a bad line are written before its error.
			flushErr := batches.flush()
			if err := in.Err(); err != nil {
				return err
			}
			return flushErr
		},
		work: func(b *batch) *batch {
			b.convert(&cfg.convert)
			return b
		},
		consume: func(b *batch) error {
			for i := range b.results {
				if err := w.write(b, &b.results[i]); err != nil {
					// The lines before go out all the same. A failed
					// write is kept by w.out, and run's Flush returns
					// it, as it did when they were buffered.
					w.out.WriteHeld()
					return err
				}
			}
			// before the batch's memory serves again
			if err := w.out.WriteHeld(); err != nil {
				return err
			}
			w.sum.skippedLines = b.skippedLines
			b.recycle()
			return nil
		},
		idle: w.out.Flush,
	}
	return p.run(ctx)
}

// writer writes the converted records and counts them: to stdout as they
// come, or to the sorter with --shuffle.
type writer struct {
	cfg     *config
	invalid *cliutil.InvalidNamer
	out     *jsonl.Writer
	sorter  *shuffle.Sorter // --shuffle: written in order once all is read
	sum     summary
}

// write counts r, a result of b, and writes its line, held where it lies
// in b.out with the lines of b that follow it (jsonl.Writer.HoldLines);
// errStop once --limit records are written.
func (w *writer) write(b *batch, r *converted) error {
	if err := w.sum.add(r, b.out, w.cfg.input.SkipInvalid, w.invalid); err != nil {
		return err
	}
	if r.line.end == 0 {
		return nil
	}
	if w.sorter != nil {
		return w.sorter.Add(shuffle.Key(w.cfg.shuffleSeed, r.recordID(b.out)), r.line.of(b.out))
	}
	if err := w.out.WriteStableLine(r.line.of(b.out)); err != nil {
		return err
	}
	if w.cfg.limit > 0 && w.sum.written >= w.cfg.limit {
		w.sum.limitReached = true
		return errStop
	}
	return nil
}

// writeShuffled writes the records in --shuffle order, the first --limit
// of them when it is set. Nothing is written before the whole input is
// read (the first record of the order may be its last line), nor after a
// failure or a signal: a shuffled stream is whole or absent.
func writeShuffled(sorter *shuffle.Sorter, out *jsonl.Writer, cfg *config, sum *summary) error {
	sum.spilled = sorter.Spilled
	var n int64
	err := sorter.Each(func(line []byte) error {
		if cfg.limit > 0 && n >= cfg.limit {
			sum.limitReached = true
			return errStop
		}
		n++
		return out.Write(line)
	})
	sum.shuffledWritten = n
	if err == errStop {
		err = nil
	}
	return err
}

// Batches are cut at this many records or bytes, whichever comes first.
const (
	batchRecords = 256
	batchBytes   = 1 << 20
)

// batcher hands the workers records in batches: a record takes tens of
// microseconds, so one channel hand-off per record would cost more in
// wake-ups than the work itself on a busy machine. A batch also goes out
// whenever the reader is about to wait for input (jsonl's BeforeRead), so
// that a slow producer's records are not held back.
type batcher struct {
	ctx     context.Context
	send    func(*batch) bool
	skipped func() int64 // lines the reader has skipped so far
	cur     *batch
	sent    int64 // skipped() as last sent
}

// batch is records in input order, and how many lines the reader has
// skipped (--skip-invalid) up to the last of them. The writer takes that
// count from the batches, in order, rather than from the reader, which may
// still be running when the writer stops (--limit).
//
// A batch goes from the reader to a worker, which converts its records
// (parsing, encoding and writing each output line, and its newline, into
// out), then to the writer, which writes the lines out in order and
// recycles the batch: its buffers serve batch after batch, so that records
// cost no allocations.
type batch struct {
	in           []byte // the records' lines, one after the other
	lines        []batchLine
	skippedLines int64
	out          []byte      // the output lines and ids that results point into
	results      []converted // one per line
}

// batchLine is where a record was read; its line is the batch's in from
// the previous line's end to end.
type batchLine struct {
	at  jsonl.Position
	end int
}

// batchPool holds the batches the writer is done with.
var batchPool = sync.Pool{New: func() any { return new(batch) }}

// scratches holds the workers' per-record working memory between batches.
var scratches = sync.Pool{New: func() any { return new(convertScratch) }}

// convert converts the batch's records.
func (b *batch) convert(cv *converter) {
	sc := scratches.Get().(*convertScratch)
	defer scratches.Put(sc)
	b.results, b.out = b.results[:0], b.out[:0]
	start := 0
	for _, l := range b.lines {
		var r converted
		r, b.out = cv.convert(b.in[start:l.end], sc, b.out)
		if r.line.end > 0 {
			b.out = append(b.out, '\n') // the writer writes the lines from here
		}
		r.at = l.at
		b.results = append(b.results, r)
		start = l.end
	}
}

// recycle gives the batch back for reuse, unless one huge record made its
// buffers too large to keep.
func (b *batch) recycle() {
	if cap(b.in) > 4*batchBytes || cap(b.out) > 16*batchBytes {
		return
	}
	b.in, b.lines, b.skippedLines = b.in[:0], b.lines[:0], 0
	b.results = b.results[:0]
	batchPool.Put(b)
}

func (b *batcher) start(ctx context.Context, send func(*batch) bool, skipped func() int64) {
	b.ctx, b.send, b.skipped = ctx, send, skipped
}

// add copies a record (the reader reuses its buffer) into the batch.
func (b *batcher) add(at jsonl.Position, line []byte) error {
	if b.cur == nil {
		b.cur = batchPool.Get().(*batch)
	}
	c := b.cur
	c.in = append(c.in, line...)
	c.lines = append(c.lines, batchLine{at: at, end: len(c.in)})
	if len(c.lines) >= batchRecords || len(c.in) >= batchBytes {
		return b.flush()
	}
	return nil
}

// flush sends the batch so far, if it holds records or news of skipped
// lines.
func (b *batcher) flush() error {
	if b.send == nil {
		return nil
	}
	skipped := b.skipped()
	if (b.cur == nil || len(b.cur.lines) == 0) && skipped == b.sent {
		return nil
	}
	if b.cur == nil {
		b.cur = batchPool.Get().(*batch)
	}
	b.cur.skippedLines = skipped
	if !b.send(b.cur) {
		return context.Cause(b.ctx)
	}
	b.cur, b.sent = nil, skipped
	return nil
}

// summary counts what happened to the records, in input order.
type summary struct {
	read, written, tooLong, truncated, invalid int64
	skippedLines                               int64 // unreadable lines (too long) skipped by the reader
	tokens                                     int64
	longest, longestDropped                    int
	longestID, longestDroppedID                string
	limitReached                               bool
	thinking                                   thinkingTally
	shuffledWritten, spilled                   int64 // --shuffle: records written, bytes spilled to disk
}

// add counts one record; an invalid one ends the run unless skipInvalid,
// when invalid names it.
// out is the output buffer of r's batch.
func (s *summary) add(r *converted, out []byte, skipInvalid bool, invalid *cliutil.InvalidNamer) error {
	s.read++
	switch {
	case r.err != nil:
		if !skipInvalid {
			return exitcode.DataErrorf("%s: %v%s", r.at, r.err, invalidHint)
		}
		s.invalid++
		invalid.Name(r.at.String(), r.err)
	case r.tooLong:
		s.tooLong++
		if r.fullCount > s.longestDropped {
			s.longestDropped, s.longestDroppedID = r.fullCount, r.recordID(out)
		}
	default:
		s.written++
		s.thinking.add(r.thinking)
		s.tokens += int64(r.tokens)
		if r.tokens != r.fullCount {
			s.truncated++
		}
		if r.tokens > s.longest || s.written == 1 {
			s.longest, s.longestID = r.tokens, r.recordID(out)
		}
	}
	return nil
}

// String is the summary line: "read 9 records, wrote 7 (1,234 prompt
// tokens; longest 321, id "a"); dropped 1 longer than 400 tokens (longest
// 512, id "b"); skipped 1 invalid".
func (s *summary) String(cfg *config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "read %s, wrote %s (%s prompt tokens", count(s.read+s.skippedLines, "record"), cliutil.Thousands(s.written), cliutil.Thousands(s.tokens))
	if s.written > 0 {
		fmt.Fprintf(&b, "; longest %s, id %s", cliutil.Thousands(int64(s.longest)), record.ShowID(s.longestID))
	}
	b.WriteString(")")
	if s.tooLong > 0 {
		fmt.Fprintf(&b, "; dropped %s longer than %s tokens (longest %s, id %s)", cliutil.Thousands(s.tooLong), cliutil.Thousands(int64(cfg.convert.maxTokens)), cliutil.Thousands(int64(s.longestDropped)), record.ShowID(s.longestDroppedID))
	}
	if s.truncated > 0 {
		fmt.Fprintf(&b, "; cut %s to %s tokens (--truncate %s)", cliutil.Thousands(s.truncated), cliutil.Thousands(int64(cfg.convert.maxTokens)), cfg.convert.truncate)
	}
	if invalid := s.invalid + s.skippedLines; invalid > 0 {
		fmt.Fprintf(&b, "; skipped %s invalid", cliutil.Thousands(invalid))
	}
	if cfg.convert.thinking.IsSet() {
		b.WriteString("; ")
		b.WriteString(s.thinking.String(cfg.convert.thinking))
	}
	switch {
	case cfg.shuffle && s.limitReached:
		fmt.Fprintf(&b, "; shuffled (--shuffle %s), then wrote the first %s (--limit)", cfg.shuffleSeed, cliutil.Thousands(s.shuffledWritten))
	case cfg.shuffle:
		fmt.Fprintf(&b, "; shuffled (--shuffle %s)", cfg.shuffleSeed)
	case s.limitReached:
		fmt.Fprintf(&b, "; stopped at --limit %s", cliutil.Thousands(cfg.limit))
	}
	if s.spilled > 0 {
		fmt.Fprintf(&b, " through %s MiB of temporary files (past --shuffle-memory)", cliutil.Thousands(s.spilled>>20))
	}
	return b.String()
}

// count writes "1 record", "2,000 records".
func count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return cliutil.Thousands(n) + " " + noun + "s"
}
