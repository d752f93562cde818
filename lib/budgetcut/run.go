package budgetcut

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// config is budget-cut's options: flags' sets its fields from the flags,
// checked, and check what depends on several of them.
type config struct {
	budget    int64
	used      int64
	already   []string
	mode      record.CountMode
	path      string
	inclusive bool
	output    string
	appendTo  bool
	quiet     bool
	idPath    string
	input     jsonl.Options
	records   bool // --count records: every record counts 1
	// maxTrainLength: --max-train-length, 0 when not given: the summary
	// also says what a trainer with that sequence length cuts off.
	maxTrainLength int64
}

// countRecords is the --count that counts records, not tokens: for
// records that carry no token count.
const countRecords = "records"

// check checks what depends on several flags, reads the shared ones and
// checks the files named.
func (cfg *config) check(c *cli.Context) (err error) {
	cfg.quiet, cfg.idPath = c.Bool(cliutil.FlagQuiet), c.String(cliutil.FlagIDPath)
	if !c.IsSet(flagTokens) {
		return cliutil.Usagef("--tokens is required (e.g. --tokens 10M)")
	}
	if cfg.appendTo && cfg.output == "" {
		return cliutil.Usagef("--append needs -o FILE (or use the shell's >> instead)")
	}
	if cfg.input, err = cliutil.InputOptions(c); err != nil {
		return err
	}
	if cfg.appendTo && !jsonl.SameFileIn(cfg.output, cfg.already) {
		cfg.already = append(cfg.already, cfg.output)
	}
	var files jsonl.Files
	files.Inputs(c.App.Reader, c.Args().Slice())
	files.State("--"+flagAlready, cfg.already)
	if cfg.output == "" {
		files.Stdout(c.App.Writer)
	}
	files.Output("-o", cfg.output, cfg.appendTo)
	return files.Check()
}

// unit names what the budget counts, for the summary: "total tokens", or
// the --path when it overrides --count.
func (cfg *config) unit() string {
	if cfg.path != "" {
		return "tokens at " + cfg.path
	}
	if cfg.records {
		return "records (--count records)"
	}
	return cfg.mode.String() + " tokens"
}

func run(c *cli.Context, cfg *config) (err error) {
	if err := cfg.check(c); err != nil {
		return err
	}
	stderr, name := c.App.ErrWriter, c.App.Name
	scan := record.NewScanner(cfg.idPath, false, cfg.path)

	// Every input is checked before -o is created: a missing one must not
	// cost the file an earlier run wrote there.
	if in, err := jsonl.Open(c.App.Reader, c.Args().Slice(), cfg.input); err != nil {
		return err
	} else {
		in.Close()
	}
	// Open (and repair) the output before counting it as already spent.
	out, finishOutput, err := jsonl.OpenOutput(cfg.output, cfg.appendTo, c.App.Writer, cliutil.Warner(c))
	if err != nil {
		return err
	}
	defer func() {
		if ferr := finishOutput(); err == nil {
			err = ferr
		}
	}()

	// Lines skipped by --skip-invalid, in the --already files and the input
	// alike: a skipped line of an earlier output is tokens not counted.
	var skipped int64
	input := cfg.input
	input.Skipped = func(string, error) { skipped++ }
	noteSkipped := func() {
		if skipped > 0 { // shown even with -q: it is about the data
			cliutil.Notef(stderr, name, "skipped %s (--skip-invalid)", cliutil.Count(skipped, "invalid line"))
		}
	}

	spent, err := cfg.spent(c, input, scan, noteSkipped)
	if err != nil || spent >= cfg.budget {
		return err
	}
	opt := record.ScanAhead(input, scan)
	opt.BeforeRead = out.Flush
	// Records are written from where the reader read them, several at a
	// time, not copied one by one (a write per record was a tenth of the
	// CPU on a 220 MB file).
	out.HoldLines()
	opt.BeforeReuse = out.WriteHeld
	in, err := jsonl.Open(c.App.Reader, c.Args().Slice(), opt)
	if err != nil {
		return err
	}
	defer in.Close()
	return cfg.cut(c, in, out, spent, noteSkipped)
}

// spent is what was spent before this run: --used and the --already
// files. At or over the budget, it says so (after noteSkipped) unless -q.
func (cfg *config) spent(c *cli.Context, input jsonl.Options, scan *record.Scanner, noteSkipped func()) (int64, error) {
	stderr, name := c.App.ErrWriter, c.App.Name
	spent := cfg.used
	already := jsonl.ExistingFiles(cfg.already, func(path string) {
		if !cfg.quiet {
			cliutil.Notef(stderr, name, "--%s %s does not exist yet: counted as empty", flagAlready, path)
		}
	})
	if len(already) > 0 {
		n, err := cfg.spentAlready(c.App.Reader, already, input, scan)
		if err != nil {
			return 0, err
		}
		spent += n
	}
	if spent < cfg.budget {
		return spent, nil
	}
	noteSkipped()
	if !cfg.quiet {
		cliutil.Notef(stderr, name, "already at or over budget: %s of %s %s spent; passing nothing",
			cliutil.Thousands(spent), cliutil.Thousands(cfg.budget), cfg.unit())
	}
	return spent, nil
}

// cut passes the records of in to out until the budget, of which spent is
// spent already, is reached, and says what it passed (after noteSkipped)
// unless -q.
func (cfg *config) cut(c *cli.Context, in *jsonl.Reader, out *jsonl.Writer, spent int64, noteSkipped func()) error {
	var passed, tokens int64
	past := record.TrainCut{MaxLength: cfg.maxTrainLength}
	reason := "input ended"
	for in.Next() {
		info, err := record.Scanned(in)
		if err != nil {
			if err := in.Invalid(err); err != nil {
				return err
			}
			continue
		}
		t, err := cfg.tokens(info)
		if err != nil {
			return exitcode.DataErrorf("%s: record%s %v", in.Pos(), record.IDNote(info), err)
		}
		if spent+t > cfg.budget {
			reason = fmt.Sprintf("budget reached: the next record%s has %s, %s left", record.IDNote(info), cliutil.Count(t, "token"), cliutil.Thousands(cfg.budget-spent))
			if !cfg.inclusive {
				break
			}
			reason += " (passed it: --inclusive)"
		}
		if err := out.WriteStableLine(in.Bytes()); err != nil {
			return err
		}
		passed++
		tokens += t
		spent += t
		past.Add(info)
		if spent >= cfg.budget {
			// Spent exactly: stop now rather than read one more record that
			// cannot fit, so that the producer stops one record sooner.
			if spent == cfg.budget {
				reason = "budget spent exactly"
			}
			break
		}
	}
	if err := in.Err(); err != nil {
		return err
	}
	noteSkipped()
	if !cfg.quiet {
		left := max(cfg.budget-spent, 0)
		cliutil.Notef(c.App.ErrWriter, c.App.Name, "passed %s, %s %s; %s of %s left; %s%s",
			cliutil.Count(passed, "record"), cliutil.Thousands(tokens), cfg.unit(), cliutil.Thousands(left), cliutil.Thousands(cfg.budget), reason,
			trainCutNote(past))
	}
	return nil
}

// trainCutNote is the summary's part on what a trainer with sequence length
// --max-train-length cuts off the records passed (the budget counts those
// tokens, training never sees them); "" without that flag.
func trainCutNote(c record.TrainCut) string {
	if c.MaxLength <= 0 {
		return ""
	}
	share := 0.0
	if c.Trained > 0 {
		share = 100 * float64(c.Tokens) / float64(c.Trained)
	}
	return fmt.Sprintf("; %s longer than --%s %s: a trainer cuts %s off them (%.1f%% of the %s a trainer is given)",
		cliutil.Count(c.Records, "record"), flagMaxTrainLength, cliutil.Thousands(c.MaxLength), cliutil.Count(c.Tokens, "token"), share, cliutil.Thousands(c.Trained))
}

// spentAlready is what the --already files spent, counted as the input
// is: records under --count records, and a record without any token count
// refused as it would be in the input (65), not counted as 0.
func (cfg *config) spentAlready(stdin io.Reader, already []string, input jsonl.Options, scan *record.Scanner) (int64, error) {
	sum, err := record.SumTokens(stdin, already, input, scan, cfg.mode)
	switch {
	case err != nil:
		return 0, err
	case cfg.records:
		return sum.Records, nil
	case sum.Uncounted > 0:
		return 0, exitcode.DataErrorf("%s %s: --%s cannot count it against --tokens (%s in all); %s",
			sum.FirstUncounted, record.NoCount, flagAlready, cliutil.Count(sum.Uncounted, "such record"), record.CountHint)
	}
	return sum.Tokens, nil
}

// tokens is what info counts against the budget. A record without any
// token count is refused rather than passed as 0 (an output of generate
// --output-format openai-batch carries its usage under response.body).
func (cfg *config) tokens(info record.Info) (int64, error) {
	switch {
	case cfg.records:
		return 1, nil
	case info.Counted || info.HasCustom:
		return info.Tokens(cfg.mode), nil
	}
	return 0, fmt.Errorf("%s: it cannot be counted against --tokens; name the number that counts it with --path "+
		"(generate --output-format openai-batch: --path response.body.usage.total_tokens), or cut by records with --count records", record.NoCount)
}
