// Package deduperesume is the dedupe-resume tool: it drops the records whose
// id is already done (found in earlier outputs) or already seen in this
// stream, so that a pipeline re-run after a crash, a kill or a cron restart
// does only the work that is left, and does it once.
package deduperesume

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/idset"
	"github.com/synthpipe/synthpipe/lib/record"
)

const (
	flagDone        = "done"
	flagRetryErrors = "retry-errors"
	flagShard       = "shard"
	flagSamples     = "samples"
	flagSameParams  = "require-same-params"
)

// descriptionText is dedupe-resume's --help text; {{.IDOverhead}} is
// idset.IDOverhead.
const descriptionText = `dedupe-resume reads records (files, or stdin when none or "-"; gzip and zstd
are read transparently) and passes unchanged those still to do: a record is
dropped when its id is in one of the --done files (earlier outputs, read whole
before the first record passes) or appeared earlier in this stream. Ids are
compared exactly, never by hash alone, so no undone record is ever skipped.

A --done file that does not exist yet is the first run of a resumable
pipeline: it counts as empty, and a note says so (unless -q). A --done path
that is a directory or cannot be read is an error. A torn last line in a done
file (its writer was killed mid-record) is ignored with a warning: that record
is not done and passes again. With --retry-errors, done records that carry an
"error" member (not null), such as the lines of generate's --errors file, do
not count as done.

--shard K/N keeps only the ids of shard K (0-based) of N, so that N machines
given the same input take disjoint work whose outputs simply concatenate. An
id's shard is the FNV-1a 64-bit hash of its bytes (the decoded JSON string,
UTF-8; a lone surrogate escape as its three WTF-8 bytes) modulo N: the same
on every run, machine and version.

Each record passes as soon as it is read (output is flushed whenever the
input would block), so dedupe-resume can sit between a slow producer and
generate. Unless -q, a summary on stderr counts the records to do, already
done, repeated in the stream, skipped as other shards' and the torn lines
ignored. Done ids take about their length plus {{.IDOverhead}} bytes of memory each.

Samples. generate --samples N writes N answers per prompt, sample k under
the id ID#k (sample 1 keeps ID; see synthpipe-records(7)). With --samples N,
dedupe-resume takes a prompt as done only when all N of its samples are, and
writes each missing sample as the request generate makes of it (its id, and
"prompt_id" and "sample" added), so that a resumed run redoes exactly the
samples a stop or a failure left out, each with the seed it would have had;
the counts in the summary are samples. A record that is a sample already
(an errors file re-fed) passes as itself. With --shard a sample goes with
its prompt. Without --samples, done records that are samples past the first
are named in a warning: their prompts would count as done as soon as their
first sample is.

Provenance. The done records say in "gen" who made them (backend, model,
params: synthpipe-records(7)). dedupe-resume does not know the run it
feeds, so it compares the done records among themselves: when they were
made with more than one backend, model or set of sampling parameters
(gen.params without max_tokens, which generate caps per prompt; the
endpoint is not compared, since several servers serve one model), it says
so on stderr, once per field, with each value and how many records had it,
even with -q. --require-same-params refuses them instead: exit 65 before
any record passes. generate compares its --already files with its own
settings (generate(1), "Provenance"): the two together catch a resume with
another model, backend or sampling parameters than the output holds.`

// description is dedupe-resume's --help text, with the memory a done id
// costs filled in from the set that holds them.
func description() string {
	return cliutil.FillHelp("dedupe-resume", descriptionText, struct{ IDOverhead int }{idset.IDOverhead})
}

// NewApp returns a fresh dedupe-resume command.
func NewApp() *cliutil.App {
	cfg := new(config)
	return cliutil.NewApp(cliutil.Spec{
		Name:        "dedupe-resume",
		Usage:       "drop JSONL records that are already done or already seen",
		ArgsUsage:   "[FILE...]",
		Description: description(),
		Flags:       flags(cfg),
		Examples: []cliutil.Example{
			{Comment: "resume a run: only the prompts not yet in out.jsonl are generated",
				Command: "tokenize-prompts --tokenizer DIR p.jsonl | dedupe-resume --done out.jsonl | generate --url URL --token-budget 10M --already out.jsonl | budget-cut --tokens 10M -o out.jsonl --append"},
			{Comment: "four client machines, each its own quarter of the prompts (GNU parallel fan-out); cat out-*.jsonl is the whole",
				Command: "parallel --sshlogin 1/m1,1/m2,1/m3,1/m4 --workdir /data/run 'dedupe-resume --shard {}/4 --done out-{}.jsonl req.jsonl | generate --url URL >> out-{}.jsonl' ::: 0 1 2 3"},
			{Comment: "four answers per prompt, resumed sample by sample",
				Command: "tokenize-prompts --tokenizer DIR p.jsonl | dedupe-resume --samples 4 --done out.jsonl | generate --url URL --samples 4 >> out.jsonl"},
			{Comment: "from cron: retry what failed last time, every stage quiet (-q): cron mails only what fails",
				Command: "*/30 * * * * cd /data/run && dedupe-resume -q --retry-errors --done out.jsonl --done errors.jsonl req.jsonl.zst | generate -q --url URL --errors errors.jsonl >> out.jsonl"},
		},
		SeeAlso: []string{"generate(1)", "budget-cut(1)", "tokstat(1)", "synthpipe-records(7)"},
		Action:  func(c *cli.Context) error { return run(c, cfg) },
	})
}

// flags lists dedupe-resume's options, each bound to its field of cfg and
// checked where it is declared; cfg.check reads the shared ones and checks
// the files named.
func flags(cfg *config) []cli.Flag {
	cfg.samples = 1
	return []cli.Flag{
		&cli.StringSliceFlag{Name: flagDone, Aliases: []string{"d"}, EnvVars: []string{cliutil.EnvName(flagDone)},
			Usage: "ids of the records in this earlier output `FILE` are done (repeatable; .gz/.zst read; missing = empty)",
			Action: func(_ *cli.Context, files []string) error {
				cfg.done = nil
				for _, d := range files {
					switch d {
					case "":
						continue // an empty SYNTHPIPE_DONE sets no file
					case "-":
						return cliutil.Usagef("--done -: name a file (stdin is the input)")
					}
					cfg.done = append(cfg.done, d)
				}
				return nil
			}},
		&cli.BoolFlag{Name: flagRetryErrors, EnvVars: []string{cliutil.EnvName(flagRetryErrors)}, Destination: &cfg.retryErrors,
			Usage: "done records that carry an \"error\" member do not count as done: retry them"},
		&cli.StringFlag{Name: flagShard, EnvVars: []string{cliutil.EnvName(flagShard)},
			Usage: "keep only the ids of shard `K/N` (0 <= K < N): FNV-1a 64 of the id, modulo N, equals K",
			Action: func(_ *cli.Context, s string) (err error) {
				if cfg.shard, err = parseShard(s); err != nil {
					return cliutil.Usagef("%v", err)
				}
				return nil
			}},
		&cli.IntFlag{Name: flagSamples, Value: 1, EnvVars: []string{cliutil.EnvName(flagSamples)}, Destination: &cfg.samples,
			Usage: "a prompt is done when all its `N` samples are (generate --samples N): write each missing sample as its own request (id ID, ID#2 ... ID#N)",
			Action: func(_ *cli.Context, n int) error {
				if n < 1 || n > record.MaxSamples {
					return cliutil.Usagef("--%s %d: want 1 to %d samples per prompt", flagSamples, n, record.MaxSamples)
				}
				return nil
			}},
		&cli.BoolFlag{Name: flagSameParams, EnvVars: []string{cliutil.EnvName(flagSameParams)}, Destination: &cfg.sameParams,
			Usage: "refuse (exit 65) done records made with more than one backend, model or set of sampling parameters, instead of warning"},
		cliutil.IDPathFlag(),
		cliutil.QuietFlag(),
		cliutil.MaxLineFlag(),
		cliutil.SkipInvalidFlag(),
	}
}

// Main runs dedupe-resume and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliutil.Main(NewApp(), args, stdin, stdout, stderr)
}
