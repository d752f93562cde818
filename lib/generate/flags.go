package generate

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/thinking"
)

// defaultBackend is --backend's default.
var defaultBackend = backend.SGLang

// backendUsage lists the backends for --help, the default first.
func backendUsage() string {
	items := []string{defaultBackend.Name + " (" + defaultBackend.About + ")"}
	for _, k := range backend.Kinds() {
		if k != defaultBackend {
			items = append(items, k.Name+" ("+k.About+")")
		}
	}
	return "server API (`KIND`): " + orList(items)
}

func envs(flag string) []string { return []string{cliutil.EnvName(flag)} }

// serversDefault is the default shown for a sampling option that is sent
// only when given.
const serversDefault = "the server's"

// flags lists generate's options, grouped as the man page shows them.
func flags() []cli.Flag {
	return []cli.Flag{
		// Where and what.
		&cli.StringFlag{Name: flagBackend, Value: defaultBackend.Name, EnvVars: envs(flagBackend), Usage: backendUsage()},
		&cli.StringSliceFlag{Name: flagURL, EnvVars: envs(flagURL),
			Usage: "server base `URL` (repeatable: requests are spread over all), e.g. http://gpu1:30000 or https://openrouter.ai/api/v1"},
		&cli.StringFlag{Name: flagModel, EnvVars: envs(flagModel), Usage: "model `NAME` for openai backends"},
		&cli.StringFlag{Name: flagAPIKeyFile, Usage: "read the API key from `FILE` (else $OPENROUTER_API_KEY or $OPENAI_API_KEY)"},
		&cli.StringFlag{Name: flagReferer, Usage: "OpenRouter HTTP-Referer attribution `URL`"},
		&cli.StringFlag{Name: flagTitle, Usage: "OpenRouter X-Title attribution `NAME`"},
		// Sampling.
		&cli.IntFlag{Name: flagMaxTokens, Value: defaultMaxTokens, EnvVars: envs(flagMaxTokens),
			Usage: "most tokens per answer, `N` (always sent: SGLang's own default of 128 truncates silently); capped per request at what the prompt leaves of the context length"},
		&cli.IntFlag{Name: flagContextLength, DefaultText: "the servers'", EnvVars: envs(flagContextLength),
			Usage: "the model's context length in `TOKENS`: each request's max tokens is capped at it minus the prompt (not given: the smallest the servers report, SGLang's /server_info or the model list's context_length; with --concurrency N an OpenAI-compatible server's list is not read)"},
		&cli.IntFlag{Name: flagMinRoom, Value: 1, EnvVars: envs(flagMinRoom),
			Usage: "a prompt that leaves fewer than `N` tokens of the context length for its answer is not sent: it goes to --errors as context_overflow"},
		// Unset sampling options are not sent: the server's defaults apply.
		&cli.Float64Flag{Name: flagTemperature, DefaultText: serversDefault, Usage: "sampling temperature `T`, 0 or more (0: greedy; at most 2 for chat backends)"},
		&cli.Float64Flag{Name: flagTopP, DefaultText: serversDefault, Usage: "nucleus sampling `P`, above 0 and at most 1"},
		&cli.IntFlag{Name: flagTopK, DefaultText: serversDefault, Usage: "top-k sampling `K`, 1 or more (-1: no limit)"},
		&cli.Float64Flag{Name: flagMinP, DefaultText: serversDefault, Usage: "min-p sampling `P`, from 0 to 1"},
		&cli.StringSliceFlag{Name: flagStop, Usage: "stop `STRING` (repeatable)"},
		&cli.IntSliceFlag{Name: flagStopTokenID, Usage: "stop token `ID` (repeatable)"},
		&cli.Int64Flag{Name: flagSeed, DefaultText: serversDefault, Usage: "sampling `SEED` (with --samples, sample k is sent with SEED+k-1, SEED 0 when not given)"},
		&cli.IntFlag{Name: flagSamples, Value: 1, EnvVars: envs(flagSamples),
			Usage: "`N` answers per prompt, each its own record with a seed of its own: sample 1 keeps the prompt's id, sample k is ID#k (see \"Several answers per prompt\")"},
		&cli.StringFlag{Name: flagReasoningEffort, Usage: "reasoning effort `LEVEL` for openai backends: low, medium, high"},
		&cli.IntFlag{Name: flagReasoningMaxTokens, Usage: "reasoning token limit `N` for openai backends"},
		&cli.StringFlag{Name: flagExtra, Usage: "`JSON` object merged into every request body"},
		&cli.StringFlag{Name: flagTokenizer, EnvVars: envs(flagTokenizer),
			Usage: "openai backends: add output_ids by rendering each answer with the chat template and tokenizer in `DIR`"},
		&cli.StringFlag{Name: flagTurns, Value: turnsLast, EnvVars: envs(flagTurns),
			Usage: "`WHICH` turns to generate: last (one answer per record) or all (regenerate every assistant turn of a tokenize-prompts --turns all conversation " +
				"on the model's own answers; the source's tool results are spliced in; sglang needs --tokenizer)"},
		chat.ToolDeclarationFlag(),
		thinking.Flags()[0], thinking.Flags()[1],
		// Failures.
		&cli.StringFlag{Name: flagErrors, EnvVars: envs(flagErrors),
			Usage: "write the records that failed to `FILE` (re-feed it to retry exactly those)"},
		&cli.IntFlag{Name: flagRetries, Value: 5, Usage: "retry a retryable failure up to `N` times (attempts = N+1)"},
		&cli.DurationFlag{Name: flagTimeout, Value: 30 * time.Minute, Usage: "give up on one attempt after `DURATION` (then retry)"},
		&cli.BoolFlag{Name: flagStream, Usage: "stream answers (detects dead connections and slow first tokens sooner)"},
		&cli.DurationFlag{Name: flagMaxRetryWait, Value: defaultMaxRetryWait,
			Usage: "wait at most `DURATION` before a retry, whatever a server's Retry-After asks (a year, a date in 9999)"},
		&cli.DurationFlag{Name: flagIdleTimeout, Value: defaultIdleTimeout,
			Usage: "with --stream: retry an attempt whose server sent nothing for `DURATION`; it must outlast the server's queueing (0: no limit)"},
		&cli.StringFlag{Name: flagMaxAnswerMemory, Value: "1Gi",
			Usage: "the answers being received hold at most `SIZE` bytes together (one alone at most 256Mi); one that would pass it fails and is retried"},
		// Scheduling.
		&cli.StringFlag{Name: flagConcurrency, Value: "auto",
			Usage: "requests in flight per server: `N` or auto (sized from the server's KV cache, or AIMD for openai)"},
		&cli.BoolFlag{Name: flagShared, EnvVars: envs(flagShared),
			Usage: "other runs use the server(s) too: where a server reports no load (no SGLang /metrics, /v1/loads or /get_load), measure its queue with one-token probes and share it (\"Several runs, one server\"; scripts/fanout.sh sets it)"},
		&cli.BoolFlag{Name: flagOrdered, Usage: "write results in input order, not as they complete"},
		&cli.IntFlag{Name: flagReorderWindow, Value: 4096, Usage: "with --ordered: hold at most `N` records waiting for an earlier one"},
		// Budgets.
		&cli.StringFlag{Name: flagTokenBudget, EnvVars: envs(flagTokenBudget),
			Usage: "write at most `N` tokens (250k, 10M), counted like budget-cut; requests in flight reserve prompt + --max-tokens; 0 is refused with 64 (as budget-cut --tokens 0 is): for no budget, leave it out"},
		&cli.StringSliceFlag{Name: flagAlready, Usage: "the tokens of this earlier output `FILE` count against --token-budget (repeatable; missing = empty)"},
		&cli.BoolFlag{Name: flagRequireSameParams, EnvVars: envs(flagRequireSameParams),
			Usage: "refuse (exit 65) when --already records were made with another backend, model or sampling parameters than this run's, instead of warning"},
		&cli.StringFlag{Name: flagCount, Value: "total", Usage: "what --token-budget counts (`MODE`): total, prompt or completion"},
		&cli.BoolFlag{Name: flagDrain, Usage: "no effect, accepted so that older scripts run: a budget stop waits for the requests in flight, leaving none to cancel"},
		&cli.Float64Flag{Name: flagCostBudget, Usage: "spend at most `USD` (usage.cost; requests in flight reserve their worst case); 0 is refused with 64: for no cost budget, leave it out"},
		&cli.BoolFlag{Name: flagOverKeyLimit, Usage: "go on when --cost-budget is more than the OpenRouter key can still spend (GET /key); the run then stops with 77 when the key runs out"},
		&cli.Float64Flag{Name: flagMaxPrice, DefaultText: "from the server's /models", Usage: "worst-case price in `USD` per million tokens, for --cost-budget"},
		// Progress and stopping.
		&cli.DurationFlag{Name: flagProgressInterval, Value: 30 * time.Second, Usage: "print progress every `DURATION` when stderr is not a terminal (0: never)"},
		&cli.StringFlag{Name: flagStatusFile, EnvVars: envs(flagStatusFile),
			Usage: "rewrite `FILE` (atomically: a regular file or none; a symlink, FIFO or device is refused) every --progress-interval and at exit with the run's state as JSON; see generate(1) STATUS FILE"},
		&cli.StringFlag{Name: flagMetricsListen, Usage: "serve the status file's figures in the Prometheus text format on http://`HOST:PORT`/metrics while the run lasts (127.0.0.1:PORT keeps them on this machine; port 0 picks a free one, named on stderr)"},
		&cli.Int64Flag{Name: flagTotal, DefaultText: "counted when the input is a regular file", Usage: "`N` records expected, for the ETA"},
		&cli.DurationFlag{Name: flagDrainTimeout, Value: 30 * time.Second, Usage: "on SIGINT, SIGTERM or SIGHUP, wait up to `DURATION` for requests in flight (0: cancel at once)"},
		cliutil.IDPathFlag(),
		cliutil.QuietFlag(),
		cliutil.MaxLineFlag(),
		cliutil.SkipInvalidFlag(),
		inputFormatFlag(), outputFormatFlag(),
	}
}
