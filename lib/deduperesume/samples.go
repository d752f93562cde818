package deduperesume

import (
	"github.com/synthpipe/synthpipe/lib/idset"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// filter decides, record by record, what passes: a record whose id is not
// done and not seen, or, with --samples N, each sample of a prompt that is
// neither (see "Samples" in --help).
type filter struct {
	cfg  *config
	done *idset.Set
	seen *idset.Set
	id   record.IDPath
	out  *jsonl.Writer
	t    *tally
}

// writeFailed is an error of stdout, which ends the run (a closed pipe:
// status 0); any other error of record is the record's.
type writeFailed struct{ err error }

func (w writeFailed) Error() string { return w.err.Error() }
func (w writeFailed) Unwrap() error { return w.err }

// shardID is the id a record is sharded by: a sample goes with its prompt,
// so that one machine holds all of a prompt's samples.
func shardID(info record.Info) string {
	if info.Sample > 0 {
		return info.PromptID
	}
	return info.ID
}

// record passes line on, or each of its missing samples, or nothing.
func (f *filter) record(info record.Info, line []byte) error {
	if !f.cfg.shard.keeps(shardID(info)) {
		f.t.otherShards++
		return nil
	}
	if f.cfg.samples == 1 || info.Sample > 0 {
		if !f.admit(info.ID) {
			return nil
		}
		// line is the reader's, which the writer may hold where it lies.
		return f.written(f.out.WriteStableLine(line))
	}
	for k := 1; k <= f.cfg.samples; k++ {
		id := record.SampleID(info.ID, k)
		if f.done.ContainsString(id) || f.seen.ContainsString(id) {
			f.admit(id) // counted only
			continue
		}
		sample, err := record.SampleLine(line, f.id, info.ID, k)
		if err != nil {
			return err
		}
		if f.admit(id) {
			if err := f.written(f.out.Write(sample)); err != nil {
				return err
			}
		}
	}
	return nil
}

// admit reports whether the record under id is to be written: neither done
// nor seen; it counts those that are not.
func (f *filter) admit(id string) bool {
	switch {
	case f.done.ContainsString(id):
		f.t.done++
		return false
	case !f.seen.AddString(id):
		f.t.repeated++
		return false
	}
	return true
}

// written counts a record written, or makes its write's error the run's.
func (f *filter) written(err error) error {
	if err != nil {
		return writeFailed{err}
	}
	f.t.toDo++
	return nil
}
