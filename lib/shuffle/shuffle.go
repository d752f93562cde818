// Package shuffle puts records in a seeded order that depends only on the
// seed and their ids: the order of SHA-256("synthpipe-shuffle" NUL seed NUL
// id). The same records come out in the same order on every rerun, from
// any input order, so a budget cut over the shuffled stream keeps the same
// fair sample, and a resumed run continues that sample. Sorting is
// external: records are held in memory up to a limit, then sorted and
// spilled to unlinked temporary files, which are merged at the end.
package shuffle

import (
	"bufio"
	"container/heap"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// Key is the place of the record with this id in the order of seed: the
// first 8 bytes of SHA-256("synthpipe-shuffle" NUL seed NUL id).
func Key(seed, id string) uint64 {
	h := sha256.New()
	h.Write([]byte("synthpipe-shuffle\x00"))
	h.Write([]byte(seed))
	h.Write([]byte{0})
	h.Write([]byte(id))
	var sum [sha256.Size]byte
	return binary.BigEndian.Uint64(h.Sum(sum[:0])[:8])
}

// RecordOverhead is what a held record costs beside its bytes, counted
// against the Sorter's limit: the slice header, key and sequence number,
// and the allocator's rounding. tokenize-prompts' help states it.
const RecordOverhead = 64

type rec struct {
	key  uint64
	seq  int64 // input order: equal keys (a repeated id) keep it
	line []byte
}

func less(a, b *rec) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	return a.seq < b.seq
}

// Sorter collects records and gives them back in key order, holding at
// most about limit bytes of them in memory.
type Sorter struct {
	limit int64
	dir   string // for the spilled runs; "" is os.TempDir()
	held  []rec
	bytes int64
	seq   int64
	runs  []*os.File
	// Spilled counts the bytes written to temporary files, for the summary.
	Spilled int64
}

// New returns a Sorter that holds up to limit bytes in memory and spills
// sorted runs to files in dir ("" for $TMPDIR).
func New(limit int64, dir string) *Sorter {
	return &Sorter{limit: limit, dir: dir}
}

// Add takes a record (line is copied) with its key.
func (s *Sorter) Add(key uint64, line []byte) error {
	s.held = append(s.held, rec{key: key, seq: s.seq, line: append([]byte(nil), line...)})
	s.seq++
	s.bytes += int64(len(line)) + RecordOverhead
	if s.bytes >= s.limit {
		return s.spill()
	}
	return nil
}

// spill sorts the held records and writes them to a new run file, which is
// unlinked at once: a killed run leaves no file behind.
func (s *Sorter) spill() error {
	s.sortHeld()
	f, err := os.CreateTemp(s.dir, "synthpipe-shuffle-*")
	if err != nil {
		return fmt.Errorf("--shuffle: a temporary file for records past the memory limit: %w", err)
	}
	os.Remove(f.Name())
	s.runs = append(s.runs, f)
	w := bufio.NewWriterSize(f, 1<<20)
	var head [binary.MaxVarintLen64*2 + 8]byte
	for i := range s.held {
		r := &s.held[i]
		b := binary.BigEndian.AppendUint64(head[:0], r.key)
		b = binary.AppendVarint(b, r.seq)
		b = binary.AppendUvarint(b, uint64(len(r.line)))
		w.Write(b)
		w.Write(r.line)
		s.Spilled += int64(len(b) + len(r.line))
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("--shuffle: writing records past the memory limit to %s: %w", f.Name(), err)
	}
	s.held, s.bytes = nil, 0
	return nil
}

func (s *Sorter) sortHeld() {
	slices.SortFunc(s.held, func(a, b rec) int {
		if less(&a, &b) {
			return -1
		}
		if less(&b, &a) {
			return 1
		}
		return 0
	})
}

// Each calls emit with every record in key order, and stops at its first
// error (returned). The Sorter is spent afterwards.
func (s *Sorter) Each(emit func([]byte) error) error {
	defer s.Close()
	s.sortHeld()
	if len(s.runs) == 0 {
		for _, r := range s.held {
			if err := emit(r.line); err != nil {
				return err
			}
		}
		return nil
	}
	m := &merge{}
	for _, f := range s.runs {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		src := &runReader{r: bufio.NewReaderSize(f, 256<<10)}
		if err := m.push(src); err != nil {
			return err
		}
	}
	if len(s.held) > 0 {
		if err := m.push(&runReader{held: s.held}); err != nil {
			return err
		}
	}
	for m.Len() > 0 {
		top := m.srcs[0]
		if err := emit(top.cur.line); err != nil {
			return err
		}
		if err := top.next(); err != nil {
			if !errors.Is(err, io.EOF) {
				return err
			}
			heap.Pop(m)
			continue
		}
		heap.Fix(m, 0)
	}
	return nil
}

// Close drops what the Sorter holds; its files are already unlinked.
func (s *Sorter) Close() {
	for _, f := range s.runs {
		f.Close()
	}
	s.runs, s.held = nil, nil
}

// runReader reads one sorted run: a spilled file, or the records still
// held in memory.
type runReader struct {
	r    *bufio.Reader
	held []rec
	cur  rec
}

// next reads the run's next record into cur; io.EOF at its end.
func (r *runReader) next() error {
	if r.r == nil {
		if len(r.held) == 0 {
			return io.EOF
		}
		r.cur, r.held = r.held[0], r.held[1:]
		return nil
	}
	var k [8]byte
	if _, err := io.ReadFull(r.r, k[:]); err != nil {
		return err // io.EOF at a record boundary: the run's end
	}
	seq, err := binary.ReadVarint(r.r)
	if err != nil {
		return corrupt(err)
	}
	n, err := binary.ReadUvarint(r.r)
	if err != nil {
		return corrupt(err)
	}
	line := make([]byte, n)
	if _, err := io.ReadFull(r.r, line); err != nil {
		return corrupt(err)
	}
	r.cur = rec{key: binary.BigEndian.Uint64(k[:]), seq: seq, line: line}
	return nil
}

func corrupt(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("--shuffle: reading back a temporary file: %w", err)
}

// merge is a min-heap of runs by their current record.
type merge struct{ srcs []*runReader }

func (m *merge) push(r *runReader) error {
	if err := r.next(); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	heap.Push(m, r)
	return nil
}

func (m *merge) Len() int           { return len(m.srcs) }
func (m *merge) Less(i, j int) bool { return less(&m.srcs[i].cur, &m.srcs[j].cur) }
func (m *merge) Swap(i, j int)      { m.srcs[i], m.srcs[j] = m.srcs[j], m.srcs[i] }
func (m *merge) Push(x any)         { m.srcs = append(m.srcs, x.(*runReader)) }
func (m *merge) Pop() any {
	last := m.srcs[len(m.srcs)-1]
	m.srcs = m.srcs[:len(m.srcs)-1]
	return last
}
