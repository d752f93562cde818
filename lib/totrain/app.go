// Package totrain is the to-train tool: it turns generate's output into
// training data for a draft model, as SpecForge conversations or as token
// ids with a loss mask.
package totrain

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/flaggroup"
)

const (
	flagFormat        = "format"
	flagKeepTruncated = "keep-truncated"
	flagStrict        = "strict"
	flagOutput        = "output"
	flagShow          = "show"
	flagDraftVocab    = "draft-vocab"
	flagDraftVocabOut = "draft-vocab-out"
	flagTargetVocab   = "target-vocab"
)

// description is to-train's --help text.
const description = `to-train reads generate's output and writes one training sample per record.

--format specforge writes {"id", "conversations", "tools"}: the prompt's
messages followed by the generated answer as the last assistant turn, with its
reasoning as reasoning_content and again as thinking (chat templates read one
name or the other: Qwen3, DeepSeek and Kimi the first, gpt-oss the second) and
its tool calls as tool_calls, the way SpecForge reads them.

--format tokens writes {"id", "input_ids", "loss_mask"}: the whole
conversation as the model sees it, with loss on the generated answer only.
Where a record holds both input_ids and output_ids (SGLang's native backend,
or generate --tokenizer) they are joined as they are, never re-tokenized.
Otherwise the conversation with the answer is rendered through the model's
chat template and tokenized (--tokenizer is then required); the answer is
everything the template renders after the generation prompt, end-of-turn
tokens included.

Each record is rendered with the thinking setting it was generated with
("thinking", and "reasoning_effort" with effort levels: tokenize-prompts and
generate --thinking write them), through the template variables thinking
and enable_thinking, or reasoning_effort; --format specforge writes the
setting on the sample for the trainer's template. A record that carries no
setting, rendered by a template that reads one of those variables, is
refused (exit 65, or counted with --skip-invalid): it may have been
generated either way, and an answer made without thinking trained as if
with it teaches the draft the wrong thing. When a whole input was made one
way, --template-arg enable_thinking=false (or thinking=..., or
reasoning_effort=...) says so; a --template-arg that contradicts a record's
own setting refuses that record.

Tools reach the template as --tool-declaration says, as in tokenize-prompts:
give both the same value, so that a sample's prompt is the prompt that was
generated from (for Kimi-K2.5, the TypeScript declaration its tokenizer
writes).

--format turns writes {"id", "turn", "input_ids", "loss_mask"} for each turn
of a regenerated conversation: the exact prompt generate sent for that turn
(the conversation so far rendered again with --tokenizer, checked against
the length generate sent and, for the first turn, against the record's
input_ids) followed by the turn's exact output_ids, with the loss on the
output (speculators' layout: a trainer learns from exactly what the model
produced). A record of one answer is one turn, written as --format tokens
writes it.

A regenerated conversation (generate --turns all) gives every regenerated
assistant turn: --format specforge writes its whole conversation, each
assistant turn with its reasoning as reasoning_content; --format tokens
renders that conversation through the chat template as a trainer does, with
the loss on every assistant turn (--tokenizer required); --format turns
writes a sample per turn. A last turn cut at the token limit is dropped
unless --keep-truncated; the turns before it are kept.

Records that carry an error are skipped, and so are truncated answers
(finish_reason length) unless --keep-truncated; the summary counts both.

--show N (the first N samples) or --show ID (repeatable: --show a --show b)
prints samples as the trainer will see them instead of writing them: the
text of the tokens, special tokens as they are spelled (<|im_end|>), the
trained spans marked, then each span's token count. On a terminal the
trained text is green and special tokens are bold; with NO_COLOR set, TERM
dumb, or stdout not a terminal, trained spans are put between [[ and ]].
--format tokens shows the sample's input_ids and loss_mask as written;
--format specforge shows the conversation rendered by the chat template as a
trainer renders it, trained on every assistant turn (from the end of its
generation prompt to the end of the turn); --format turns shows each turn
of a conversation (headed "ID turn N"), the prompt sent and its output
trained, and --show ID shows every turn of that conversation. All need
--tokenizer. Ids that
no sample has (no such record, or a record skipped above) are named on
stderr.

The draft's vocabulary. An EAGLE-3 draft predicts over a reduced vocabulary
chosen by token frequency in its training data. --draft-vocab N (with
--format tokens) counts the loss-masked tokens of the samples written and
writes the mapping to --draft-vocab-out FILE as JSON: draft_vocab_size,
target_vocab_size, d2t (draft id i is target id i + d2t[i]), t2d (a boolean
per target id) and counts ([id, count] pairs, in the order first seen). It is
SpecForge's choice (generate_vocab_mapping_file and
process_token_dict_to_mappings) on the same samples in the same order: the N
most frequent tokens, ties going to the token seen first (within a sample,
the lower id); with fewer than N distinct tokens, the lowest ids below N not
seen are added with count 0. The target's size is --target-vocab, or
vocab_size in the config.json of --tokenizer DIR (t2d must be as long as the
model's embedding, often longer than the tokenizer). The file is written
whole when the run ends. SpecForge loads a .pt made from it by

  python3 -c 'import json,sys,torch; m=json.load(open(sys.argv[1])); torch.save({"d2t": torch.tensor(m["d2t"]), "t2d": torch.tensor(m["t2d"])}, sys.argv[2])' vocab.json vocab.pt

(a SpecForge draft model reads it with load_vocab_mapping(PATH); the
training scripts that have --vocab-mapping-path take it there).`

// NewApp returns a fresh to-train command.
func NewApp() *cliutil.App {
	cfg := new(config)
	return cliutil.NewApp(cliutil.Spec{
		Name:        "to-train",
		Usage:       "turn generated records into training data (SpecForge conversations or token ids with a loss mask)",
		ArgsUsage:   "[FILE...]",
		Description: description,
		Flags:       flags(cfg),
		Environment: []cliutil.EnvVar{
			{Name: "NO_COLOR", Meaning: "when set and not empty, --show marks trained spans with [[ ]] instead of colours"},
			{Name: "TERM", Meaning: "when \"dumb\", --show marks trained spans with [[ ]] instead of colours"},
		},
		Examples: []cliutil.Example{
			{Comment: "SpecForge training data from a finished run", Command: "to-train --format specforge out.jsonl > train.jsonl"},
			{Comment: "token ids and loss masks, keeping truncated answers", Command: "to-train --format tokens --keep-truncated out.jsonl.zst > train-tokens.jsonl"},
			{Comment: "one sample per regenerated turn: the exact prompt sent and the exact answer", Command: "to-train --format turns --tokenizer ./Kimi-K2.5 conversations.jsonl > train-turns.jsonl"},
			{Comment: "OpenRouter output (text only) through the model's template", Command: "to-train --format tokens --tokenizer ./Kimi-K2.5 --template-arg thinking=true openrouter.jsonl > train-tokens.jsonl"},
			{Comment: "the first 3 samples as the trainer sees them, trained spans marked", Command: "to-train --format tokens --tokenizer ./Kimi-K2.5 --show 3 out.jsonl"},
			{Comment: "token ids and a 32k-token draft vocabulary chosen from their answers", Command: "to-train --format tokens --tokenizer ./Kimi-K2.5 --template-arg thinking=true --draft-vocab 32000 --draft-vocab-out vocab.json out.jsonl > train-tokens.jsonl"},
		},
		SeeAlso: []string{"generate(1)", "tokenize-prompts(1)", "tokstat(1)", "synthpipe-records(7)"},
		Action:  func(c *cli.Context) error { return run(c, cfg) },
		// At the end of a pipeline: on Ctrl-C it writes what the stages before
		// it still send (generate drains its answers in flight).
		FinishPipedInput: true,
	})
}

// flags lists to-train's options, each bound to its field of cfg and
// checked where it is declared; what depends on several flags is checked
// by cfg.check.
func flags(cfg *config) []cli.Flag {
	all := []cli.Flag{
		&cli.StringFlag{Name: flagFormat, Aliases: []string{"f"}, Value: formatSpecForge, Destination: &cfg.format, Usage: "output `FORMAT`: specforge, tokens or turns",
			Action: func(_ *cli.Context, f string) error { return checkFormat(f) }},
	}
	all = append(all, flaggroup.TemplateFlags(&cfg.template, "for --format tokens and turns on records without token ids, --show and --draft-vocab's target size")...)
	all = append(all, sampleFlags(cfg)...)
	return append(all, outputFlags(cfg)...)
}

// sampleFlags are the options for which records become samples.
func sampleFlags(cfg *config) []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: flagKeepTruncated, Destination: &cfg.keepTruncated, Usage: "keep answers cut at the token limit (finish_reason length)"},
		&cli.BoolFlag{Name: flagStrict, Destination: &cfg.strict, Usage: "drop the records with soft failures (reasoning markers in the content, empty reasoning where thinking was on, a tool call that does not parse, no end token, a loop to max_tokens, an empty answer: the rules of tokstat(1)); without it they are kept and counted in a warning"},
	}
}

// outputFlags are the options for where the samples go: a file, the
// viewer, and the draft vocabulary counted from them.
func outputFlags(cfg *config) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: flagOutput, Aliases: []string{"o"}, Destination: &cfg.output, Usage: "write to `FILE` instead of stdout"},
		&cli.StringSliceFlag{Name: flagShow, Usage: "print the first `N` samples, or the samples of these ids (repeatable), with the trained spans marked, instead of writing them (needs --tokenizer)",
			Action: func(_ *cli.Context, values []string) (err error) {
				cfg.show, err = parseShow(values)
				return err
			}},
		&cli.IntFlag{Name: flagDraftVocab, Destination: &cfg.draftVocab, Usage: "count the loss-masked tokens written and choose an EAGLE-3 draft vocabulary of `N` tokens, as SpecForge does (needs --format tokens and --draft-vocab-out)"},
		&cli.StringFlag{Name: flagDraftVocabOut, Destination: &cfg.draftVocabOut, Usage: "write the --draft-vocab mapping to `FILE` as JSON (draft_vocab_size, target_vocab_size, d2t, t2d, counts), once the run succeeds"},
		&cli.IntFlag{Name: flagTargetVocab, Destination: &cfg.targetVocab, Usage: "the target model's vocabulary size `N` for --draft-vocab (default: vocab_size in --tokenizer DIR's config.json)"},
		cliutil.IDPathFlag(),
		cliutil.QuietFlag(),
		cliutil.MaxLineFlag(),
		cliutil.SkipInvalidFlag(),
	}
}

// Main runs to-train and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliutil.Main(NewApp(), args, stdin, stdout, stderr)
}
