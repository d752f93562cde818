package flaggroup

import (
	"encoding/json"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/cliutil"
)

// Names of the template and tokenizer flags that other flags' checks and
// help name.
const (
	FlagTokenizer   = "tokenizer"
	FlagTemplate    = "template"
	FlagTemplateArg = "template-arg"
	FlagDate        = "date"
)

// Template is what the template and tokenizer flags set.
type Template struct {
	// Tokenizer is --tokenizer: a model folder, a tokenizer file or
	// builtin:NAME; "" when not given.
	Tokenizer string
	// Name is --template: auto (the tokenizer's), none or a file.
	Name string
	// Args is --template-arg, read: nil when not given.
	Args map[string]json.RawMessage
	// Now is --date as the clock templates see through strftime_now; nil
	// means the real one.
	Now func() time.Time
	// Declaration is --tool-declaration.
	Declaration string
}

// Tokenizer is --tokenizer bound to path, with SYNTHPIPE_TOKENIZER; purpose
// says what the tool reads it for.
func Tokenizer(path *string, purpose string) cli.Flag {
	return &cli.StringFlag{Name: FlagTokenizer, EnvVars: cliutil.EnvVars(FlagTokenizer), Destination: path,
		Usage: "the model's tokenizer: a model `DIR` (tokenizer.json or tiktoken.model, tokenizer_config.json, chat_template.jinja), one tokenizer file, or " +
			chat.BuiltinPrefix + "kimi-k2.5 (" + purpose + ")"}
}

// ToolDeclaration is --tool-declaration (chat.ToolDeclarationFlag) bound to
// mode and checked as it is read.
func ToolDeclaration(mode *string) cli.Flag {
	f := chat.ToolDeclarationFlag().(*cli.StringFlag)
	f.Destination = mode
	f.Action = func(_ *cli.Context, s string) error { return (*chat.Template)(nil).SetToolDeclaration(s) }
	return f
}

// TemplateFlags is the flags of the tools that render conversations with
// the model's chat template, bound to t: --tokenizer (purpose says what the
// tool reads it for), --template, --template-arg, --date and
// --tool-declaration. Each is checked as it is read, used or not: a typo
// must not pass silently.
func TemplateFlags(t *Template, purpose string) []cli.Flag {
	return []cli.Flag{
		Tokenizer(&t.Tokenizer, purpose),
		&cli.StringFlag{Name: FlagTemplate, Value: chat.TemplateAuto, EnvVars: cliutil.EnvVars(FlagTemplate), Destination: &t.Name,
			Usage: "chat template (`T`): auto (the tokenizer's), none (nothing is rendered: for \"text\" prompts or records with token ids), or a Jinja FILE"},
		&cli.StringSliceFlag{Name: FlagTemplateArg,
			Usage: "template variable `K=V` (repeatable), V read as JSON when it parses (true, 3, \"x\", [..]) else as a string: enable_thinking=false, reasoning_effort=high",
			Action: func(_ *cli.Context, args []string) (err error) {
				t.Args, err = chat.ParseTemplateArgs(args)
				return err
			}},
		&cli.StringFlag{Name: FlagDate,
			Usage: "the day templates see through strftime_now, as `YYYY-MM-DD` (default: today), so that a prompt renders the same on every day (give to-train tokenize-prompts' --date)",
			Action: func(_ *cli.Context, s string) (err error) {
				if t.Now, err = chat.ParseDate(s); err != nil {
					return cliutil.Usagef("--%s %v", FlagDate, err)
				}
				return nil
			}},
		ToolDeclaration(&t.Declaration),
	}
}

// Load loads the tokenizer and the chat template the flags name, with the
// template arguments, the date and the tool declaration.
func (t *Template) Load() (*chat.Model, error) {
	m, err := chat.Load(t.Tokenizer, t.Name, nil)
	if err != nil {
		return nil, err
	}
	m.Extra, m.Now = t.Args, t.Now
	if err := m.SetToolDeclaration(t.Declaration); err != nil {
		return nil, err
	}
	return m, nil
}
