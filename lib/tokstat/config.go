package tokstat

import (
	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// config is tokstat's options: flags sets its fields from the flags, each
// checked where it is declared, and check what depends on several of them.
type config struct {
	endIDs    []int // --end-id
	files     []string
	by        string
	budget    int64
	hasBudget bool
	// maxTrainLength: --max-train-length, 0 when not given.
	maxTrainLength int64
	hist           bool
	// outputs are the flags that choose the output, at most one given;
	// check sets format from them.
	outputs struct{ json, tsv, html, total bool }
	format  format
	idPath  string
	input   jsonl.Options
	// dupAcross counts ids across --by groups; by default each group (a
	// dataset) has ids of its own, which other datasets may reuse.
	dupAcross bool
	// jobs: the arguments are folders, shown as a job (jobs.go).
	jobs bool
}

// check checks what depends on several flags, reads the shared ones and
// checks the files named; given folders, it checks that only the flags
// that go with a job's view were given.
func (cfg *config) check(c *cli.Context) (err error) {
	cfg.idPath = c.String(cliutil.FlagIDPath)
	if cfg.files = c.Args().Slice(); len(cfg.files) == 0 {
		cfg.files = []string{"-"}
	}
	if err := cfg.chooseFormat(); err != nil {
		return err
	}
	if cfg.input, err = cliutil.InputOptions(c); err != nil {
		return err
	}
	if cfg.jobs, err = folders(cfg.files); err != nil || cfg.jobs {
		if err == nil {
			for _, f := range []string{flagBy, flagBudget, flagHist, flagTSV, flagTotal, flagDupAcross, flagMaxTrainLength} {
				if c.IsSet(f) {
					return cliutil.Usagef("--%s is for files: given folders, tokstat shows each dataset's state from its status file (only --json or --html goes with that)", f)
				}
			}
		}
		return err
	}
	cfg.input.SkipInvalid = true // a health report counts bad lines, it does not stop at them
	var files jsonl.Files
	files.Inputs(c.App.Reader, cfg.files)
	files.Stdout(c.App.Writer)
	return files.Check()
}

// chooseFormat sets format from the output flags, of which one at most may
// be given, and checks that --hist goes with it.
func (cfg *config) chooseFormat() error {
	chosen := 0
	for _, f := range []struct {
		on bool
		format
	}{{cfg.outputs.tsv, formatTSV}, {cfg.outputs.json, formatJSON}, {cfg.outputs.total, formatTotal}, {cfg.outputs.html, formatHTML}} {
		if f.on {
			cfg.format = f.format
			chosen++
		}
	}
	if chosen > 1 {
		return cliutil.Usagef("--json, --tsv, --html and --total each choose the output: pick one")
	}
	if cfg.hist && cfg.format != formatTable {
		return cliutil.Usagef("--hist goes with the table output, not --json, --tsv, --html or --total (the --html page has its own histograms)")
	}
	return nil
}
