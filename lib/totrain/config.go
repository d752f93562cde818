package totrain

import (
	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/draftvocab"
	"github.com/synthpipe/synthpipe/lib/flaggroup"
	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// config is to-train's options: flags sets its fields from the flags, each
// checked where it is declared, and check what depends on several of them,
// then loads the tokenizer and the template and builds the converter.
type config struct {
	template      flaggroup.Template
	format        string
	keepTruncated bool
	strict        bool
	output        string
	show          *showFilter // --show, read; nil without it
	draftVocab    int
	draftVocabOut string
	targetVocab   int
	quiet         bool
	input         jsonl.Options
	// conv is the converter the flags ask for, and vocab the --draft-vocab
	// job (nil without it): check builds both.
	conv  *converter
	vocab *vocabJob
}

// check checks what depends on several flags, reads the shared ones, loads
// the tokenizer and the chat template when --tokenizer is given, and checks
// the files named.
func (cfg *config) check(c *cli.Context) (err error) {
	if cfg.conv, err = cfg.newConverter(c); err != nil {
		return err
	}
	if cfg.show != nil {
		if err := cfg.checkShow(); err != nil {
			return err
		}
	}
	if cfg.vocab, err = cfg.vocabJob(c); err != nil {
		return err
	}
	if cfg.vocab != nil {
		cfg.conv.vocab = draftvocab.NewCounter()
	}
	cfg.quiet = c.Bool(cliutil.FlagQuiet)
	if cfg.input, err = cliutil.InputOptions(c); err != nil {
		return err
	}
	var files jsonl.Files
	files.Inputs(c.App.Reader, c.Args().Slice())
	if cfg.output == "" {
		files.Stdout(c.App.Writer)
	}
	files.Output("-o", cfg.output, false)
	if cfg.vocab != nil {
		files.Output("--"+flagDraftVocabOut, cfg.vocab.out, false)
	}
	return files.Check()
}

// newConverter builds the converter that the flags ask for, loading the
// tokenizer and chat template when --tokenizer is given.
func (cfg *config) newConverter(c *cli.Context) (*converter, error) {
	conv := &converter{format: cfg.format, idPath: c.String(cliutil.FlagIDPath), templateArgs: cfg.template.Args,
		keepTruncated: cfg.keepTruncated, strict: cfg.strict}
	if cfg.template.Tokenizer != "" {
		var err error
		if conv.model, err = cfg.template.Load(); err != nil {
			return nil, err
		}
	}
	return conv, nil
}

// checkShow checks what --show needs: the tokenizer, to turn ids into text
// and to render conversations, and no -o, since it writes for a person,
// not a trainer.
func (cfg *config) checkShow() error {
	if cfg.conv.model == nil {
		return cliutil.Usagef("--show needs --tokenizer DIR (the model's folder, or builtin:kimi-k2.5): the text of the tokens and the chat template come from it")
	}
	if cfg.format == formatSpecForge && cfg.conv.model.Template == nil {
		return cliutil.Usagef("--show with --format specforge renders conversations with the chat template: not with --template none")
	}
	if cfg.output != "" {
		return cliutil.Usagef("--show prints samples for reading on stdout; it writes no training data, so -o does not go with it")
	}
	return nil
}
