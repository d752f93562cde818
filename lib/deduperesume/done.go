package deduperesume

import (
	"bytes"
	"io"
	"os"

	"github.com/synthpipe/synthpipe/lib/idset"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// loadDone reads the ids of every done file into a set. A file that does not
// exist yet is reported to missing and counts as empty; any other failure to
// read one is an error. Records carrying an error are skipped with
// --retry-errors: they are work still to do. With --shard, only the ids of
// this shard are kept, so that N machines reading one shared done file each
// hold a 1/N of it.
func loadDone(cfg *config, scan *record.Scanner, missing func(path string)) (*idset.Set, doneStats, error) {
	set := idset.New(0)
	var st doneStats
	existing := jsonl.ExistingFiles(cfg.done, missing)
	if len(existing) == 0 {
		return set, st, nil
	}
	in, err := jsonl.Open(nil, existing, cfg.input)
	if err != nil {
		return nil, st, err
	}
	defer in.Close()
	set = idset.New(expectedIDs(existing) / max(int(cfg.shard.n), 1))
	scan = scan.BorrowingIDs() // fill.add copies each id at once
	fill := newSetFiller(set)
	defer fill.wait() // on every path: the filler must not outlive the call
	for in.Next() {
		info, err := scan.Scan(in.Bytes())
		if err != nil {
			if err := in.Invalid(err); err != nil {
				st.Stats = in.Stats()
				return nil, st, err
			}
			continue
		}
		if info.HasError && cfg.retryErrors || !cfg.shard.keeps(shardID(info)) {
			continue // still to do, or another shard's: no need to hold it
		}
		st.maxSample = max(st.maxSample, info.Sample)
		st.provenance.Add(info.Gen)
		fill.add(info.ID)
	}
	fill.wait()
	st.Stats = in.Stats()
	return set, st, in.Err()
}

// doneStats is what reading the done files found besides their ids.
type doneStats struct {
	jsonl.Stats
	maxSample  int // the highest sample number a done record has (generate --samples)
	provenance record.Provenance
}

// sampleSize is how much of each done file expectedIDs reads.
const sampleSize = 64 << 10

// expectedIDs estimates how many ids the done files hold, from their sizes
// and the length of the lines they start with, so that the set is made its
// final size at once: growing by doubling places every id again and, at its
// peak, holds the old table and the new one. A compressed file (or one that
// cannot be read) adds nothing: the set grows for it as it must.
func expectedIDs(paths []string) int {
	total := 0
	buf := make([]byte, sampleSize)
	for _, path := range paths {
		// Only a regular file may be read twice: from a pipe, a named pipe
		// or a process substitution the sample would be lost to the read
		// that counts (or it would wait for a writer that never comes).
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			continue // jsonl.Open has reported it
		}
		n, _ := io.ReadFull(f, buf)
		f.Close()
		sample := buf[:n]
		lines := bytes.Count(sample, []byte{'\n'})
		if lines == 0 || jsonl.Compressed(sample) {
			continue
		}
		lineSize := (bytes.LastIndexByte(sample, '\n') + 1) / lines
		ids := int(fi.Size() / int64(lineSize))
		total += ids + ids/16 // room for later lines a little shorter
	}
	return total
}

// batchIDs is how many ids the reader hands the filler at a time: enough to
// make the hand-over cost nothing per id, few enough to stay in cache.
const batchIDs = 4096

// idBatch is ids laid end to end.
type idBatch struct {
	data []byte
	ends []int
}

// setFiller adds ids to a set on a goroutine of its own, in batches, so that
// scanning the done files and filling the set (hashing, probing, growing) run
// on two cores.
type setFiller struct {
	set   *idset.Set
	full  chan *idBatch // to the filler
	empty chan *idBatch // back to the reader, for reuse
	done  chan struct{}
	cur   *idBatch
}

func newSetFiller(set *idset.Set) *setFiller {
	const batches = 3 // one being read into, one queued, one being added
	f := &setFiller{set: set, full: make(chan *idBatch, batches), empty: make(chan *idBatch, batches),
		done: make(chan struct{})}
	for range batches - 1 {
		f.empty <- &idBatch{}
	}
	f.cur = &idBatch{}
	go f.fill()
	return f
}

func (f *setFiller) fill() {
	defer close(f.done)
	for b := range f.full {
		start := 0
		for _, end := range b.ends {
			f.set.Add(b.data[start:end])
			start = end
		}
		b.data, b.ends = b.data[:0], b.ends[:0]
		f.empty <- b
	}
}

// add queues id; the set holds it once wait returns.
func (f *setFiller) add(id string) {
	f.cur.data = append(f.cur.data, id...)
	f.cur.ends = append(f.cur.ends, len(f.cur.data))
	if len(f.cur.ends) == batchIDs {
		f.full <- f.cur
		f.cur = <-f.empty
	}
}

// wait hands over the last ids and returns when all are in the set. It may
// be called more than once.
func (f *setFiller) wait() {
	if f.cur == nil {
		return
	}
	if len(f.cur.ends) > 0 {
		f.full <- f.cur
	}
	f.cur = nil
	close(f.full)
	<-f.done
}
