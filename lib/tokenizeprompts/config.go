package tokenizeprompts

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/bundle"
	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/chattemplate"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/tokenizer"
)

// Values of --truncate.
const (
	truncateLeft  = "left"
	truncateRight = "right"
)

// builtinPrefix marks a --tokenizer bundled in the binary.
const builtinPrefix = "builtin:"

// config is tokenize-prompts' flags, checked, with the tokenizer and the
// template loaded.
type config struct {
	convert converter
	limit   int64
	jobs    int
	quiet   bool
	input   jsonl.Options
}

func parse(c *cli.Context) (*config, error) {
	cfg := &config{
		quiet: c.Bool(cliutil.FlagQuiet),
		jobs:  c.Int(flagJobs),
		convert: converter{
			shape: shapeOptions{
				messagesPath:      c.String(flagMessagesPath),
				keepLastAssistant: c.Bool(flagKeepLastAssistant),
				system:            c.String(flagSystem),
			},
			idPath:       c.String(cliutil.FlagIDPath),
			idPrefix:     c.String(flagIDPrefix),
			parseSpecial: !c.Bool(flagNoSpecial),
			truncate:     c.String(flagTruncate),
		},
	}
	var err error
	if cfg.input, err = cliutil.InputOptions(c); err != nil {
		return nil, err
	}
	if cfg.jobs < 0 {
		return nil, cliutil.Usagef("--%s %d: must be 0 (one per CPU) or more", flagJobs, cfg.jobs)
	}
	if cfg.jobs == 0 {
		cfg.jobs = runtime.GOMAXPROCS(0)
	}
	if cfg.limit, err = countFlag(c, flagLimit); err != nil {
		return nil, err
	}
	maxTokens, err := countFlag(c, flagMaxPromptTokens)
	if err != nil {
		return nil, err
	}
	cfg.convert.maxTokens = int(maxTokens)
	switch cfg.convert.truncate {
	case "", truncateLeft, truncateRight:
	default:
		return nil, cliutil.Usagef("--%s %q: must be left or right", flagTruncate, cfg.convert.truncate)
	}
	if cfg.convert.truncate != "" && maxTokens == 0 {
		return nil, cliutil.Usagef("--%s needs --%s N", flagTruncate, flagMaxPromptTokens)
	}
	if cfg.convert.idPath == "" {
		cfg.convert.idPath = "id"
	}
	templateName := c.String(flagTemplate)
	if cfg.convert.render.Extra, err = chat.ParseTemplateArgs(c.StringSlice(flagTemplateArg)); err != nil {
		return nil, err
	}
	if cfg.convert.render.Now, err = chat.ParseDate(c.String(flagDate)); err != nil {
		return nil, cliutil.Usagef("--%s %v", flagDate, err)
	}
	if cfg.convert.tok, err = loadTokenizer(c.String(flagTokenizer)); err != nil {
		return nil, err
	}
	tc := cfg.convert.tok.Config()
	cfg.convert.render.BOSToken, cfg.convert.render.EOSToken = tc.BOSToken, tc.EOSToken
	if cfg.convert.template, err = loadTemplate(templateName, c.String(flagTokenizer), tc.ChatTemplate); err != nil {
		return nil, err
	}
	return cfg, nil
}

// countFlag reads an optional count flag (4k, 10M, 12345); 0 when unset or
// empty (an empty environment variable, as cron lines leave them, sets
// nothing).
func countFlag(c *cli.Context, name string) (int64, error) {
	if c.String(name) == "" {
		return 0, nil
	}
	n, err := cliutil.ParseCount(c.String(name))
	if err != nil {
		return 0, cliutil.Usagef("--%s: %v", name, err)
	}
	return n, nil
}

// loadTokenizerPath loads a tokenizer folder or file. Tests that run the
// tool many times share one load per folder through it.
var loadTokenizerPath = tokenizer.Load

// loadTokenizer loads --tokenizer: a folder, a file, or a bundled one.
func loadTokenizer(path string) (*tokenizer.Tokenizer, error) {
	if path == "" {
		return nil, cliutil.Usagef("--%s is required: a model folder, a tokenizer file, or %s%s", flagTokenizer, builtinPrefix, bundle.TokenizerName)
	}
	if name, ok := strings.CutPrefix(path, builtinPrefix); ok {
		return loadBuiltinTokenizer(name)
	}
	tok, err := loadTokenizerPath(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, exitcode.NoInputf("--%s %s: %v", flagTokenizer, path, err)
	}
	if err != nil {
		return nil, exitcode.DataErrorf("--%s %s: %v", flagTokenizer, path, err)
	}
	return tok, nil
}

// loadBuiltinTokenizer unpacks a bundled tokenizer into a temporary folder
// just long enough to load it.
func loadBuiltinTokenizer(name string) (*tokenizer.Tokenizer, error) {
	if name != bundle.TokenizerName {
		return nil, cliutil.Usagef("--%s %s%s: no such bundled tokenizer (there is %s%s)", flagTokenizer, builtinPrefix, name, builtinPrefix, bundle.TokenizerName)
	}
	tmp, err := os.MkdirTemp("", "synthpipe-tokenizer-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	dir, err := bundle.ExtractTokenizer(tmp)
	if err != nil {
		return nil, err
	}
	return tokenizer.Load(dir)
}

// loadTemplate parses the chat template --template names; nil for none.
// It does what chat.Load does for the other tools, apart from loading the
// tokenizer: tokenize-prompts also reads builtin: tokenizers, and tells a
// missing tokenizer (exit 66) from a damaged one (65).
func loadTemplate(name, tokenizerPath, fromTokenizer string) (*chattemplate.Template, error) {
	var src string
	switch name {
	case chat.TemplateNone:
		return nil, nil
	case chat.TemplateAuto, "":
		if fromTokenizer == "" {
			return nil, cliutil.Usagef("the tokenizer %s has no chat template: pass --%s FILE (or --%s none for rendered text records)", tokenizerPath, flagTemplate, flagTemplate)
		}
		name, src = tokenizerPath+"/chat_template", fromTokenizer
	default:
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, exitcode.NoInputf("--%s: %v", flagTemplate, err)
		}
		src = string(b)
	}
	t, err := chattemplate.Parse(name, src)
	if err != nil {
		return nil, exitcode.DataErrorf("chat template: %v", err)
	}
	return t, nil
}
