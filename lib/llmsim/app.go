// Package llmsim is the llm-sim tool: a thin command around lib/sim, the
// simulated SGLang / OpenAI-compatible inference server that the tests,
// benchmarks and demo of synthpipe run against.
package llmsim

import (
	"io"
	"strconv"

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

// NewApp returns a fresh llm-sim command.
func NewApp() *cli.App {
	// The flags show the defaults of sim.Default, and change only what is given.
	def := sim.Default()
	return cliutil.NewApp(cliutil.Spec{
		Name:      "llm-sim",
		Usage:     "serve a simulated SGLang / OpenAI-compatible LLM server on a loopback address",
		ArgsUsage: "",
		Description: `llm-sim runs lib/sim: a simulated inference server that speaks SGLang's native
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
aborted) and it exits 0.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: flagAddr, Value: "127.0.0.1:0", Usage: "listen on this loopback `HOST:PORT` (port 0: any free port)"},
			&cli.IntFlag{Name: flagPort, Usage: "listen on 127.0.0.1:`PORT` (overrides the port of --addr)"},
			&cli.StringFlag{Name: flagURLFile, Usage: "write the base URL to `FILE` (atomically: a regular file or none; a symlink, FIFO or device is refused) instead of stdout"},
			&cli.StringFlag{Name: flagModel, Value: def.ModelName, Usage: "served model `NAME`"},
			&cli.IntFlag{Name: flagMaxTotalTokens, Value: def.MaxTotalTokens, Usage: "KV cache size in `TOKENS` shared by running requests"},
			&cli.IntFlag{Name: flagMaxRunning, Value: def.MaxRunningRequests, Usage: "most requests in the decode batch, `N`"},
			&cli.IntFlag{Name: flagContextLength, Value: def.ContextLength, Usage: "context window in `TOKENS`; longer requests get 400"},
			&cli.IntFlag{Name: flagDefaultMaxNew, Value: def.DefaultMaxNewTokens, Usage: "max_new_tokens when a /generate request has none, `N` (SGLang's is 128)"},
			&cli.IntFlag{Name: flagDPSize, Value: 1, Usage: "data-parallel ranks `N`, each with its own batch and KV cache of --max-total-tokens; requests go to them in turn and /metrics labels each with dp_rank (SGLang --dp-size)"},
			&cli.DurationFlag{Name: flagStepTime, Usage: "fixed wall time of one decode step (`DURATION`, e.g. 2ms)"},
			&cli.DurationFlag{Name: flagPerTokenTime, Usage: "step time added per request in the batch (`DURATION`, e.g. 50us)"},
			&cli.DurationFlag{Name: flagPrefillTime, Usage: "step time added per prompt token admitted and not found in the prefix cache (`DURATION`)"},
			&cli.IntFlag{Name: flagPrefixCache, Usage: "keep a radix-style prefix cache of `TOKENS` (0: none, as SGLang's --disable-radix-cache): the part of a prompt it holds (an earlier prompt, or an earlier prompt and its answer) is not prefilled again and is reported as cached_tokens; least recently used entries are evicted when it is full"},
			&cli.BoolFlag{Name: flagIncremental, Usage: "stream only new text and ids in each /generate chunk (SGLang --incremental-streaming-output)"},
			&cli.BoolFlag{Name: flagNoMetrics, Usage: "answer /metrics with 404, as SGLang does without --enable-metrics (its default)"},
			&cli.StringFlag{Name: flagLoadReports, Value: "all", Usage: "SGLang's JSON load reports to serve, `WHICH`: all (/v1/loads and /get_load, as recent releases), get_load (as older ones) or none (as the oldest releases, or a proxy that passes on only requests; with --no-metrics no load is reported at all)"},
			&cli.IntFlag{Name: flagVocabSize, Value: def.VocabSize, Usage: "vocabulary size `N`: prompt ids must be below it, as are generated ids (the default is the bundled Kimi-K2.5 tokenizer's)"},
			&cli.StringFlag{Name: flagAnswerFormat, Value: "words", Usage: "how answers are written, `FORMAT`: words (ids from the prompt's hash, shown as words) or kimi-k2.5 (a /generate answer to input_ids in the bundled Kimi-K2.5 tokenizer's ids as the model writes it: reasoning after a prompt ending in <think>, then </think>, then content, or calls of the declared tools the last user turn names, as functions.NAME:INDEX, then <|im_end|>; chat answers call the named tools under the same ids)"},
			&cli.IntFlag{Name: flagEOSTokenID, Value: def.EOSTokenID, Usage: "end-of-sequence token `ID`"},
			&cli.Uint64Flag{Name: flagSeed, Value: def.Seed, Usage: "`SEED` for answer lengths and injected faults"},
			&cli.StringFlag{Name: flagLengths, Value: "fixed:64", Usage: "answer lengths (`DIST`): fixed:N, uniform:MIN,MAX, lognormal:MEDIAN,SIGMA[,MAX], file:PATH or figures such as mean=800,p90=1800"},
			&cli.StringFlag{Name: flagAPIKeyFile, Usage: "demand the key in `FILE` as a Bearer token (else $" + envAPIKey + "; none: no auth)"},
			&cli.Float64Flag{Name: flagPromptPrice, Value: def.PromptPrice * perMillion, DefaultText: perMillionText(def.PromptPrice), Usage: "prompt price in `USD` per million tokens"},
			&cli.Float64Flag{Name: flagCompletionPrice, Value: def.CompletionPrice * perMillion, DefaultText: perMillionText(def.CompletionPrice), Usage: "completion price in `USD` per million tokens (negative: a variable price, listed as -1 as OpenRouter lists its routers')"},
			&cli.Float64Flag{Name: flagReasoningShare, Value: def.ReasoningShare, Usage: "share of a chat answer spent on reasoning (`FRACTION`)"},
			&cli.Float64Flag{Name: flagKeyLimit, Usage: "the API key's credit limit in `USD`, reported by GET /api/v1/key; chat answers 402 once usage reaches it (0: no limit)"},
			&cli.Float64Flag{Name: flagKeyUsage, Usage: "what the key had spent before, in `USD`; chat answers' usage.cost adds to it"},
			&cli.IntFlag{Name: flagKeyRateLimit, Usage: "requests per 10s that GET /api/v1/key reports, `N` (reported only)"},
			&cli.StringSliceFlag{Name: flagFault, Usage: "inject fault `KIND=P` with probability P (repeatable); kinds: " + faultKindList()},
			&cli.DurationFlag{Name: flagRetryAfter, Value: def.Faults.RetryAfter, Usage: "Retry-After of injected 429s (`DURATION`, whole seconds)"},
			&cli.DurationFlag{Name: flagSlowFirstTokenDel, Value: def.Faults.SlowFirstTokenDelay, Usage: "delay of the slow_first_token fault (`DURATION`)"},
			&cli.IntFlag{Name: flagAbortStatus, Value: def.Faults.AbortStatusCode, DefaultText: "0", Usage: "status_code of injected aborts (`CODE`: 0 graceful, 400, 500, 503)"},
			&cli.BoolFlag{Name: flagStats, Usage: "print the server's counters as JSON on stderr when it stops"},
		},
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
		Action:  run,
	})
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
