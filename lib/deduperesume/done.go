package deduperesume

import (
	"errors"
	"io/fs"
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
func loadDone(cfg *config, scan *record.Scanner, missing func(path string)) (*idset.Set, jsonl.Stats, error) {
	set := idset.New(0)
	var existing []string
	for _, path := range cfg.done {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			missing(path)
			continue
		}
		existing = append(existing, path) // jsonl.Open reports the rest
	}
	if len(existing) == 0 {
		return set, jsonl.Stats{}, nil
	}
	in, err := jsonl.Open(nil, existing, cfg.input)
	if err != nil {
		return nil, jsonl.Stats{}, err
	}
	defer in.Close()
	for in.Next() {
		info, err := scan.Scan(in.Bytes())
		if err != nil {
			if err := in.Invalid(err); err != nil {
				return nil, in.Stats(), err
			}
			continue
		}
		if info.HasError && cfg.retryErrors || !cfg.shard.keeps(info.ID) {
			continue // still to do, or another shard's: no need to hold it
		}
		set.AddString(info.ID)
	}
	return set, in.Stats(), in.Err()
}
