// Package llmsim is the llm-sim tool: a thin command around lib/sim, the
// simulated SGLang / OpenAI-compatible inference server that the tests,
// benchmarks and demo of synthpipe run against.
package llmsim

import (
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/sim"
)

// Flag names.
const (
	flagAddr              = "addr"
	flagPort              = "port"
	flagURLFile           = "url-file"
	flagModel             = "model"
	flagMaxTotalTokens    = "max-total-tokens"
	flagMaxRunning        = "max-running-requests"
	flagContextLength     = "context-length"
	flagDefaultMaxNew     = "default-max-new-tokens"
	flagStepTime          = "step-time"
	flagPerTokenTime      = "per-token-time"
	flagPrefillTime       = "prefill-time-per-token"
	flagPrefixCache       = "prefix-cache"
	flagAnswerFormat      = "answer-format"
	flagIncremental       = "incremental-streaming"
	flagVocabSize         = "vocab-size"
	flagEOSTokenID        = "eos-token-id"
	flagSeed              = "seed"
	flagLengths           = "lengths"
	flagAPIKeyFile        = "api-key-file"
	flagPromptPrice       = "prompt-price"
	flagCompletionPrice   = "completion-price"
	flagReasoningShare    = "reasoning-share"
	flagFault             = "fault"
	flagRetryAfter        = "retry-after"
	flagSlowFirstTokenDel = "slow-first-token-delay"
	flagAbortStatus       = "abort-status"
	flagStats             = "stats"
	flagDPSize            = "dp-size"
	flagNoMetrics         = "no-metrics"
	flagLoadReports       = "load-reports"
	flagKeyLimit          = "key-limit"
	flagKeyUsage          = "key-usage"
	flagKeyRateLimit      = "key-rate-limit"
)

// envAPIKey holds the key the server demands, when --api-key-file is not given.
const envAPIKey = "LLM_SIM_API_KEY"

// description is llm-sim's --help text.
const description = `llm-sim runs lib/sim: a simulated inference server that speaks SGLang's native
API (/generate, /server_info, /model_info, /health, /abort_request) and the
OpenAI / OpenRouter chat API (/v1/chat/completions, /v1/models, and
OpenRouter's /api/v1/key with --key-limit and --key-usage). GET /metrics
answers SGLang's Prometheus gauges (num_running_reqs, num_queue_reqs,
token_usage, gen_throughput, num_used_tokens, cache_hit_rate; the counters
prompt_tokens_total, cached_tokens_total, generation_tokens_total) to a
client that accepts text/plain, one series per --dp-size rank; GET /v1/loads and
GET /get_load answer SGLang's JSON load reports, which SGLang serves even
without --enable-metrics (--no-metrics and --load-reports none hide them
all, to stand for a server that reports no load). It batches
requests continuously under a KV-cache token budget (--max-total-tokens,
--max-running-requests), retracting requests when the cache is full, so that a
client that sends too much at once sees what a real server would do: a long
queue and slow answers.

Answers are deterministic: output token i of a prompt depends only on the
prompt and i, so a test can check that every answer belongs to its own
request. Answer lengths follow --lengths; time follows --step-time,
--per-token-time and --prefill-time-per-token (all zero: as fast as the
machine allows). With --prefix-cache, a prompt's part already in the cache
(a conversation's earlier turn and its answer) costs no prefill time.
With --answer-format kimi-k2.5 answers follow Kimi-K2.5's output format, so
that a conversation regenerated turn by turn (generate --turns all) goes
through tool loops as with the model. --fault KIND=P injects failures with probability P per
request; a request header X-Sim-Fault: KIND forces one.

It listens only on loopback addresses. When it is ready it prints its base URL
on stdout (or writes it to --url-file, atomically, so a script can wait for
the file). SIGINT, SIGTERM or SIGHUP stop it gracefully (requests in flight are
aborted) and it exits 0.`

// NewApp returns a fresh llm-sim command.
func NewApp() *cliutil.App {
	cfg := new(config)
	return cliutil.NewApp(cliutil.Spec{
		Name:        "llm-sim",
		Usage:       "serve a simulated SGLang / OpenAI-compatible LLM server on a loopback address",
		ArgsUsage:   "",
		Description: description,
		Flags:       flags(cfg),
		Environment: []cliutil.EnvVar{
			{Name: envAPIKey, Meaning: "the API key clients must send, when --api-key-file is not given"},
		},
		ExitCodes: []cliutil.ExitStatus{
			{Code: exitcode.OK, Meaning: "stopped by SIGINT, SIGTERM or SIGHUP, the normal way to stop it (requests in flight are aborted)"},
			{Code: exitcode.Usage, Meaning: "usage error: unknown flag, bad flag value, an address that is not a loopback one"},
			{Code: exitcode.TempFail, Meaning: "the address cannot be listened on (the port is taken): try another port, or later"},
			{Code: exitcode.HungUp, Meaning: "a second SIGHUP came before the graceful stop ended"},
			{Code: exitcode.Interrupted, Meaning: "a second SIGINT came before the graceful stop ended"},
			{Code: exitcode.Terminated, Meaning: "a second SIGTERM came before the graceful stop ended"},
		},
		Examples: []cliutil.Example{
			{Comment: "a server shaped like one GPU running an 8B model, answers of ~2.3k tokens",
				Command: "llm-sim --port 30000 --lengths lognormal:2300,0.6,10240 --per-token-time 20us --step-time 10ms"},
			{Comment: "a flaky server for a retry test; a script waits for url.txt",
				Command: "llm-sim --url-file url.txt --fault http500=0.05 --fault rate_limit=0.05 --fault reset=0.02 &"},
			{Comment: "a server that answers in Kimi-K2.5's format and keeps a prefix cache, for conversations regenerated turn by turn",
				Command: "llm-sim --url-file url.txt --answer-format kimi-k2.5 --prefix-cache 200000 --prefill-time-per-token 20us &"},
			{Comment: "the whole pipeline against it",
				Command: `generate --url "$(cat url.txt)" --max-tokens 512 < req.jsonl > out.jsonl`},
		},
		SeeAlso: []string{"generate(1)", "synthpipe-records(7)"},
		Action:  func(c *cli.Context) error { return run(c, cfg) },
	})
}

// flags lists llm-sim's options, each bound to its field of cfg (most to
// cfg.sim's) and checked where it is declared; what depends on several
// flags is checked by cfg.check. The flags show the defaults of
// sim.Default, and change only what is given.
func flags(cfg *config) []cli.Flag {
	cfg.sim = sim.Default()
	all := serverFlags(cfg)
	all = append(all, answerFlags(cfg)...)
	all = append(all, accountFlags(cfg)...)
	return append(all, faultFlags(cfg)...)
}

// serverFlags are the options for where it listens and the server's size.
func serverFlags(cfg *config) []cli.Flag {
	def, s := sim.Default(), &cfg.sim
	return []cli.Flag{
		&cli.StringFlag{Name: flagAddr, Value: "127.0.0.1:0", Destination: &cfg.addr, Usage: "listen on this loopback `HOST:PORT` (port 0: any free port)"},
		&cli.IntFlag{Name: flagPort, Destination: &cfg.port, Usage: "listen on 127.0.0.1:`PORT` (overrides the port of --addr)",
			Action: func(_ *cli.Context, port int) error {
				if port < 0 || port > 65535 {
					return cliutil.Usagef("--%s %d: not a TCP port", flagPort, port)
				}
				return nil
			}},
		&cli.StringFlag{Name: flagURLFile, Destination: &cfg.urlFile, Usage: "write the base URL to `FILE` (atomically: a regular file or none; a symlink, FIFO or device is refused) instead of stdout"},
		&cli.StringFlag{Name: flagModel, Value: def.ModelName, Destination: &s.ModelName, Usage: "served model `NAME`"},
		&cli.IntFlag{Name: flagMaxTotalTokens, Value: def.MaxTotalTokens, Destination: &s.MaxTotalTokens, Usage: "KV cache size in `TOKENS` shared by running requests"},
		&cli.IntFlag{Name: flagMaxRunning, Value: def.MaxRunningRequests, Destination: &s.MaxRunningRequests, Usage: "most requests in the decode batch, `N`"},
		&cli.IntFlag{Name: flagContextLength, Value: def.ContextLength, Destination: &s.ContextLength, Usage: "context window in `TOKENS`; longer requests get 400"},
		&cli.IntFlag{Name: flagDefaultMaxNew, Value: def.DefaultMaxNewTokens, Destination: &s.DefaultMaxNewTokens, Usage: "max_new_tokens when a /generate request has none, `N` (SGLang's is 128)"},
		// Not bound: the flag shows 1, sim.Default's 0 means the same.
		&cli.IntFlag{Name: flagDPSize, Value: 1, Usage: "data-parallel ranks `N`, each with its own batch and KV cache of --max-total-tokens; requests go to them in turn and /metrics labels each with dp_rank (SGLang --dp-size)",
			Action: func(_ *cli.Context, n int) error { s.DataParallel = n; return nil }},
	}
}

// answerFlags are the options for the server's timing, the API it speaks
// and its answers.
func answerFlags(cfg *config) []cli.Flag {
	def, s := sim.Default(), &cfg.sim
	return []cli.Flag{
		&cli.DurationFlag{Name: flagStepTime, Destination: &s.StepTime, Usage: "fixed wall time of one decode step (`DURATION`, e.g. 2ms)"},
		&cli.DurationFlag{Name: flagPerTokenTime, Destination: &s.PerTokenTime, Usage: "step time added per request in the batch (`DURATION`, e.g. 50us)"},
		&cli.DurationFlag{Name: flagPrefillTime, Destination: &s.PrefillTimePerToken, Usage: "step time added per prompt token admitted and not found in the prefix cache (`DURATION`)"},
		&cli.IntFlag{Name: flagPrefixCache, Destination: &s.PrefixCacheTokens, Usage: "keep a radix-style prefix cache of `TOKENS` (0: none, as SGLang's --disable-radix-cache): the part of a prompt it holds (an earlier prompt, or an earlier prompt and its answer) is not prefilled again and is reported as cached_tokens; least recently used entries are evicted when it is full"},
		&cli.BoolFlag{Name: flagIncremental, Destination: &s.IncrementalStreaming, Usage: "stream only new text and ids in each /generate chunk (SGLang --incremental-streaming-output)"},
		&cli.BoolFlag{Name: flagNoMetrics, Destination: &s.NoMetrics, Usage: "answer /metrics with 404, as SGLang does without --enable-metrics (its default)"},
		&cli.StringFlag{Name: flagLoadReports, Value: "all", Usage: "SGLang's JSON load reports to serve, `WHICH`: all (/v1/loads and /get_load, as recent releases), get_load (as older ones) or none (as the oldest releases, or a proxy that passes on only requests; with --no-metrics no load is reported at all)",
			Action: func(_ *cli.Context, which string) error {
				switch which {
				case "all":
					s.LoadReports = sim.LoadReportsAll
				case sim.LoadReportsGetLoad, sim.LoadReportsNone:
					s.LoadReports = which
				default:
					return cliutil.Usagef("--%s %q: say all, %s or %s", flagLoadReports, which, sim.LoadReportsGetLoad, sim.LoadReportsNone)
				}
				return nil
			}},
		&cli.IntFlag{Name: flagVocabSize, Value: def.VocabSize, Destination: &s.VocabSize, Usage: "vocabulary size `N`: prompt ids must be below it, as are generated ids (the default is the bundled Kimi-K2.5 tokenizer's)"},
		&cli.StringFlag{Name: flagAnswerFormat, Value: "words", Usage: "how answers are written, `FORMAT`: words (ids from the prompt's hash, shown as words) or kimi-k2.5 (a /generate answer to input_ids in the bundled Kimi-K2.5 tokenizer's ids as the model writes it: reasoning after a prompt ending in <think>, then </think>, then content, or calls of the declared tools the last user turn names, as functions.NAME:INDEX, then <|im_end|>; chat answers call the named tools under the same ids)",
			Action: func(_ *cli.Context, f string) error {
				switch f {
				case "words":
					s.AnswerFormat = sim.AnswerWords
				case sim.AnswerKimiK25:
					s.AnswerFormat = f
				default:
					return cliutil.Usagef("--%s %q: say words or %s", flagAnswerFormat, f, sim.AnswerKimiK25)
				}
				return nil
			}},
		&cli.IntFlag{Name: flagEOSTokenID, Value: def.EOSTokenID, Destination: &s.EOSTokenID, Usage: "end-of-sequence token `ID`"},
		&cli.Uint64Flag{Name: flagSeed, Value: def.Seed, Destination: &s.Seed, Usage: "`SEED` for answer lengths and injected faults"},
		&cli.StringFlag{Name: flagLengths, Value: def.Lengths.String(), Usage: "answer lengths (`DIST`): fixed:N, uniform:MIN,MAX, lognormal:MEDIAN,SIGMA[,MAX], file:PATH or figures such as mean=800,p90=1800",
			Action: func(_ *cli.Context, spec string) (err error) {
				if s.Lengths, err = sim.ParseLengthDist(spec); err != nil {
					return cliutil.Usagef("--%s: %v", flagLengths, strings.TrimPrefix(err.Error(), "sim: "))
				}
				return nil
			}},
	}
}

// accountFlags are the options for the API key and what answers cost.
func accountFlags(cfg *config) []cli.Flag {
	def, s := sim.Default(), &cfg.sim
	return []cli.Flag{
		&cli.StringFlag{Name: flagAPIKeyFile, Destination: &cfg.apiKeyFile, Usage: "demand the key in `FILE` as a Bearer token (else $" + envAPIKey + "; none: no auth)"},
		&cli.Float64Flag{Name: flagPromptPrice, Value: def.PromptPrice * perMillion, DefaultText: perMillionText(def.PromptPrice), Usage: "prompt price in `USD` per million tokens",
			Action: func(_ *cli.Context, usd float64) error { s.PromptPrice = usd / perMillion; return nil }},
		&cli.Float64Flag{Name: flagCompletionPrice, Value: def.CompletionPrice * perMillion, DefaultText: perMillionText(def.CompletionPrice), Usage: "completion price in `USD` per million tokens (negative: a variable price, listed as -1 as OpenRouter lists its routers')",
			Action: func(_ *cli.Context, usd float64) error { s.CompletionPrice = usd / perMillion; return nil }},
		&cli.Float64Flag{Name: flagReasoningShare, Value: def.ReasoningShare, Destination: &s.ReasoningShare, Usage: "share of a chat answer spent on reasoning (`FRACTION`)"},
		&cli.Float64Flag{Name: flagKeyLimit, Destination: &s.KeyLimit, Usage: "the API key's credit limit in `USD`, reported by GET /api/v1/key; chat answers 402 once usage reaches it (0: no limit)"},
		&cli.Float64Flag{Name: flagKeyUsage, Destination: &s.KeyUsage, Usage: "what the key had spent before, in `USD`; chat answers' usage.cost adds to it"},
		&cli.IntFlag{Name: flagKeyRateLimit, Destination: &s.KeyRateLimit, Usage: "requests per " + sim.KeyRateInterval + " that GET /api/v1/key reports, `N` (reported only)"},
	}
}

// faultFlags are the options for the faults injected, and --stats.
func faultFlags(cfg *config) []cli.Flag {
	def, s := sim.Default(), &cfg.sim
	return []cli.Flag{
		&cli.StringSliceFlag{Name: flagFault, Usage: "inject fault `KIND=P` with probability P (repeatable); kinds: " + faultKindList(),
			Action: func(_ *cli.Context, specs []string) error {
				for _, spec := range specs {
					if err := setFault(&s.Faults, spec); err != nil {
						return cliutil.Usagef("--%s %q: %v", flagFault, spec, err)
					}
				}
				return nil
			}},
		&cli.DurationFlag{Name: flagRetryAfter, Value: def.Faults.RetryAfter, Destination: &s.Faults.RetryAfter, Usage: "Retry-After of injected 429s (`DURATION`, whole seconds)"},
		&cli.DurationFlag{Name: flagSlowFirstTokenDel, Value: def.Faults.SlowFirstTokenDelay, Destination: &s.Faults.SlowFirstTokenDelay, Usage: "delay of the slow_first_token fault (`DURATION`)"},
		&cli.IntFlag{Name: flagAbortStatus, Value: def.Faults.AbortStatusCode, DefaultText: "0", Destination: &s.Faults.AbortStatusCode, Usage: "status_code of injected aborts (`CODE`: 0 graceful, 400, 500, 503)"},
		&cli.BoolFlag{Name: flagStats, Destination: &cfg.stats, Usage: "print the server's counters as JSON on stderr when it stops"},
	}
}

// Main runs llm-sim and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliutil.Main(NewApp(), args, stdin, stdout, stderr)
}

// perMillionText shows a price per token as the flags take it, in USD per
// million tokens, without the float noise of the conversion (0.1, not
// 0.09999999999999999).
func perMillionText(perToken float64) string {
	return strconv.FormatFloat(perToken*perMillion, 'g', 6, 64)
}
