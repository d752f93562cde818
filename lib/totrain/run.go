package totrain

import (
	"errors"
	"io"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// tally counts what became of the records read.
type tally struct {
	written, errors, truncated, noAnswer, noConversation, invalid int64
}

func run(c *cli.Context) (err error) {
	conv := &converter{format: c.String(flagFormat), idPath: c.String(cliutil.FlagIDPath)}
	if err = checkFormat(conv.format); err != nil {
		return err
	}
	// Checked even without --tokenizer, where they would go unused: a typo
	// must not pass silently.
	if conv.templateArgs, err = chat.ParseTemplateArgs(c.StringSlice(flagTemplateArg)); err != nil {
		return err
	}
	templateClock, err := chat.ParseDate(c.String(flagDate))
	if err != nil {
		return cliutil.Usagef("--%s %v", flagDate, err)
	}
	declaration := c.String(chat.FlagToolDeclaration)
	if err := (*chat.Template)(nil).SetToolDeclaration(declaration); err != nil {
		return err
	}
	if dir := c.String(flagTokenizer); dir != "" {
		if conv.model, err = chat.Load(dir, c.String(flagTemplate), c.StringSlice(flagTemplateArg)); err != nil {
			return err
		}
		conv.model.Now = templateClock
		if err := conv.model.SetToolDeclaration(declaration); err != nil {
			return err
		}
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
	if err := files.Check(); err != nil {
		return err
	}
	out, finishOutput, err := openSamples(c.String(flagOutput), conv.format, c.App.Writer, cliutil.Warner(c))
	if err != nil {
		return err
	}
	defer func() {
		err = finishOutput(err)
	}()
	opt.BeforeRead = out.Flush
	in, err := jsonl.Open(c.App.Reader, c.Args().Slice(), opt)
	if err != nil {
		return err
	}
	defer in.Close()

	keepTruncated := c.Bool(flagKeepTruncated)
	scan := record.NewScanner(conv.idPath, true, "")
	var t tally
	var buf []byte
	for in.Next() {
		info, err := scan.Scan(in.Bytes())
		if err != nil {
			if err := in.Invalid(err); err != nil {
				return err
			}
			continue
		}
		switch {
		case info.HasError:
			t.errors++
			continue
		case info.Truncated() && !keepTruncated:
			t.truncated++
			continue
		}
		buf, err = conv.convert(buf[:0], in.Bytes())
		switch {
		case errors.Is(err, errNoAnswer):
			t.noAnswer++
			continue
		case errors.Is(err, errNoConversation):
			t.noConversation++
			continue
		case errors.Is(err, errNeedsTokenizer):
			return cliutil.Usagef("%s: %v: --format tokens needs --tokenizer DIR (the model's folder) to tokenize such answers with its chat template", in.Pos(), err)
		}
		if err != nil {
			if err := in.Invalid(err); err != nil {
				return err
			}
			continue
		}
		if err := out.Write(buf); err != nil {
			return err
		}
		t.written++
	}
	if err := in.Err(); err != nil {
		return err
	}
	// The reader's count includes the lines it skipped itself (too long).
	t.invalid = in.Stats().Invalid
	if !c.Bool(cliutil.FlagQuiet) {
		cliutil.Notef(c.App.ErrWriter, c.App.Name, "wrote %s (%s); skipped %d with errors, %d truncated, %d without an answer, %d without messages, %d invalid",
			cliutil.Count(t.written, "sample"), conv.format, t.errors, t.truncated, t.noAnswer, t.noConversation, t.invalid)
		if t.noConversation > 0 && conv.format != formatTokens {
			// Pre-rendered "text" prompts have no turns for a conversation
			// format; their token ids still make a sample.
			cliutil.Notef(c.App.ErrWriter, c.App.Name, "the %d without messages had a pre-rendered \"text\" prompt, which --format %s cannot write as turns: --format %s keeps those with output_ids (SGLang's answers) as token ids",
				t.noConversation, conv.format, formatTokens)
		}
	}
	return nil
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
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "input_ids", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
	{Name: "loss_mask", Type: arrow.ListOf(arrow.PrimitiveTypes.Int8)},
}, nil)

// parquetSamples is a Parquet file as a sampleWriter: it has nothing to
// flush (a Parquet file is readable only once whole).
type parquetSamples struct{ *jsonl.ParquetWriter }

func (parquetSamples) Flush() error { return nil }
