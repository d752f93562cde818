package deduperesume

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/idset"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// config is dedupe-resume's options: flags sets its fields from the flags,
// each checked where it is declared, and check reads the shared ones and
// checks the files named.
type config struct {
	done        []string
	retryErrors bool
	shard       shard
	quiet       bool
	idPath      string
	input       jsonl.Options
	samples     int  // --samples: a prompt is done when all its samples are
	sameParams  bool // --require-same-params
}

// check reads the shared flags and checks the input and --done files.
func (cfg *config) check(c *cli.Context) (err error) {
	cfg.quiet, cfg.idPath = c.Bool(cliutil.FlagQuiet), c.String(cliutil.FlagIDPath)
	if cfg.input, err = cliutil.InputOptions(c); err != nil {
		return err
	}
	var files jsonl.Files
	files.Inputs(c.App.Reader, c.Args().Slice())
	files.State("--"+flagDone, cfg.done)
	files.Stdout(c.App.Writer)
	return files.Check()
}

// tally counts what happened to the records, for the summary.
type tally struct {
	toDo, done, repeated, otherShards, torn, invalid int64
	samples                                          int // --samples: the counts are samples
}

func run(c *cli.Context, cfg *config) (err error) {
	if err := cfg.check(c); err != nil {
		return err
	}
	stderr, name := c.App.ErrWriter, c.App.Name
	scan := record.NewScanner(cfg.idPath, true, "")

	done, doneStats, err := loadDone(cfg, scan, func(path string) {
		if !cfg.quiet {
			cliutil.Notef(stderr, name, "done file %s does not exist yet: counted as empty", path)
		}
	})
	if err != nil {
		return err
	}

	out := jsonl.NewWriter(c.App.Writer)
	defer func() { // what passed reaches stdout even when we fail
		if ferr := out.Flush(); err == nil {
			err = ferr
		}
	}()
	// Records are scanned ahead, on every core, while the ones before are
	// filtered and written in order (record.ScanAhead).
	opt := record.ScanAhead(cfg.input, scan)
	opt.BeforeRead = out.Flush
	// Records are written from where the reader read them, several at a
	// time, not copied one by one.
	out.HoldLines()
	opt.BeforeReuse = out.WriteHeld
	// The records to do are prompts, often written without a final
	// newline; a done file's torn line stays torn (it is not done).
	opt.LastLineRecord = true
	in, err := jsonl.Open(c.App.Reader, c.Args().Slice(), opt)
	if err != nil {
		return err
	}
	defer in.Close()

	if err := checkProvenance(&doneStats.provenance, cfg, func(format string, args ...any) { cliutil.Notef(stderr, name, format, args...) }); err != nil {
		return err
	}
	if doneStats.maxSample > 1 && cfg.samples == 1 && !cfg.quiet {
		cliutil.Notef(stderr, name, "warning: the done records hold up to %d samples per prompt (generate --samples): without --%s %d a prompt counts as done when its first sample is, and its missing samples are not redone",
			doneStats.maxSample, flagSamples, doneStats.maxSample)
	}
	t := tally{samples: cfg.samples}
	f := &filter{cfg: cfg, done: done, seen: idset.New(0), id: record.NewIDPath(cfg.idPath), out: out, t: &t}
	for in.Next() {
		info, err := record.Scanned(in)
		if err != nil {
			if err := in.Invalid(err); err != nil {
				return err
			}
			continue
		}
		if err := f.record(info, in.Bytes()); err != nil {
			var wf writeFailed
			if errors.As(err, &wf) {
				return t.closedPipe(wf.err, cfg, stderr, name) // cliutil makes a closed pipe status 0
			}
			if err := in.Invalid(err); err != nil {
				return err
			}
		}
	}
	if err := in.Err(); err != nil {
		return t.closedPipe(err, cfg, stderr, name) // a flush before a read can meet the closed pipe too
	}
	st := in.Stats()
	t.torn = doneStats.Torn + st.Torn
	t.invalid = doneStats.Invalid + st.Invalid
	if !cfg.quiet {
		cliutil.Notef(stderr, name, "%s", t.summary(cfg.shard))
	}
	return nil
}

// closedPipe returns err, first giving the summary when err is the next
// tool closing the pipe (generate at its budget, head): the run's counts
// belong in the log then too, with what passed before the pipe closed.
func (t tally) closedPipe(err error, cfg *config, stderr io.Writer, name string) error {
	if cliutil.IsBrokenPipe(err) && !cfg.quiet {
		cliutil.Notef(stderr, name, "%s; the next tool closed the pipe after these, so the rest of the input was not read", t.summary(cfg.shard))
	}
	return err
}

// summary is the one line on stderr; its wording is stable for scripts.
func (t tally) summary(s shard) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d to do, %d already done, %d repeated in stream", t.toDo, t.done, t.repeated)
	if t.samples > 1 {
		fmt.Fprintf(&b, " (samples, %d per prompt)", t.samples)
	}
	if !s.all() {
		fmt.Fprintf(&b, ", %d skipped as other shards' (shard %d/%d)", t.otherShards, s.k, s.n)
	}
	fmt.Fprintf(&b, ", %s ignored", cliutil.Count(t.torn, "torn line"))
	if t.invalid > 0 {
		fmt.Fprintf(&b, ", %s skipped", cliutil.Count(t.invalid, "invalid line"))
	}
	return b.String()
}

// checkProvenance says when the done records were made with more than one
// backend, model or set of sampling parameters, once per field, or refuses
// them with --require-same-params (see "Provenance" in --help).
func checkProvenance(p *record.Provenance, cfg *config, warn func(format string, args ...any)) error {
	diffs := p.Mixed()
	if len(diffs) == 0 {
		return nil
	}
	if cfg.sameParams {
		return exitcode.DataErrorf("--%s: the --%s records differ in %s: %s; nothing passed (resume into an output of one kind)",
			flagSameParams, flagDone, diffs[0].Field, diffs[0])
	}
	for _, d := range diffs {
		warn("warning: the --%s records differ in %s: %s (--%s refuses to mix them)", flagDone, d.Field, d, flagSameParams)
	}
	return nil
}
