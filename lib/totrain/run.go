package totrain

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/draftvocab"
	"github.com/synthpipe/synthpipe/lib/flaggroup"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
	"github.com/synthpipe/synthpipe/lib/softfail"
)

// tally counts what became of the records read.
type tally struct {
	written, errors, truncated, noAnswer, noConversation, invalid int64
	// soft counts the records with soft failures (lib/softfail) by kind;
	// softRecords those records, dropped with --strict, else kept.
	soft        map[string]int64
	softRecords int64
	strict      bool
}

func run(c *cli.Context, tf *flaggroup.Template) (err error) {
	conv, err := newConverter(c, tf)
	if err != nil {
		return err
	}
	var show *showFilter
	if c.IsSet(flagShow) {
		if show, err = checkShow(c, conv); err != nil {
			return err
		}
	}
	vocab, err := parseVocabJob(c, conv.format, show != nil)
	if err != nil {
		return err
	}
	if vocab != nil {
		conv.vocab = draftvocab.NewCounter()
	}
	opt, err := cliutil.InputOptions(c)
	if err != nil {
		return err
	}
	var files jsonl.Files
	files.Inputs(c.App.Reader, c.Args().Slice())
	if c.String(flagOutput) == "" {
		files.Stdout(c.App.Writer)
	}
	files.Output("-o", c.String(flagOutput), false)
	if vocab != nil {
		files.Output("--"+flagDraftVocabOut, vocab.out, false)
	}
	if err := files.Check(); err != nil {
		return err
	}
	// Every input is checked before -o is created: a missing one must not
	// cost the file an earlier run wrote there.
	if in, err := jsonl.Open(c.App.Reader, c.Args().Slice(), opt); err != nil {
		return err
	} else {
		in.Close()
	}
	var out sampleWriter
	var viewer *showWriter
	if show != nil {
		viewer = newShowWriter(conv, show, c.App.Writer, cliutil.Streams(c).IsStdoutTTY())
		out = viewer
		defer func() {
			if ferr := out.Flush(); err == nil {
				err = ferr
			}
		}()
	} else {
		var finishOutput func(error) error
		if out, finishOutput, err = openSamples(c.String(flagOutput), conv.format, c.App.Writer, cliutil.Warner(c)); err != nil {
			return err
		}
		defer func() {
			err = finishOutput(err)
		}()
	}
	opt.BeforeRead = out.Flush
	in, err := jsonl.Open(c.App.Reader, c.Args().Slice(), opt)
	if err != nil {
		return err
	}
	defer in.Close()
	conv.strict = c.Bool(flagStrict)
	t, err := convertAll(in, conv, out, c.Bool(flagKeepTruncated))
	if err != nil {
		return err
	}
	if viewer != nil { // the samples before the summary, on a terminal showing both
		if err := viewer.Flush(); err != nil {
			return err
		}
	}
	var vocabNote string
	if vocab != nil {
		if vocabNote, err = vocab.write(conv.vocab); err != nil {
			return err
		}
	}
	if !c.Bool(cliutil.FlagQuiet) {
		if viewer != nil {
			cliutil.Notef(c.App.ErrWriter, c.App.Name, "%s", showSummary(viewer.shown, show))
			return nil
		}
		t.note(c.App.ErrWriter, c.App.Name, conv.format)
		if vocabNote != "" {
			cliutil.Notef(c.App.ErrWriter, c.App.Name, "%s", vocabNote)
		}
	}
	return nil
}

// newConverter builds the converter that the flags ask for, loading the
// tokenizer and chat template when --tokenizer is given.
func newConverter(c *cli.Context, tf *flaggroup.Template) (*converter, error) {
	conv := &converter{format: c.String(flagFormat), idPath: c.String(cliutil.FlagIDPath), templateArgs: tf.Args}
	if err := checkFormat(conv.format); err != nil {
		return nil, err
	}
	if tf.Tokenizer != "" {
		var err error
		if conv.model, err = tf.Load(); err != nil {
			return nil, err
		}
	}
	return conv, nil
}

// checkShow reads --show and checks what it needs: the tokenizer, to turn
// ids into text and to render conversations, and no -o, since it writes
// for a person, not a trainer.
func checkShow(c *cli.Context, conv *converter) (*showFilter, error) {
	show, err := parseShow(c.StringSlice(flagShow))
	if err != nil {
		return nil, err
	}
	if conv.model == nil {
		return nil, cliutil.Usagef("--show needs --tokenizer DIR (the model's folder, or builtin:kimi-k2.5): the text of the tokens and the chat template come from it")
	}
	if conv.format == formatSpecForge && conv.model.Template == nil {
		return nil, cliutil.Usagef("--show with --format specforge renders conversations with the chat template: not with --template none")
	}
	if c.String(flagOutput) != "" {
		return nil, cliutil.Usagef("--show prints samples for reading on stdout; it writes no training data, so -o does not go with it")
	}
	return show, nil
}

// convertAll converts every record read into a sample for out, and counts
// what became of them.
func convertAll(in *jsonl.Reader, conv *converter, out sampleWriter, keepTruncated bool) (tally, error) {
	scan := record.NewScanner(conv.idPath, true, "")
	t := tally{soft: map[string]int64{}, strict: conv.strict}
	conv.keepTruncated = keepTruncated
	for in.Next() {
		info, err := scan.Scan(in.Bytes())
		if err != nil {
			if err := in.Invalid(err); err != nil {
				return t, err
			}
			continue
		}
		switch {
		case info.HasError:
			t.errors++
			continue
		case info.Truncated() && !keepTruncated && info.Conversation == nil:
			// A conversation keeps its turns before the cut one.
			t.truncated++
			continue
		}
		if t.softFailed(in.Bytes()) && conv.strict {
			continue
		}
		samples, err := conv.samples(in.Bytes())
		switch {
		case errors.Is(err, errNoAnswer):
			t.noAnswer++
			continue
		case errors.Is(err, errNoConversation):
			t.noConversation++
			continue
		case errors.Is(err, errNeedsTokenizer):
			return t, cliutil.Usagef("%s: %v: --format %s needs --tokenizer DIR (the model's folder) to tokenize such answers with its chat template", in.Pos(), err, conv.format)
		}
		for _, sample := range samples {
			err = out.Write(sample)
			var invalid invalidSample
			if errors.As(err, &invalid) {
				err = invalid.err
				break
			}
			if err != nil {
				return t, err // the output failed
			}
			if conv.vocab != nil {
				conv.vocab.AddSample(conv.answer)
			}
			t.written++
		}
		if err != nil {
			if err := in.Invalid(err); err != nil {
				return t, err
			}
			continue
		}
		if d, ok := out.(interface{ Done() bool }); ok && d.Done() {
			return t, nil // --show has shown what it was asked for
		}
	}
	if err := in.Err(); err != nil {
		return t, err
	}
	// The reader's count includes the lines it skipped itself (too long).
	t.invalid = in.Stats().Invalid
	return t, nil
}

// softFailed counts the record's soft failures and reports whether it has
// any.
func (t *tally) softFailed(line []byte) bool {
	kinds := softfail.Check(line, softfail.Options{})
	for _, k := range kinds {
		t.soft[k]++
	}
	if len(kinds) > 0 {
		t.softRecords++
	}
	return len(kinds) > 0
}

// softNote says how many records had soft failures, of which kinds, and
// what became of them; "" when none had.
func (t tally) softNote() string {
	if t.softRecords == 0 {
		return ""
	}
	var kinds []string
	for _, k := range softfail.Kinds {
		if n := t.soft[k]; n > 0 {
			kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
		}
	}
	if t.strict {
		return fmt.Sprintf("dropped %s with soft failures (--%s): %s", cliutil.Count(t.softRecords, "record"), flagStrict, strings.Join(kinds, ", "))
	}
	return fmt.Sprintf("warning: kept %s with soft failures (%s; see tokstat(1)): --%s drops them", cliutil.Count(t.softRecords, "record"), strings.Join(kinds, ", "), flagStrict)
}

// note prints the summary of a run on stderr.
func (t tally) note(w io.Writer, tool, format string) {
	cliutil.Notef(w, tool, "wrote %s (%s); skipped %d with errors, %d truncated, %d without an answer, %d without messages, %d invalid",
		cliutil.Count(t.written, "sample"), format, t.errors, t.truncated, t.noAnswer, t.noConversation, t.invalid)
	if s := t.softNote(); s != "" {
		cliutil.Notef(w, tool, "%s", s)
	}
	if t.noConversation > 0 && format != formatTokens {
		// Pre-rendered "text" prompts have no turns for a conversation
		// format; their token ids still make a sample.
		cliutil.Notef(w, tool, "the %d without messages had a pre-rendered \"text\" prompt, which --format %s cannot write as turns: --format %s keeps those with output_ids (SGLang's answers) as token ids",
			t.noConversation, format, formatTokens)
	}
}

// sampleWriter is where samples go: JSONL, or a Parquet file.
type sampleWriter interface {
	Write(sample []byte) error
	Flush() error
}

// openSamples opens the output: -o FILE.parquet writes Parquet (tokens only:
// a SpecForge conversation's tool calls are free-form JSON, which a Parquet
// schema cannot hold), anything else JSONL. finish ends it, given the run's
// error, and returns the run's error or its own: a Parquet file is put in
// place only when the run succeeded.
func openSamples(path, format string, stdout io.Writer, warn func(string)) (sampleWriter, func(error) error, error) {
	if !strings.EqualFold(filepath.Ext(path), ".parquet") {
		w, finish, err := jsonl.OpenOutput(path, false, stdout, warn)
		if err != nil {
			return nil, nil, err
		}
		return w, func(err error) error {
			if ferr := finish(); err == nil {
				err = ferr
			}
			return err
		}, nil
	}
	if format != formatTokens {
		return nil, nil, cliutil.Usagef("-o %s: Parquet output is for --format tokens (SpecForge conversations carry free-form JSON tool calls): write --format %s as JSONL", path, format)
	}
	pw, err := jsonl.CreateParquet(path, tokensSchema)
	if err != nil {
		return nil, nil, err
	}
	return parquetSamples{pw}, func(err error) error {
		if err != nil {
			pw.Abandon()
			return err
		}
		return pw.Close()
	}, nil
}

// tokensSchema is --format tokens as Parquet columns.
var tokensSchema = arrow.NewSchema([]arrow.Field{
	{Name: record.FieldID, Type: arrow.BinaryTypes.String},
	{Name: record.FieldInputIDs, Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
	{Name: record.FieldLossMask, Type: arrow.ListOf(arrow.PrimitiveTypes.Int8)},
}, nil)

// parquetSamples is a Parquet file as a sampleWriter: it has nothing to
// flush (a Parquet file is readable only once whole).
type parquetSamples struct{ *jsonl.ParquetWriter }

func (parquetSamples) Flush() error { return nil }
