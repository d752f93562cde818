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
		return f.pass(info.ID, line)
	}
	for k := 1; k <= f.cfg.samples; k++ {
		id := record.SampleID(info.ID, k)
		if f.done.ContainsString(id) || f.seen.ContainsString(id) {
			f.pass(id, nil) // counted only
			continue
		}
		sample, err := record.SampleLine(line, f.id, info.ID, k)
		if err != nil {
			return err
		}
		if err := f.pass(id, sample); err != nil {
			return err
		}
	}
	return nil
}

// pass writes line under id unless id is done or was seen, counting which.
func (f *filter) pass(id string, line []byte) error {
	switch {
	case f.done.ContainsString(id):
		f.t.done++
		return nil
	case !f.seen.AddString(id):
		f.t.repeated++
		return nil
	}
	if err := f.out.Write(line); err != nil {
		return writeFailed{err}
	}
	f.t.toDo++
	return nil
}
