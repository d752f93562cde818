// Package tokstat is the tokstat tool: the health of a dataset of generated
// records at a glance — how many records and tokens, how long the answers
// are, how they ended, and what is wrong with the data (errors, duplicate
// ids, invalid lines, torn files).
package tokstat

import (
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/softfail"
)

const (
	flagBy             = "by"
	flagBudget         = "budget"
	flagMaxTrainLength = cliutil.FlagMaxTrainLength
	flagHist           = "hist"
	flagHTML           = "html"
	flagJSON           = "json"
	flagTSV            = "tsv"
	flagTotal          = "total"
	flagDupAcross      = "duplicates-across-groups"
	flagEndID          = "end-id"
)

// descriptionText is tokstat's --help text; {{.Name}} is a constant of
// helpConstants.
const descriptionText = `tokstat reads records (files, or stdin when none or "-"; gzip and zstd are
read transparently) and reports, for the whole input and for each group:
records; prompt, completion and total tokens (prompt_tokens and
completion_tokens, falling back to the lengths of input_ids and output_ids,
then to usage); the completion length's mean, exact 50th, 90th and 99th
percentiles and maximum; the count of each finish_reason ("none" for records
without one) and the share of answers truncated (finish_reason "length");
records that carry an "error"; duplicate ids (exact: a record whose id
appeared earlier in the input; with --by, earlier in the same group, since
datasets may share ids, unless --duplicates-across-groups); lines that are not valid records; files whose
last line was torn. Records that carry an error count as records and errors,
but not as tokens, as budget-cut --already counts them.

Groups: with --by PATH, one group per value of that gjson path over all the
input ("(none)" where it is missing, with a warning that says how many and
where the first is); otherwise one group per file when several are given.
A dataset is a folder (DATA/DATASET/out.jsonl, as scripts/run-dataset.sh
lays a job out), so with --by dataset a record without a dataset field,
read from a file, counts in the dataset its file's folder names
(data/chat/out.jsonl: chat). Invalid lines and torn files belong to a file, so with
--by they are counted in the total only. For a file-by-value breakdown run
tokstat --by once per file.

tokstat never stops at a bad line: it counts it, and names the first {{.ShownInvalid}}
with their FILE:LINE on stderr.

Output: an aligned table (the default), --tsv (one header line, one line per
group, the total last; raw numbers), or --json (one object: "total", and
"groups" in order, each with records, prompt_tokens, completion_tokens,
total_tokens, completion_length {count, mean, p50, p90, p99, max},
finish_reasons, truncated, truncated_share, errors, duplicates, missing_ids,
invalid_lines, torn, soft_failures when any, and budget {tokens, used, left, percent}
with --budget).

Conversations (generate --turns all: records with "turns" and "ended") are
counted by synthpipe-records(7)'s rule: their prompt and completion tokens
summed over their turns (what was spent: every turn re-sends the
conversation so far), their completion length the sum of their turns'. When
the input holds any, the table and --tsv add, per group: conversations, the
turns they made in all and per conversation (turns/conv: mean, p50, p90,
max), each turn's completion tokens (turn mean, p50, p90, p99, max: what
max_tokens bounds), and why they ended, a column per reason (ended done,
length, mismatch, budget, ...; synthpipe-records(7)). --json adds to every
group "conversations": {count, turns, turns_per_conversation {count, mean,
p50, p90, p99, max}, conversations_by_turns {"N": conversations},
ended {reason: conversations}, turn_completion_length {count, mean, p50,
p90, p99, max}, turn_finish_reasons}.
Soft failures: answers written without an error that would teach a draft
the wrong thing. The table and --tsv add a column per kind found (soft_KIND
in --tsv), --json "soft_failures" {KIND: answers} in every group that has
any; a
conversation counts once per kind any of its turns has; to-train --strict
drops the records that have any (lib/softfail owns the rules, for both).
The rules, token ids where the record has them (output_ids), text where not:
  marker_leak         "<think>" or "</think>" in the content or the reasoning
                      (the reasoning: the "reasoning" field, else the text up
                      to its first "</think>"; SpecForge's
                      validate_regenerated_data.py --strict-think-markers)
  empty_reasoning     "thinking": true and the reasoning empty or blank
                      (SpecForge --expect-reasoning)
  reasoning_when_off  "thinking": false and reasoning there anyway (SpecForge
                      --expect-non-reasoning)
  bad_tool_call       a tool_calls entry without a function name or whose
                      arguments are not a JSON object; a tool-call section in
                      the text not closed (<|tool_calls_section_begin|>,
                      <tool_call>) or whose <tool_call> body is not JSON
  no_end_token        finish_reason stop, and the last output id is not an end
                      token: the id the server says it matched
                      (native_finish_reason.matched), gen.params.stop_token_ids
                      or --end-id (not checked when none is known, or the
                      server matched a stop string)
  repetition          finish_reason length, and the last max({{.MinLoop}}, {{.LoopRepeats}}p) tokens
                      repeat with a period p of at most {{.MaxPeriod}} (output ids, else
                      the text's words): a loop that ran to max_tokens
  empty               a "text" with no content (blank after the reasoning) and
                      no tool call, in an answer not cut at its limit
--total prints only the total token count, one integer, by the fastest path
(no percentiles, no id set). --hist adds a histogram of completion lengths to
the table, in log-spaced buckets; its bars are block characters, or "#" when
NO_COLOR is set or TERM is dumb.

A job at a glance: given folders instead of files, tokstat finds every
dataset under them (a folder with status.json, written by generate
--status-file and scripts/run-dataset.sh, or status.shard-K-of-N.json, or
only an out.jsonl) and prints the whole job on one screen: per dataset its
state (running, finished, stopped by a signal, failed; died when the status says running but its
process is gone, stale when a run on another host has not rewritten it for
{{.StaleIntervals}} intervals and {{.StaleGrace}}; complete when the status is not finished but
the output, written after it, answers every prompt; no status), records ok of the total, errors,
soft failures, retries (errors and retries of the latest run), tokens against the
budget (earlier runs' included), the ETA and how old the status file is.
Records (of the prompts in DATASET/prompts.jsonl, when there), soft
failures and tokens are counted in the output files as they are now; the
state, errors, retries, budget and ETA come from the status file, which a
run rewrites once an interval (and a run without --status-file never), so
a note says when the output was written after it. Then a total
row, the count of each state, what the running datasets' servers say and how
the ended ones ended. --json prints the same as one object ("datasets",
"total"). synthpipe-status(7) describes the status file.

--html prints a report as one self-contained HTML page (styles and charts
inline as SVG, nothing fetched from the network): a table of the datasets
(the groups, as above), the mix of tokens between them, and per dataset the
histogram of completion lengths with max_tokens marked (gen.params.max_tokens
of the records), the finish reasons, the tokens against --budget, the soft
failures (answers truncated, empty, aborted or filtered; errors, duplicate
ids, invalid lines) and, for conversations (generate --turns all), the turns
per conversation and why they ended. Given folders, the page shows the whole
job: each dataset's state from its status file, its budget, and the charts
of its output.`

// helpConstants are the tuning constants the description states, formatted
// from the code that applies them.
type helpConstants struct {
	ShownInvalid, StaleIntervals, StaleGrace string
	MinLoop, LoopRepeats, MaxPeriod          int
}

// description is tokstat's --help text, with its constants filled in.
func description() string {
	return cliutil.FillHelp("tokstat", descriptionText, helpConstants{
		ShownInvalid:   cliutil.Word(cliutil.ShownInvalid),
		StaleIntervals: cliutil.Word(staleIntervals),
		StaleGrace:     aDuration(staleGrace),
		MinLoop:        softfail.MinLoop,
		LoopRepeats:    softfail.LoopRepeats,
		MaxPeriod:      softfail.MaxPeriod,
	})
}

// aDuration is a duration as the help writes it: a minute is "a minute".
func aDuration(d time.Duration) string {
	if d == time.Minute {
		return "a minute"
	}
	return d.String()
}

// NewApp returns a fresh tokstat command.
func NewApp() *cliutil.App {
	cfg := new(config)
	return cliutil.NewApp(cliutil.Spec{
		Name:        "tokstat",
		Usage:       "count the records and tokens of a JSONL dataset and check its health",
		ArgsUsage:   "[FILE...] | DIR...",
		Description: description(),
		Flags:       flags(cfg),
		Environment: []cliutil.EnvVar{
			{Name: "NO_COLOR", Meaning: "when set and not empty, --hist draws its bars with \"#\""},
			{Name: "TERM", Meaning: "when \"dumb\", --hist draws its bars with \"#\""},
		},
		ExitCodes: []cliutil.ExitStatus{
			{Code: 65, Meaning: "never for a bad line (tokstat counts and skips those); only for a damaged compressed file"},
		},
		Examples: []cliutil.Example{
			{Comment: "the health of a dataset, per source dataset, with a histogram of answer lengths",
				Command: "tokstat --by dataset --hist out.jsonl"},
			{Comment: "what a trainer with sequence length 2048 (SpecForge's default max_length) cuts off the answers paid for",
				Command: "tokstat --max-train-length 2048 out.jsonl"},
			{Comment: "how many tokens are done, for a script",
				Command: `spent=$(tokstat --total out.jsonl) && echo "$spent tokens so far"`},
			{Comment: "every dataset of a fanout.sh job or a Slurm job array (scripts/slurm/) on one screen, refreshed every 10s",
				Command: "watch -n 10 tokstat data/"},
			{Comment: "a report with charts of a whole job, to open in a browser",
				Command: "tokstat --html data/ > report.html"},
			{Comment: "progress of several shards against a 10M budget each, as JSON",
				Command: "tokstat --json --budget 10M out-*.jsonl.zst | jq '.groups[] | {group, percent: .budget.percent}'"},
		},
		SeeAlso: []string{"budget-cut(1)", "dedupe-resume(1)", "generate(1)", "synthpipe-records(7)", "synthpipe-status(7)"},
		Action:  func(c *cli.Context) error { return run(c, cfg) },
		// At the end of a pipeline: on Ctrl-C it writes what the stages before
		// it still send (generate drains its answers in flight).
		FinishPipedInput: true,
	})
}

// flags lists tokstat's options, each bound to its field of cfg and
// checked where it is declared; what depends on several flags is checked
// by cfg.check.
func flags(cfg *config) []cli.Flag {
	return append(groupFlags(cfg), reportFlags(cfg)...)
}

// groupFlags are the options for the groups and what each is measured
// against: a budget, a training length.
func groupFlags(cfg *config) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: flagBy, EnvVars: []string{cliutil.EnvName(flagBy)}, Destination: &cfg.by,
			Usage: "group by the value at this gjson `PATH` (e.g. dataset, meta.source)"},
		&cli.StringFlag{Name: flagBudget, Usage: "show used, left and percent of a budget of `N` tokens per group (250k, 10M, 1.5G); the total row stands against the sum of the groups' budgets; 0 is refused with 64, as in every tool",
			Action: func(_ *cli.Context, s string) (err error) {
				cfg.budget, err = cliutil.ParseBudget(flagBudget, s, "for no budget, leave --"+flagBudget+" out")
				cfg.hasBudget = err == nil
				return err
			}},
		&cli.StringFlag{Name: flagMaxTrainLength, Usage: cliutil.MaxTrainLengthUsage,
			Action: func(_ *cli.Context, s string) (err error) {
				cfg.maxTrainLength, err = cliutil.ParseMaxTrainLength(flagMaxTrainLength, s)
				return err
			}},
	}
}

// reportFlags are the options for what the report shows and how it is
// printed, and for what counts as an end token or a duplicate.
func reportFlags(cfg *config) []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: flagHist, Destination: &cfg.hist, Usage: "add a histogram of the completion lengths of all answers to the table"},
		&cli.BoolFlag{Name: flagJSON, Destination: &cfg.outputs.json, Usage: "print one JSON object instead of the table"},
		&cli.BoolFlag{Name: flagTSV, Destination: &cfg.outputs.tsv, Usage: "print tab-separated values instead of the table"},
		&cli.BoolFlag{Name: flagHTML, Destination: &cfg.outputs.html, Usage: "print one self-contained HTML page with charts instead of the table (redirect it to a file)"},
		&cli.BoolFlag{Name: flagTotal, Destination: &cfg.outputs.total, Usage: "print only the total token count (fastest)"},
		&cli.IntSliceFlag{Name: flagEndID, Usage: "the model's end token `ID` (repeatable), for the no_end_token rule where the records do not say which id ended them",
			Action: func(_ *cli.Context, ids []int) error { cfg.endIDs = ids; return nil }},
		&cli.BoolFlag{Name: flagDupAcross, Destination: &cfg.dupAcross, Usage: "with --by, count an id seen in another group as a duplicate too (by default each group's ids are its own)"},
		cliutil.IDPathFlag(),
		cliutil.MaxLineFlag(),
	}
}

// Main runs tokstat and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliutil.Main(NewApp(), args, stdin, stdout, stderr)
}
