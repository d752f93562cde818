package totrain

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
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

func run(c *cli.Context, cfg *config) (err error) {
	if err := cfg.check(c); err != nil {
		return err
	}
	// Every input is checked before -o is created: a missing one must not
	// cost the file an earlier run wrote there.
	if in, err := jsonl.Open(c.App.Reader, c.Args().Slice(), cfg.input); err != nil {
		return err
	} else {
		in.Close()
	}
	out, finishOutput, err := cfg.openOutput(c)
	if err != nil {
		return err
	}
	defer func() {
		err = finishOutput(err)
	}()
	opt := cfg.input
	opt.BeforeRead = out.Flush
	in, err := jsonl.Open(c.App.Reader, c.Args().Slice(), opt)
	if err != nil {
		return err
	}
	defer in.Close()
	t, err := convertAll(in, cfg.conv, out)
	if err != nil {
		return err
	}
	return cfg.finish(c, t, out)
}

// openOutput opens where the samples go: the viewer of --show, or the
// output file (stdout without -o). finish ends it, given the run's error,
// and returns the run's error or its own.
func (cfg *config) openOutput(c *cli.Context) (out sampleWriter, finish func(error) error, err error) {
	if cfg.show == nil {
		return openSamples(cfg.output, cfg.format, c.App.Writer, cliutil.Warner(c))
	}
	viewer := newShowWriter(cfg.conv, cfg.show, c.App.Writer, cliutil.Streams(c).IsStdoutTTY())
	return viewer, func(err error) error {
		if ferr := viewer.Flush(); err == nil {
			err = ferr
		}
		return err
	}, nil
}

// finish ends a run that converted every record: the samples shown go out
// before the summary (on a terminal showing both), the draft vocabulary is
// written, and the summary goes to stderr unless -q.
func (cfg *config) finish(c *cli.Context, t tally, out sampleWriter) (err error) {
	viewer, _ := out.(*showWriter)
	if viewer != nil {
		if err := viewer.Flush(); err != nil {
			return err
		}
	}
	var vocabNote string
	if cfg.vocab != nil {
		if vocabNote, err = cfg.vocab.write(cfg.conv.vocab); err != nil {
			return err
		}
	}
	if cfg.quiet {
		return nil
	}
	if viewer != nil {
		cliutil.Notef(c.App.ErrWriter, c.App.Name, "%s", showSummary(viewer.shown, cfg.show))
		return nil
	}
	t.note(c.App.ErrWriter, c.App.Name, cfg.format)
	if vocabNote != "" {
		cliutil.Notef(c.App.ErrWriter, c.App.Name, "%s", vocabNote)
	}
	return nil
}

// convertAll converts every record read into a sample for out, and counts
// what became of them.
func convertAll(in *jsonl.Reader, conv *converter, out sampleWriter) (tally, error) {
	scan := record.NewScanner(conv.idPath, true, "")
	t := tally{soft: map[string]int64{}, strict: conv.strict}
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
		case info.Truncated() && !conv.keepTruncated && info.Conversation == nil:
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
	pw, err := jsonl.CreateParquet[tokensRow](path)
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

// tokensRow is --format tokens as Parquet columns (record.FieldID,
// FieldInputIDs, FieldLossMask: TestTokensRowTags ties the tags to them),
// each list a standard three-level LIST.
type tokensRow struct {
	ID       string  `json:"id" parquet:"id"`
	InputIDs []int64 `json:"input_ids" parquet:"input_ids,list"`
	LossMask []int8  `json:"loss_mask" parquet:"loss_mask,list"`
}

// parquetSamples is a Parquet file as a sampleWriter: it has nothing to
// flush (a Parquet file is readable only once whole).
type parquetSamples struct {
	*jsonl.ParquetWriter[tokensRow]
}

func (parquetSamples) Flush() error { return nil }
