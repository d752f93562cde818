// Package tokenizeprompts is the tokenize-prompts tool: it reads prompts in
// the common dataset shapes (OpenAI messages, ShareGPT, SpecForge, prompt,
// Alpaca, rendered text), renders each conversation with the model's chat
// template and writes the prompt's token ids, so that every later stage
// counts tokens exactly as the model will.
package tokenizeprompts

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/flaggroup"
	"github.com/synthpipe/synthpipe/lib/shuffle"
	"github.com/synthpipe/synthpipe/lib/thinking"
)

const (
	flagSystem            = "system"
	flagNoSpecial         = "no-special"
	flagKeepLastAssistant = "keep-last-assistant"
	flagTurns             = "turns"
	flagMessagesPath      = "messages-path"
	flagMaxPromptTokens   = "max-prompt-tokens"
	flagTruncate          = "truncate"
	flagIDPrefix          = "id-prefix"
	flagLimit             = "limit"
	flagJobs              = "jobs"
	flagShuffle           = "shuffle"
	flagShuffleMemory     = "shuffle-memory"
	flagWithText          = "with-text"
	flagDataset           = "dataset"
)

// descriptionText is tokenize-prompts' --help text; {{.Name}} is a constant
// of helpConstants.
const descriptionText = `tokenize-prompts reads prompt records (files, or stdin when none or "-";
gzip and zstd are read transparently), renders each conversation with the chat
template and tokenizer of --tokenizer, with the generation prompt, and writes
one record per prompt: id, messages, tools (when present), input_ids and
prompt_tokens, followed by every other field of the source record (a
"dataset" or "source" field passes through). Output order is input order,
whatever -j.

The shape is found per record, the first present winning: --messages-path;
"messages" (OpenAI: role and content; tool_calls, tool_call_id, name,
reasoning_content and any other member of a turn are kept as they are, for
the template); "conversations" with from/value (ShareGPT: human, gpt,
system, tool, function_call, observation; a top-level "system" too) or with
role/content (SpecForge); "prompt" with an optional "system"; "instruction"
with optional "input", "output", "system" and "history" (Alpaca: the request
is the instruction, then a blank line and the input when the input is not
empty); "text", a prompt already rendered. The fields a shape is read from
(messages, conversations, prompt, instruction, input, output, history, text,
and system where the shape reads it) are not copied: "messages" replaces them.
Nor are the answer's fields of the record contract (output_ids,
completion_tokens, text, reasoning, tool_calls, finish_reason, usage, gen,
error), so that an earlier output can be read again as prompts without a
stale completion counting against a budget.
A list of content parts becomes the string of its text parts joined with a
newline; other parts (images, audio) are refused. "tools" may be an OpenAI
array or a string holding one; bare function schemas are wrapped as
{"type":"function","function":...}.

The conversation ends at its last user or tool turn: what follows (the answer
being generated again) is dropped, unless --keep-last-assistant, which keeps
the conversation whole and renders a final assistant turn without the
generation prompt (the training layout, for counting). --system adds a system
message to conversations that have none.

A conversation is rendered with the chat template and the text encoded with
special-token strings recognised, as transformers'
apply_chat_template(tokenize=True) does: no BOS or EOS is added beyond what the
template writes, and special-token strings inside messages are recognised too.
A "text" record is already rendered and is tokenized as it is, under any
--template (no BOS added); --no-special makes special-token strings in it plain
text. --template none refuses conversations: every record must be "text".

A record's id is the value at --id-path: a string is kept, a number becomes its
decimal string (7 becomes "7"). A record without one (or with null or "") gets
--id-prefix followed by the first 16 hex digits of the SHA-256 of its prompt as
canonical JSON: {"messages":[...],"tools":[...]} (or {"text":...}) with object
keys sorted, no spaces and no HTML escaping, taken after --system and after the
dropped answer. The same prompt gets the same id on every run and machine,
whatever template renders it; identical prompts share an id.

--tokenizer builtin:kimi-k2.5 uses the Kimi-K2.5 tokenizer and chat template
bundled in the binary (modified MIT licence, see lib/bundle/LICENSES.md), so
that a fresh checkout runs without downloading anything.

Prompts longer than --max-prompt-tokens are dropped and counted, or cut to
that many ids with --truncate (left keeps the end, right keeps the start; the
messages are left whole). A summary goes to stderr unless -q: records written,
dropped and why, prompt tokens, the longest prompt.

Tools reach the template as --tool-declaration says. Kimi-K2.5's tokenizer
does not hand its template the tools as given: it sorts every object's keys,
recursively, and writes the tools as a TypeScript namespace in the variable
tools_ts_str, which the template prints (the sorted tools as compact JSON when
a schema is beyond that encoder, e.g. oneOf). SGLang and vLLM serve the model
through that code. With auto, the default, tools are so declared when the chat
template reads tools_ts_str (Kimi-K2.5's does; Kimi-K2's and K2-Thinking's do
not), and passed as given otherwise. --with-text writes the rendered prompt as
prompt_text, to diff against another pipeline's rendering.

--thinking renders each conversation with thinking on or off and writes the
setting on the record as "thinking": true or false (with effort levels, also
"reasoning_effort"), which generate and to-train then follow. on and off are
every record; mix:P turns thinking on for a share P of them, chosen per
record by the first 8 bytes of SHA-256 of "synthpipe-thinking", NUL,
--thinking-seed, NUL and the id, read as a fraction of 2^64 (on when below
P): every tool and every rerun with the same seed chooses the same. The
setting reaches the template as the variables thinking and enable_thinking
(Kimi-K2.5 and DeepSeek read the first, Qwen3 the second);
effort:low=1,medium=2,high=1 picks a reasoning_effort level per record by
weight instead (gpt-oss), the same hash choosing. A "text" record is
already rendered and gets no setting. A draft trained only on answers with
thinking on does poorly with it off: mix:P gives it both.

--shuffle SEED writes the records in a seeded order instead of the input's:
by the first 8 bytes of SHA-256 of "synthpipe-shuffle", NUL, SEED, NUL and
the id (input order among equal ids). Source datasets are often sorted by
topic or source, and a budget downstream (budget-cut, generate
--token-budget) keeps what arrives first: a 10M budget over a 17M dataset
sorted by topic drops whole topics. Shuffled, what the budget keeps is a
random sample of every topic, the same sample on every rerun and from any
input order, so a resumed run (dedupe-resume) continues the same sample;
tokstat --by FIELD shows the mix it kept. The order is known only once the
whole input is read: nothing is written before then, and nothing after a
failure or a signal. Memory: the records are held up to --shuffle-memory
({{.ShuffleMemory}}; each record costs its bytes plus about {{.RecordOverhead}}), and past it are sorted
and written to temporary files in $TMPDIR, unlinked at once (they need as
much disk as the output), and merged at the end. With --limit N, the first
N of the order are written: a seeded random sample.`

// helpConstants are the tuning constants the description states, formatted
// from the code that applies them.
type helpConstants struct {
	ShuffleMemory  string
	RecordOverhead int
}

// description is tokenize-prompts' --help text, with its constants filled in.
func description() string {
	return cliutil.FillHelp("tokenize-prompts", descriptionText, helpConstants{
		ShuffleMemory:  cliutil.ByteSize(defaultShuffleMemory),
		RecordOverhead: shuffle.RecordOverhead,
	})
}

// NewApp returns a fresh tokenize-prompts command.
func NewApp() *cliutil.App {
	cfg := new(config)
	return cliutil.NewApp(cliutil.Spec{
		Name:        "tokenize-prompts",
		Usage:       "render prompts with a chat template and write their token ids",
		ArgsUsage:   "[FILE...]",
		Description: description(),
		Flags:       flags(cfg),
		ExitCodes: []cliutil.ExitStatus{
			{Code: 65, Meaning: "invalid input data: a record in no known shape, a bad message, a template error; the message names the file and line (--skip-invalid counts and skips such records, naming the first " + cliutil.Word(cliutil.ShownInvalid) + " on stderr)"},
			{Code: 66, Meaning: "an input file, the tokenizer or the template file does not exist or cannot be read"},
		},
		Examples: []cliutil.Example{
			{Comment: "tokenize the bundled sample prompts with the bundled Kimi-K2.5 tokenizer",
				Command: "tokenize-prompts --tokenizer builtin:kimi-k2.5 lib/bundle/prompts/chat.jsonl.zst | head -c 600"},
			{Comment: "the whole pipeline, resumable, with thinking off and long prompts dropped",
				Command: "tokenize-prompts --tokenizer ~/models/Qwen3-8B --template-arg enable_thinking=false --max-prompt-tokens 8k prompts.jsonl | dedupe-resume --done out.jsonl | generate --url URL --token-budget 10M --already out.jsonl | budget-cut --tokens 10M -o out.jsonl --append"},
			{Comment: "30% of the prompts with thinking on, the same 30% on every rerun, for a draft that serves both modes",
				Command: "tokenize-prompts --tokenizer builtin:kimi-k2.5 --thinking mix:0.3 prompts.jsonl | generate --url URL > out.jsonl"},
			{Comment: "a fair sample under a budget: every topic of a dataset sorted by topic, the same sample on every rerun; tokstat shows the mix kept",
				Command: "tokenize-prompts --tokenizer DIR --shuffle 1 p.jsonl | dedupe-resume --done out.jsonl | generate --url URL --token-budget 10M --already out.jsonl | budget-cut --tokens 10M -o out.jsonl --append; tokstat --by topic out.jsonl"},
			{Comment: "the prompts as rendered, to diff against a Python pipeline's apply_chat_template",
				Command: "tokenize-prompts --tokenizer ~/models/Kimi-K2.5 --with-text tools.jsonl | jq -r .prompt_text > ours.txt"},
			{Comment: "one output per dataset with GNU parallel ({/..}: the name without .jsonl.zst)",
				Command: "parallel --plus 'tokenize-prompts -q --tokenizer DIR {} > {/..}.tok.jsonl' ::: data/*.jsonl.zst"},
			{Comment: "from cron: tokenize the day's prompts with the template date fixed",
				Command: "0 2 * * * SYNTHPIPE_TOKENIZER=/models/kimi tokenize-prompts -q --date 2026-01-01 /data/prompts.jsonl > /data/req.jsonl"},
		},
		SeeAlso: []string{"dedupe-resume(1)", "generate(1)", "budget-cut(1)", "synthpipe-records(7)"},
		Action:  func(c *cli.Context) error { return run(c, cfg) },
	})
}

// flags lists tokenize-prompts' options, each bound to its field of cfg
// and checked where it is declared; what depends on several flags is
// checked by cfg.check.
func flags(cfg *config) []cli.Flag {
	all := flaggroup.TemplateFlags(&cfg.template, "required")
	all = append(all, shapeFlags(cfg)...)
	return append(all, outputFlags(cfg)...)
}

// shapeFlags are the options for what is read of a record and how it is
// rendered.
func shapeFlags(cfg *config) []cli.Flag {
	cv := &cfg.convert
	cv.parseSpecial = true
	return []cli.Flag{
		&cli.StringFlag{Name: flagSystem, Destination: &cv.shape.system, Usage: "system prompt `TEXT` for conversations that have none"},
		&cli.BoolFlag{Name: flagWithText, Destination: &cv.withText, Usage: "add the rendered prompt, the text input_ids encode, to each record as prompt_text (to compare with another renderer)"},
		&cli.BoolFlag{Name: flagNoSpecial, Usage: "special-token strings in \"text\" records are plain text (chat templates' output is always read with them recognised)",
			Action: func(_ *cli.Context, plain bool) error { cv.parseSpecial = !plain; return nil }},
		&cli.BoolFlag{Name: flagKeepLastAssistant, Destination: &cv.shape.keepLastAssistant, Usage: "keep the turns after the last user or tool turn (rendered without the generation prompt)"},
		&cli.StringFlag{Name: flagTurns, Value: turnsLast, EnvVars: cliutil.EnvVars(flagTurns),
			Usage: "`WHICH` assistant turns generate is to write: last (the prompt is the conversation up to its last user or tool turn) or all " +
				"(the whole source conversation is kept in messages for generate --turns all, input_ids is its first turn's prompt, conversation_turns how many turns it asks for)",
			Action: func(_ *cli.Context, s string) error {
				if s != turnsLast && s != turnsAll {
					return cliutil.Usagef("--%s %q: want last or all", flagTurns, s)
				}
				cv.shape.turnsAll = s == turnsAll
				return nil
			}},
		&cli.StringFlag{Name: flagMessagesPath, Destination: &cv.shape.messagesPath, Usage: "gjson `PATH` of the messages in records of another shape (role/content or from/value turns); records without it are read as usual"},
		&cli.StringFlag{Name: flagMaxPromptTokens, EnvVars: cliutil.EnvVars(flagMaxPromptTokens), Action: countAction(flagMaxPromptTokens, &cfg.maxTokens),
			Usage: "drop (or --truncate) prompts longer than `N` tokens (4k, 32768; default: no limit)"},
		&cli.StringFlag{Name: flagTruncate, Destination: &cv.truncate,
			Usage: "cut prompts over --max-prompt-tokens instead of dropping them, keeping the `SIDE`: left (keeps the end) or right (keeps the start)",
			Action: func(_ *cli.Context, s string) error {
				if s != "" && s != truncateLeft && s != truncateRight {
					return cliutil.Usagef("--%s %q: must be left or right", flagTruncate, s)
				}
				return nil
			}},
		thinking.Flags()[0], thinking.Flags()[1],
	}
}

// outputFlags are the options for the records written: their ids, their
// number and order, and the workers.
func outputFlags(cfg *config) []cli.Flag {
	cfg.shuffleMemory = defaultShuffleMemory
	return []cli.Flag{
		cliutil.IDPathFlag(),
		&cli.StringFlag{Name: flagDataset, Destination: &cfg.convert.dataset, Usage: "write `NAME` as dataset on every record (replacing the source's), so that tokstat and estimate --by dataset count it with its dataset wherever it goes; run-dataset.sh gives the dataset's folder name"},
		&cli.StringFlag{Name: flagIDPrefix, Destination: &cfg.convert.idPrefix, Usage: "`PREFIX` of the ids derived for records that have none"},
		&cli.StringFlag{Name: flagLimit, Action: countAction(flagLimit, &cfg.limit), Usage: "stop after writing `N` records (with --shuffle: the first N of the shuffled order, a seeded random sample)"},
		&cli.StringFlag{Name: flagShuffle, EnvVars: cliutil.EnvVars(flagShuffle),
			Usage: "write the records in the order of SHA-256(\"synthpipe-shuffle\" NUL `SEED` NUL id), the same on every run from any input order, so that a budget downstream keeps a fair sample of every topic (output starts once the input is read)",
			Action: func(_ *cli.Context, seed string) error {
				if cfg.shuffle, cfg.shuffleSeed = true, seed; seed == "" {
					return cliutil.Usagef("--%s needs a SEED (any word or number: 1, 2026-06): the same seed gives the same order", flagShuffle)
				}
				return nil
			}},
		&cli.StringFlag{Name: flagShuffleMemory, Value: cliutil.ByteSize(defaultShuffleMemory), EnvVars: cliutil.EnvVars(flagShuffleMemory),
			Usage: "with --shuffle: hold at most `SIZE` of records in memory; beyond it, sorted runs go to unlinked files in $TMPDIR (as much disk as the output) and are merged at the end",
			Action: func(_ *cli.Context, s string) (err error) {
				if cfg.shuffleMemory, err = cliutil.ParseCount(s); err != nil || cfg.shuffleMemory < minShuffleMemory {
					return cliutil.Usagef("--%s %q: want a size in bytes of at least %s (%s, 4Gi)", flagShuffleMemory, s, cliutil.ByteSize(minShuffleMemory), cliutil.ByteSize(defaultShuffleMemory))
				}
				return nil
			}},
		&cli.IntFlag{Name: flagJobs, Aliases: []string{"j"}, DefaultText: "one per CPU", Destination: &cfg.jobs, Usage: "tokenize with `N` workers (0: one per CPU)",
			Action: func(_ *cli.Context, n int) error {
				if n < 0 {
					return cliutil.Usagef("--%s %d: must be 0 (one per CPU) or more", flagJobs, n)
				}
				return nil
			}},
		cliutil.QuietFlag(),
		cliutil.MaxLineFlag(),
		cliutil.SkipInvalidFlag(),
	}
}

// Main runs tokenize-prompts and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliutil.Main(NewApp(), args, stdin, stdout, stderr)
}
