package tokenizeprompts

import (
	"runtime"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/flaggroup"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
	"github.com/synthpipe/synthpipe/lib/thinking"
)

// Values of --turns.
const (
	turnsLast = "last"
	turnsAll  = "all"
)

// Values of --truncate.
const (
	truncateLeft  = "left"
	truncateRight = "right"
)

// config is tokenize-prompts' options: flags sets its fields from the
// flags, each checked where it is declared, and check what depends on
// several of them, then loads the tokenizer and the template.
type config struct {
	template flaggroup.Template
	convert  converter
	limit    int64
	jobs     int
	quiet    bool
	input    jsonl.Options
	// shuffle: --shuffle was given, with shuffleSeed; shuffleMemory is
	// --shuffle-memory in bytes.
	shuffle       bool
	shuffleSeed   string
	shuffleMemory int64
	maxTokens     int64 // --max-prompt-tokens, 0 for no limit
}

// defaultShuffleMemory is --shuffle-memory's default, 512Mi, and
// minShuffleMemory the least it may be.
const (
	defaultShuffleMemory = 512 << 20
	minShuffleMemory     = 1 << 20
)

// check checks what depends on several flags, reads the shared ones
// (--thinking, --id-path, input options) and loads the tokenizer and the
// chat template.
func (cfg *config) check(c *cli.Context) (err error) {
	cfg.quiet = c.Bool(cliutil.FlagQuiet)
	if cfg.input, err = cliutil.InputOptions(c); err != nil {
		return err
	}
	if cfg.jobs == 0 {
		cfg.jobs = runtime.GOMAXPROCS(0)
	}
	cfg.convert.maxTokens = int(cfg.maxTokens)
	if cfg.convert.truncate != "" && cfg.maxTokens == 0 {
		return cliutil.Usagef("--%s needs --%s N", flagTruncate, flagMaxPromptTokens)
	}
	if cfg.convert.idPath = c.String(cliutil.FlagIDPath); cfg.convert.idPath == "" {
		cfg.convert.idPath = record.FieldID
	}
	cfg.convert.id = record.NewIDPath(cfg.convert.idPath)
	cfg.convert.render.Extra, cfg.convert.render.Now = cfg.template.Args, cfg.template.Now
	if cfg.convert.thinking, err = thinking.FromFlags(c); err != nil {
		return err
	}
	if k := thinking.ConflictingTemplateArg(cfg.convert.render.Extra); k != "" && cfg.convert.thinking.IsSet() {
		return cliutil.Usagef("--%s %s: --%s sets %s per record; give one or the other", flaggroup.FlagTemplateArg, k, thinking.FlagThinking, k)
	}
	model, err := cfg.template.Load()
	if err != nil {
		return err
	}
	cfg.convert.tok, cfg.convert.template = model.Tok, model.Template
	tc := model.Tok.Config()
	cfg.convert.render.BOSToken, cfg.convert.render.EOSToken = tc.BOSToken, tc.EOSToken
	return nil
}

// countAction is the Action of an optional count flag (4k, 10M, 12345) that
// sets n; empty sets 0 (an empty environment variable, as cron lines leave
// them, sets nothing).
func countAction(name string, n *int64) func(*cli.Context, string) error {
	return func(_ *cli.Context, s string) (err error) {
		if *n = 0; s == "" {
			return nil
		}
		if *n, err = cliutil.ParseCount(s); err != nil {
			return cliutil.Usagef("--%s: %v", name, err)
		}
		return nil
	}
}
