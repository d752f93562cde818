package generate

import (
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/engine"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/flaggroup"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/thinking"
)

// config is generate's flags, checked. The engine's settings are bound
// to the fields of its engine.Config, so that a flag of the engine is
// declared in flags.go and read where the engine uses it, with nothing to
// copy between; the fields below it are the command's own.
type config struct {
	engine.Config

	apiKeyFile string // --api-key-file, "" for the environment's key
	inputs     []string
	input      jsonl.Options
	already    []string
	// overKeyLimit: go on with a cost budget above the key's credit.
	overKeyLimit bool
	statusFile   string  // --status-file, "" for none
	metricsAddr  string  // --metrics-listen, "" for none
	maxPrice     float64 // USD per million tokens, 0: unknown
	sameParams   bool    // --require-same-params
}

// options holds what no flag sets and a caller of the package (its tests)
// may: they build the app with their own (newApp, mainWith) instead of
// patching package state.
type options struct {
	firstBackoff time.Duration // the first retry delay
	tuning       engine.Tuning // the engine's timings; zero fields: defaults
}

// defaultOptions are what generate runs with.
var defaultOptions = options{firstBackoff: 500 * time.Millisecond}

// defaultIdleTimeout is --idle-timeout: a streaming server that says
// nothing for two minutes is taken for stuck (a stopped process, a dead
// peer behind a proxy that keeps the connection open). Requests rarely
// wait that long in a queue, since generate sizes its concurrency to the
// server, and OpenRouter's keep-alive comments count as activity.
const defaultIdleTimeout = 2 * time.Minute

// defaultMaxRetryWait is --max-retry-wait: a Retry-After longer than five
// minutes is a server's mistake or a hostile one (999999999 seconds, a date
// in the year 9999), and a record must not wait for decades on it.
const defaultMaxRetryWait = 5 * time.Minute

// parse completes cfg, whose flags are bound to its fields and checked
// each on its own, with what depends on several of them.
func parse(c *cli.Context, cfg *config) (err error) {
	cfg.inputs = c.Args().Slice()
	cfg.IDPath, cfg.Quiet = c.String(cliutil.FlagIDPath), c.Bool(cliutil.FlagQuiet)
	if len(cfg.URLs) == 0 {
		return cliutil.Usagef("--%s is required (e.g. --url http://localhost:30000)", flagURL)
	}
	if err := checkFormats(cfg); err != nil {
		return err
	}
	batchInput := cfg.InputFormat == engine.FormatOpenAIBatch // names its model, and needs --tokenizer for a backend that takes token ids
	if cfg.Kind.NeedsModel && cfg.Model == "" && !batchInput {
		return cliutil.Usagef("--%s %s needs --%s", flagBackend, cfg.Kind.Name, flagModel)
	}
	if err := checkTurns(cfg, batchInput); err != nil {
		return err
	}
	if cfg.Thinking, err = thinking.FromFlags(c); err != nil {
		return err
	}
	if cfg.Thinking.IsSet() && batchInput {
		return cliutil.Usagef("--%s is for records (--input-format %s): an OpenAI Batch body sets its own reasoning", thinking.FlagThinking, engine.FormatRecords)
	}
	if err := checkSamples(cfg); err != nil {
		return err
	}
	if cfg.Tokenizer != "" && cfg.Kind.Input == backend.TokenIDs && !batchInput && !cfg.TurnsAll {
		return cliutil.Usagef("--%s is for backends that send messages (%s): --%s %s returns the output ids itself",
			flagTokenizer, flaggroup.OrList(flaggroup.BackendsTaking(backend.Messages)), flagBackend, cfg.Kind.Name)
	}
	if err := flaggroup.CheckSampling(&cfg.Params, cfg.Kind.Input == backend.Messages); err != nil {
		return err
	}
	if len(cfg.already) > 0 && cfg.TokenBudget == 0 {
		if !alreadyFromEnv(cfg.already) {
			return cliutil.Usagef("--%s counts against --%s, which is not set", flagAlready, flagTokenBudget)
		}
		cfg.already = nil
	}
	if cfg.input, err = cliutil.InputOptions(c); err != nil {
		return err
	}
	var files jsonl.Files
	files.Inputs(c.App.Reader, cfg.inputs)
	files.State("--"+flagAlready, cfg.already)
	files.Stdout(c.App.Writer)
	files.Output("--"+flagErrors, cfg.Errors, false)
	files.Output("--"+flagStatusFile, cfg.statusFile, false)
	if err := files.Check(); err != nil {
		return err
	}
	cfg.APIKey, err = readAPIKey(cfg.apiKeyFile)
	return err
}

// alreadyFromEnv tells whether --already came from $SYNTHPIPE_ALREADY,
// which a pipeline sets for budget-cut and generate alike: a generate
// without --token-budget then has nothing to count it against, and leaves it
// alone, where an --already it was given refuses to run.
func alreadyFromEnv(already []string) bool {
	v, ok := os.LookupEnv(cliutil.EnvName(flagAlready))
	return ok && len(already) == 1 && already[0] == v
}

// readAPIKey takes the key from a file, else from the environment.
func readAPIKey(path string) (string, error) {
	if path == "" {
		for _, name := range apiKeyEnv {
			if k := strings.TrimSpace(os.Getenv(name)); k != "" {
				return k, checkKey(k, "$"+name)
			}
		}
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", exitcode.NoInputf("--%s: %v", flagAPIKeyFile, err)
	}
	// An editor on Windows may start the file with a byte order mark,
	// which is no part of any key.
	key := strings.TrimSpace(strings.TrimPrefix(string(b), "\uFEFF"))
	if key == "" {
		return "", exitcode.DataErrorf("--%s %s is empty", flagAPIKeyFile, path)
	}
	return key, checkKey(key, "--"+flagAPIKeyFile+" "+path)
}

// checkKey refuses a key that cannot go into a header: a second line or a
// control character would be refused on every request, as if no server
// were reachable. The message never shows the key.
func checkKey(key, source string) error {
	i := strings.IndexFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ' ' || r == '\uFEFF' })
	if i < 0 {
		return nil
	}
	what := "a space, a byte order mark or a control character"
	if key[i] == '\n' || key[i] == '\r' {
		what = "more than one line"
	}
	return cliutil.Usagef("%s holds %s: it must hold the API key alone", source, what)
}

// defaultMinRoom is --min-room: SGLang refuses a prompt as long as the
// context, so a prompt must leave room for at least one answer token.
const defaultMinRoom = 1
