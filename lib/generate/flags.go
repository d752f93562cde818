package generate

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/engine"
	"github.com/synthpipe/synthpipe/lib/flaggroup"
	"github.com/synthpipe/synthpipe/lib/record"
	"github.com/synthpipe/synthpipe/lib/statusfile"
	"github.com/synthpipe/synthpipe/lib/thinking"
)

// Names of the flags that other flags' checks, help or messages name.
const (
	flagBackend           = flaggroup.FlagBackend
	flagURL               = flaggroup.FlagURL
	flagModel             = flaggroup.FlagModel
	flagMaxTokens         = flaggroup.FlagMaxTokens
	flagContextLength     = "context-length"
	flagErrors            = "errors"
	flagAPIKeyFile        = "api-key-file"
	flagConcurrency       = "concurrency"
	flagTokenBudget       = engine.FlagTokenBudget
	flagAlready           = "already"
	flagCostBudget        = engine.FlagCostBudget
	flagStatusFile        = "status-file"
	flagTokenizer         = flaggroup.FlagTokenizer
	flagTurns             = engine.FlagTurns
	flagSamples           = engine.FlagSamples
	flagSeed              = flaggroup.FlagSeed
	flagRequireSameParams = "require-same-params"
	flagInputFormat       = engine.FlagInputFormat
	flagOutputFormat      = "output-format"
	flagMinRoom           = engine.FlagMinRoom
	flagTimeout           = engine.FlagTimeout
	flagIdleTimeout       = engine.FlagIdleTimeout
	flagMaxAnswerMemory   = engine.FlagMaxAnswerMemory
	flagShared            = engine.FlagShared
	flagOverKeyLimit      = "over-key-limit"
	flagMaxPrice          = "max-price"
	flagMetricsListen     = "metrics-listen"
	flagDrainTimeout      = engine.FlagDrainTimeout
)

// defaultAnswerMemory is --max-answer-memory's default, 1Gi.
const defaultAnswerMemory = 1 << 30

// flags lists generate's options, grouped as the man page shows them, each
// bound to its field of cfg and checked where it is declared; what depends
// on several flags is checked by parse.
func flags(cfg *config) []cli.Flag {
	cfg.AnswerMem, cfg.CountMode = defaultAnswerMemory, record.CountTotal
	all := flaggroup.Server(&cfg.Kind, &cfg.URLs, &cfg.Model) // Where and what.
	all = append(all,
		&cli.StringFlag{Name: flagAPIKeyFile, Destination: &cfg.apiKeyFile, Usage: "read the API key from `FILE` (else $OPENROUTER_API_KEY or $OPENAI_API_KEY)"},
		&cli.StringFlag{Name: "referer", Destination: &cfg.Referer, Usage: "OpenRouter HTTP-Referer attribution `URL`"},
		&cli.StringFlag{Name: "title", Destination: &cfg.Title, Usage: "OpenRouter X-Title attribution `NAME`"},
	)
	all = append(all, flaggroup.Sampling(&cfg.Params)...) // Unset sampling options are not sent: the server's defaults apply.
	all = append(all,
		&cli.IntFlag{Name: flagContextLength, DefaultText: "the servers'", EnvVars: cliutil.EnvVars(flagContextLength), Destination: &cfg.ContextLength,
			Usage:  "the model's context length in `TOKENS`: each request's max tokens is capped at it minus the prompt (not given: the smallest the servers report, SGLang's /server_info or the model list's context_length; with --concurrency N an OpenAI-compatible server's list is not read)",
			Action: check(flagContextLength, func(n int) bool { return n < 0 || n == 1 }, "want 2 or more tokens (0: the servers')")},
		&cli.IntFlag{Name: flagMinRoom, Value: defaultMinRoom, EnvVars: cliutil.EnvVars(flagMinRoom), Destination: &cfg.MinRoom,
			Usage:  "a prompt that leaves fewer than `N` tokens of the context length for its answer is not sent: it goes to --errors as context_overflow",
			Action: check(flagMinRoom, func(n int) bool { return n < 1 }, "want at least 1 token")},
		&cli.IntFlag{Name: flagSamples, Value: 1, EnvVars: cliutil.EnvVars(flagSamples), Destination: &cfg.Samples,
			Usage: "`N` answers per prompt, each its own record with a seed of its own: sample 1 keeps the prompt's id, sample k is ID#k (see \"Several answers per prompt\")",
			Action: check(flagSamples, func(n int) bool { return n < 1 || n > record.MaxSamples },
				fmt.Sprintf("want 1 to %d answers per prompt", record.MaxSamples))},
		flaggroup.Tokenizer(&cfg.Tokenizer, "openai backends: add output_ids by rendering each answer with its chat template"),
		&cli.StringFlag{Name: flagTurns, Value: engine.TurnsLast, EnvVars: cliutil.EnvVars(flagTurns),
			Usage: "`WHICH` turns to generate: last (one answer per record) or all (regenerate every assistant turn of a tokenize-prompts --turns all conversation " +
				"on the model's own answers; the source's tool results are spliced in; sglang needs --tokenizer)",
			Action: func(_ *cli.Context, s string) error {
				if s != engine.TurnsLast && s != engine.TurnsAll {
					return cliutil.Usagef("--%s %q: want last or all", flagTurns, s)
				}
				cfg.TurnsAll = s == engine.TurnsAll
				return nil
			}},
		flaggroup.ToolDeclaration(&cfg.Declaration),
		thinking.Flags()[0], thinking.Flags()[1],
	)
	all = append(all, failureFlags(cfg)...)
	all = append(all, schedulingFlags(cfg)...)
	all = append(all, budgetFlags(cfg)...)
	return append(all, progressFlags(cfg)...)
}

// failureFlags are the options for what fails: the errors file, retries and timeouts.
func failureFlags(cfg *config) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: flagErrors, EnvVars: cliutil.EnvVars(flagErrors), Destination: &cfg.Errors,
			Usage: "write the records that failed to `FILE` (re-feed it to retry exactly those)"},
		&cli.IntFlag{Name: "retries", Value: 5, Destination: &cfg.Retries, Usage: "retry a retryable failure up to `N` times (attempts = N+1)",
			Action: notNegative[int]("retries")},
		&cli.DurationFlag{Name: flagTimeout, Value: 30 * time.Minute, Destination: &cfg.Timeout, Usage: "give up on one attempt after `DURATION` (then retry)",
			Action: notNegative[time.Duration](flagTimeout)},
		&cli.BoolFlag{Name: "stream", Destination: &cfg.Stream, Usage: "stream answers (detects dead connections and slow first tokens sooner)"},
		&cli.DurationFlag{Name: "max-retry-wait", Value: defaultMaxRetryWait, Destination: &cfg.MaxRetryWait,
			Usage:  "wait at most `DURATION` before a retry, whatever a server's Retry-After asks (a year, a date in 9999)",
			Action: check("max-retry-wait", func(d time.Duration) bool { return d <= 0 }, "must be positive")},
		&cli.DurationFlag{Name: flagIdleTimeout, Value: defaultIdleTimeout, Destination: &cfg.Idle,
			Usage:  "with --stream: retry an attempt whose server sent nothing for `DURATION`; it must outlast the server's queueing (0: no limit)",
			Action: notNegative[time.Duration](flagIdleTimeout)},
		&cli.StringFlag{Name: flagMaxAnswerMemory, Value: cliutil.ByteSize(defaultAnswerMemory),
			Usage: "the answers being received hold at most `SIZE` bytes together (one alone at most " + cliutil.ByteSize(backend.DefaultMaxResponseBytes) + "); one that would pass it fails and is retried",
			Action: func(_ *cli.Context, s string) (err error) {
				if cfg.AnswerMem, err = cliutil.ParseCount(s); err != nil || cfg.AnswerMem < 1<<20 {
					return cliutil.Usagef("--%s %q: want a size in bytes of at least 1Mi (1Gi, 512Mi)", flagMaxAnswerMemory, s)
				}
				return nil
			}},
	}
}

// schedulingFlags are the options for how many requests are in flight, and in which order results are written.
func schedulingFlags(cfg *config) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: flagConcurrency, Value: "auto",
			Usage: "requests in flight per server: `N` or auto (sized from the server's KV cache, or AIMD for openai)",
			Action: func(_ *cli.Context, s string) error {
				if s == "auto" {
					cfg.FixedConc = 0
					return nil
				}
				n, err := strconv.Atoi(s)
				if err != nil || n < 1 {
					return cliutil.Usagef("--%s %q: want a positive number or auto", flagConcurrency, s)
				}
				cfg.FixedConc = n
				return nil
			}},
		&cli.BoolFlag{Name: flagShared, EnvVars: cliutil.EnvVars(flagShared), Destination: &cfg.Shared,
			Usage: "other runs use the server(s) too: where a server reports no load (no SGLang /metrics, /v1/loads or /get_load), measure its queue with one-token probes and share it (\"Several runs, one server\"; scripts/fanout.sh sets it)"},
		&cli.BoolFlag{Name: "ordered", Destination: &cfg.Ordered, Usage: "write results in input order, not as they complete"},
		&cli.IntFlag{Name: "reorder-window", Value: 4096, Destination: &cfg.Window, Usage: "with --ordered: hold at most `N` records waiting for an earlier one",
			Action: check("reorder-window", func(n int) bool { return n < 1 }, "must be at least 1")},
	}
}

// budgetFlags are the token and cost budgets.
func budgetFlags(cfg *config) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: flagTokenBudget, EnvVars: cliutil.EnvVars(flagTokenBudget),
			Usage: "write at most `N` tokens (250k, 10M), counted like budget-cut; requests in flight reserve prompt + --max-tokens; 0 is refused with 64 (as budget-cut --tokens 0 is): for no budget, leave it out",
			Action: func(_ *cli.Context, s string) (err error) {
				if s != "" {
					cfg.TokenBudget, err = cliutil.ParseBudget(flagTokenBudget, s, "for no token budget, leave --"+flagTokenBudget+" out (or $"+cliutil.EnvName(flagTokenBudget)+" empty)")
				}
				return err
			}},
		&cli.StringSliceFlag{Name: flagAlready, EnvVars: cliutil.EnvVars(flagAlready),
			Usage:  "the tokens of this earlier output `FILE` count against --token-budget (repeatable; missing = empty; $SYNTHPIPE_ALREADY, which budget-cut reads too, is left alone without --token-budget)",
			Action: func(_ *cli.Context, files []string) error { cfg.already = files; return nil }},
		&cli.BoolFlag{Name: flagRequireSameParams, EnvVars: cliutil.EnvVars(flagRequireSameParams), Destination: &cfg.sameParams,
			Usage: "refuse (exit 65) when --already records were made with another backend, model or sampling parameters than this run's, instead of warning"},
		&cli.StringFlag{Name: "count", Value: "total", Usage: "what --token-budget counts (`MODE`): total, prompt or completion",
			Action: func(_ *cli.Context, s string) (err error) {
				if cfg.CountMode, err = record.ParseCountMode(s); err != nil {
					return cliutil.Usagef("%v", err)
				}
				return nil
			}},
		&cli.BoolFlag{Name: "drain", Usage: "no effect, accepted so that older scripts run: a budget stop waits for the requests in flight, leaving none to cancel"},
		&cli.Float64Flag{Name: flagCostBudget, Destination: &cfg.CostBudget, Usage: "spend at most `USD` (usage.cost; requests in flight reserve their worst case); 0 is refused with 64: for no cost budget, leave it out",
			Action: func(_ *cli.Context, usd float64) error {
				if usd == 0 { // as budget-cut --tokens 0 and --token-budget 0 are (cliutil.ParseBudget)
					return cliutil.Usagef("--%s 0: a budget of $0 lets nothing through (0 is never \"no budget\"): for no cost budget, leave --%s out", flagCostBudget, flagCostBudget)
				}
				return checkUSD(flagCostBudget, usd)
			}},
		&cli.BoolFlag{Name: flagOverKeyLimit, Destination: &cfg.overKeyLimit, Usage: "go on when --cost-budget is more than the OpenRouter key can still spend (GET /key); the run then stops with 77 when the key runs out"},
		&cli.Float64Flag{Name: flagMaxPrice, DefaultText: "from the server's /models", Destination: &cfg.maxPrice, Usage: "worst-case price in `USD` per million tokens, for --cost-budget",
			Action: func(_ *cli.Context, usd float64) error { return checkUSD(flagMaxPrice, usd) }},
	}
}

// progressFlags are the options for progress, stopping and the input and output formats.
func progressFlags(cfg *config) []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "progress-interval", Value: 30 * time.Second, Destination: &cfg.ProgressEvery, Usage: "print progress every `DURATION` when stderr is not a terminal (0: never)",
			Action: notNegative[time.Duration]("progress-interval")},
		&cli.StringFlag{Name: flagStatusFile, EnvVars: cliutil.EnvVars(flagStatusFile), Destination: &cfg.statusFile,
			Usage: "rewrite `FILE` (atomically: a regular file or none; a symlink, FIFO or device is refused) every --progress-interval and at exit with the run's state as JSON; see generate(1) STATUS FILE",
			Action: func(_ *cli.Context, path string) error {
				if path == "" {
					return nil
				}
				if err := statusfile.CheckTarget(path); err != nil {
					return cliutil.Usagef("--%s %v", flagStatusFile, err)
				}
				return nil
			}},
		&cli.StringFlag{Name: flagMetricsListen, Destination: &cfg.metricsAddr, Usage: "serve the status file's figures in the Prometheus text format on http://`HOST:PORT`/metrics while the run lasts (127.0.0.1:PORT keeps them on this machine; port 0 picks a free one, named on stderr)"},
		&cli.Int64Flag{Name: "total", DefaultText: "counted when the input is a regular file", Destination: &cfg.Total, Usage: "`N` records expected, for the ETA"},
		&cli.DurationFlag{Name: flagDrainTimeout, Value: 30 * time.Second, Destination: &cfg.DrainTimeout, Usage: "on SIGINT, SIGTERM or SIGHUP, wait up to `DURATION` for requests in flight (0: cancel at once)",
			Action: notNegative[time.Duration](flagDrainTimeout)},
		cliutil.IDPathFlag(),
		cliutil.QuietFlag(),
		cliutil.MaxLineFlag(),
		cliutil.SkipInvalidFlag(),
		&cli.StringFlag{Name: flagInputFormat, Value: engine.FormatRecords, Destination: &cfg.InputFormat, Action: checkFormat(flagInputFormat),
			Usage: "read `FORMAT`: records (synthpipe's) or openai-batch (OpenAI Batch / vllm run-batch input lines; --backend sglang needs --tokenizer)"},
		&cli.StringFlag{Name: flagOutputFormat, Value: engine.FormatRecords, Destination: &cfg.OutputFormat, Action: checkFormat(flagOutputFormat),
			Usage: "write `FORMAT`: records (synthpipe's) or openai-batch (Batch output lines, failures included)"},
	}
}

// check is a flag's Action that refuses the values bad says are, with why.
func check[T any](name string, bad func(T) bool, why string) func(*cli.Context, T) error {
	return func(_ *cli.Context, v T) error {
		if bad(v) {
			return cliutil.Usagef("--%s %v: %s", name, v, why)
		}
		return nil
	}
}

// notNegative is a flag's Action that refuses a negative number.
func notNegative[T int | time.Duration](name string) func(*cli.Context, T) error {
	return check(name, func(v T) bool { return v < 0 }, "must not be negative")
}

// checkUSD refuses an amount of money that is not a number of 0 or more.
func checkUSD(name string, usd float64) error {
	if math.IsNaN(usd) || math.IsInf(usd, 0) || usd < 0 {
		return cliutil.Usagef("--%s %v: want a number of USD, 0 or more", name, usd)
	}
	return nil
}

// checkFormat is the Action of --input-format and --output-format.
func checkFormat(name string) func(*cli.Context, string) error {
	return func(_ *cli.Context, s string) error {
		if s != engine.FormatRecords && s != engine.FormatOpenAIBatch {
			return cliutil.Usagef("--%s %q: want %s or %s", name, s, engine.FormatRecords, engine.FormatOpenAIBatch)
		}
		return nil
	}
}
