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

// config is tokenize-prompts' flags, checked, with the tokenizer and the
// template loaded.
type config struct {
	convert converter
	limit   int64
	jobs    int
	quiet   bool
	input   jsonl.Options
	// shuffle: --shuffle was given, with shuffleSeed; shuffleMemory is
	// --shuffle-memory in bytes.
	shuffle       bool
	shuffleSeed   string
	shuffleMemory int64
}

func parse(c *cli.Context, tf *flaggroup.Template) (*config, error) {
	cfg := &config{
		quiet: c.Bool(cliutil.FlagQuiet),
		jobs:  c.Int(flagJobs),
		convert: converter{
			shape: shapeOptions{
				messagesPath:      c.String(flagMessagesPath),
				keepLastAssistant: c.Bool(flagKeepLastAssistant),
				turnsAll:          c.String(flagTurns) == turnsAll,
				system:            c.String(flagSystem),
			},
			idPath:       c.String(cliutil.FlagIDPath),
			idPrefix:     c.String(flagIDPrefix),
			parseSpecial: !c.Bool(flagNoSpecial),
			truncate:     c.String(flagTruncate),
			withText:     c.Bool(flagWithText),
			dataset:      c.String(flagDataset),
		},
	}
	var err error
	switch c.String(flagTurns) {
	case turnsLast, turnsAll:
	default:
		return nil, cliutil.Usagef("--%s %q: want last or all", flagTurns, c.String(flagTurns))
	}
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
	if err := parseShuffle(c, cfg); err != nil {
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
		cfg.convert.idPath = record.FieldID
	}
	cfg.convert.id = record.NewIDPath(cfg.convert.idPath)
	cfg.convert.render.Extra, cfg.convert.render.Now = tf.Args, tf.Now
	if cfg.convert.thinking, err = thinking.FromFlags(c); err != nil {
		return nil, err
	}
	if k := thinking.ConflictingTemplateArg(cfg.convert.render.Extra); k != "" && cfg.convert.thinking.IsSet() {
		return nil, cliutil.Usagef("--%s %s: --%s sets %s per record; give one or the other", flaggroup.FlagTemplateArg, k, thinking.FlagThinking, k)
	}
	model, err := tf.Load()
	if err != nil {
		return nil, err
	}
	cfg.convert.tok, cfg.convert.template = model.Tok, model.Template
	tc := model.Tok.Config()
	cfg.convert.render.BOSToken, cfg.convert.render.EOSToken = tc.BOSToken, tc.EOSToken
	return cfg, nil
}

// parseShuffle reads --shuffle SEED and --shuffle-memory SIZE.
func parseShuffle(c *cli.Context, cfg *config) error {
	cfg.shuffleSeed, cfg.shuffle = c.String(flagShuffle), c.IsSet(flagShuffle)
	if cfg.shuffle && cfg.shuffleSeed == "" {
		return cliutil.Usagef("--%s needs a SEED (any word or number: 1, 2026-06): the same seed gives the same order", flagShuffle)
	}
	var err error
	if cfg.shuffleMemory, err = cliutil.ParseCount(c.String(flagShuffleMemory)); err != nil || cfg.shuffleMemory < 1<<20 {
		return cliutil.Usagef("--%s %q: want a size in bytes of at least 1Mi (512Mi, 4Gi)", flagShuffleMemory, c.String(flagShuffleMemory))
	}
	return nil
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
