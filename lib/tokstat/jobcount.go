package tokstat

import (
	"hash/fnv"
	"io"
	"os"
	"path/filepath"

	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// The job view counts what a dataset's files hold now: its output's
// records, tokens and soft failures, and its prompts. A status file is
// rewritten once a --progress-interval (a minute under run-dataset.sh), and
// not at all by a run without --status-file, so its counts lag or are of
// another run; the output never does.

// outputCount is what an output file holds.
type outputCount struct {
	records int64 // answers, records with an error left out (as budgets count)
	errors  int64 // records that carry an error
	tokens  int64 // total tokens of the answers
	soft    int64 // answers truncated, aborted or empty
}

// countOutput reads an output file whole (a torn last line is not a record).
func countOutput(stdin io.Reader, path string, opt jsonl.Options, idPath string) (outputCount, error) {
	var c outputCount
	opt.SkipInvalid = true
	scan := record.NewScanner(idPath, false, "")
	in, err := jsonl.Open(stdin, []string{path}, record.ScanAhead(opt, scan))
	if err != nil {
		return c, err
	}
	defer in.Close()
	for in.Next() {
		info, err := record.Scanned(in)
		if err != nil {
			in.Invalid(err) // counted by the reader, skipped
			continue
		}
		if info.HasError {
			c.errors++
			continue
		}
		c.records++
		c.tokens += info.Tokens(record.CountTotal)
		if info.Truncated() || info.FinishReason == "abort" || info.CompletionTokens == 0 {
			c.soft++
		}
	}
	return c, in.Err()
}

// promptFiles are where a dataset's prompts are, as run-dataset.sh looks
// for them.
var promptFiles = []string{"prompts.jsonl", "prompts.jsonl.zst", "prompts.jsonl.gz"}

// countPrompts is the number of distinct prompt lines in dir, the records a
// dataset has in all; 0 when it has no prompts file. A line repeated byte
// for byte is one prompt (the same source id, or the same derived one:
// dedupe-resume lets one through), so a finished dataset with duplicates
// shows all it has (180/180), not 180/200. Prompts that differ only in key
// order or in fields tokenize-prompts drops still count apart. Memory: a
// 64-bit hash per distinct line.
func countPrompts(stdin io.Reader, dir string, opt jsonl.Options) int64 {
	for _, name := range promptFiles {
		path := filepath.Join(dir, name)
		if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		opt.SkipInvalid = true
		in, err := jsonl.Open(stdin, []string{path}, opt)
		if err != nil {
			return 0
		}
		seen := map[uint64]struct{}{}
		h := fnv.New64a()
		for in.Next() {
			h.Reset()
			h.Write(in.Bytes())
			seen[h.Sum64()] = struct{}{}
		}
		in.Close()
		return int64(len(seen))
	}
	return 0
}
