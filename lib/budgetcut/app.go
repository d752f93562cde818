// Package budgetcut is the budget-cut tool: it passes whole records until the
// next one would take the running token total past a budget, then stops, so
// that whatever feeds it stops too.
package budgetcut

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/record"
)

const (
	flagTokens         = "tokens"
	flagAlready        = "already"
	flagUsed           = "used"
	flagCount          = "count"
	flagPath           = "path"
	flagInclusive      = "inclusive"
	flagMaxTrainLength = cliutil.FlagMaxTrainLength
	flagOutput         = "output"
	flagAppend         = "append"
)

// description is budget-cut's --help text.
const description = `budget-cut reads records (files, or stdin when none or "-"; gzip and zstd
are read transparently) and writes them unchanged until the next record would
take the running total past --tokens. It then stops reading and exits 0: the
process feeding it sees a closed pipe and stops too, so no more tokens are
bought than the budget allows.

A record's tokens are prompt_tokens + completion_tokens (falling back to the
lengths of input_ids and output_ids, then to usage); --count and --path choose
otherwise. A record with none of these (generate --output-format openai-batch
writes its usage under response.body) is not passed as 0 tokens: budget-cut
stops with exit 65 naming it, file and line, and the --path that would count
it; --count records cuts by the number of records instead. Tokens already
spent count against the budget: --already names earlier outputs (a torn last
line in them is ignored; one that does not exist yet, before a first run,
counts as empty; a record in them without a token count is refused as in the
input, and --count records counts their records), --used gives a number.
--tokens 0 is refused with 64, as every synthpipe budget of 0 is.
With -o FILE --append the existing FILE counts as already spent too, a torn
last line in it is cut off first (kept in FILE.torn), and every record is
written whole and flushed. The run holds an exclusive lock (flock) on FILE:
a second budget-cut appending to the same FILE at the same time does not
wait, it exits 75 at once with nothing written, so that the budget counted
by the first holds. A compressed FILE (gzip, zstd) is refused with 64 and
left as it is: records appended to it would be plain text.`

// NewApp returns a fresh budget-cut command.
func NewApp() *cliutil.App {
	cfg := new(config)
	return cliutil.NewApp(cliutil.Spec{
		Name:        "budget-cut",
		Usage:       "pass JSONL records until a token budget is reached, then stop",
		ArgsUsage:   "[FILE...]",
		Description: description,
		Flags:       flags(cfg),
		Examples: []cliutil.Example{
			{Comment: "stop generating once out.jsonl holds 10M tokens, across resumed runs",
				Command: "tokenize-prompts --tokenizer DIR p.jsonl | dedupe-resume --done out.jsonl | generate --url URL --token-budget 10M --already out.jsonl | budget-cut --tokens 10M -o out.jsonl --append"},
			{Comment: "the same with a shell redirection",
				Command: "generate --url URL --token-budget 10M --already out.jsonl < req.jsonl | budget-cut --tokens 10M --already out.jsonl >> out.jsonl"},
			{Comment: "keep the first 250k completion tokens of a finished file",
				Command: "budget-cut --tokens 250k --count completion big.jsonl.zst > sample.jsonl"},
		},
		ExitCodes: []cliutil.ExitStatus{
			{Code: exitcode.TempFail, Meaning: "-o FILE --append: another process is appending to FILE (it holds the lock); nothing was written: try again when it ends"},
		},
		SeeAlso: []string{"generate(1)", "tokstat(1)", "dedupe-resume(1)", "synthpipe-records(7)"},
		Action:  func(c *cli.Context) error { return run(c, cfg) },
		// At the end of a pipeline: on Ctrl-C it writes what the stages before
		// it still send (generate drains its answers in flight).
		FinishPipedInput: true,
	})
}

// flags lists budget-cut's options, each bound to its field of cfg and
// checked where it is declared; what depends on several flags is checked
// by cfg.check.
func flags(cfg *config) []cli.Flag {
	cfg.used, cfg.mode = 0, record.CountTotal
	return []cli.Flag{
		&cli.StringFlag{Name: flagTokens, Aliases: []string{"n"}, EnvVars: cliutil.EnvVars(flagTokens),
			Usage: "the budget: `N` tokens (250k, 10M, 1.5G or a plain number; 0 is refused with 64, as generate --token-budget 0 is)",
			Action: func(_ *cli.Context, s string) (err error) {
				cfg.budget, err = cliutil.ParseBudget(flagTokens, s, "to pass every record, leave budget-cut out of the pipeline")
				return err
			}},
		&cli.StringSliceFlag{Name: flagAlready, EnvVars: cliutil.EnvVars(flagAlready),
			Usage:  "count the tokens of this earlier output `FILE` as spent (repeatable; missing = empty)",
			Action: func(_ *cli.Context, files []string) error { cfg.already = files; return nil }},
		&cli.StringFlag{Name: flagUsed, Usage: "`N` tokens already spent elsewhere", Value: "0",
			Action: func(_ *cli.Context, s string) (err error) {
				if cfg.used, err = cliutil.ParseCount(s); err != nil {
					return cliutil.Usagef("--%s: %v", flagUsed, err)
				}
				return nil
			}},
		&cli.StringFlag{Name: flagCount, Value: "total", Usage: "what counts (`MODE`): total, prompt or completion tokens, or records (each record counts 1, --tokens is then a number of records)",
			Action: func(_ *cli.Context, s string) (err error) {
				if cfg.records = s == countRecords; cfg.records {
					return nil
				}
				if cfg.mode, err = record.ParseCountMode(s); err != nil {
					return cliutil.Usagef("--%s %q: want total, prompt, completion or records", flagCount, s)
				}
				return nil
			}},
		&cli.StringFlag{Name: flagPath, Destination: &cfg.path, Usage: "count the number at this gjson `PATH` instead (e.g. usage.total_tokens)"},
		&cli.StringFlag{Name: flagMaxTrainLength, Usage: cliutil.MaxTrainLengthUsage + " (reported in the summary; the budget still counts every token)",
			Action: func(_ *cli.Context, s string) (err error) {
				cfg.maxTrainLength, err = cliutil.ParseMaxTrainLength(flagMaxTrainLength, s)
				return err
			}},
		&cli.BoolFlag{Name: flagInclusive, Destination: &cfg.inclusive, Usage: "also pass the record that crosses the budget"},
		&cli.StringFlag{Name: flagOutput, Aliases: []string{"o"}, Destination: &cfg.output, Usage: "write to `FILE` instead of stdout, flushing each record"},
		&cli.BoolFlag{Name: flagAppend, Destination: &cfg.appendTo, Usage: "with -o: append to FILE (its tokens count as spent; a torn last line is cut off first)"},
		cliutil.IDPathFlag(),
		cliutil.QuietFlag(),
		cliutil.MaxLineFlag(),
		cliutil.SkipInvalidFlag(),
	}
}

// Main runs budget-cut and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliutil.Main(NewApp(), args, stdin, stdout, stderr)
}
