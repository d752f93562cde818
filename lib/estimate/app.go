// Package estimate is the estimate tool: what the rest of a job will cost
// before it runs, in time, tokens and money, on each backend it could run
// on: an SGLang server of one's own (time from a model of its continuous
// batch in its KV cache) or a paid API such as OpenRouter (money from its
// price list).
package estimate

import (
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/conversation"
	"github.com/synthpipe/synthpipe/lib/lengthdist"
)

const (
	flagBy             = "by"
	flagDone           = "done"
	flagLengths        = "lengths"
	flagMaxTokens      = "max-tokens"
	flagBudget         = "budget"
	flagMaxTrainLength = cliutil.FlagMaxTrainLength
	flagURL            = "url"
	flagModel          = "model"
	flagOpenRouterURL  = "openrouter-url"
	flagPriceIn        = "price-in"
	flagPriceOut       = "price-out"
	flagRate           = "rate"
	flagStatus         = "status"
	flagHourlyCost     = "hourly-cost"
	flagConcurrency    = "concurrency"
	flagDraws          = "draws"
	flagSeed           = "seed"
	flagJSON           = "json"
)

// defaultOpenRouterURL is OpenRouter's API base.
const defaultOpenRouterURL = "https://openrouter.ai/api/v1"

// apiKeyEnv holds the key sent with the price list request.
const apiKeyEnv = "OPENROUTER_API_KEY"

// descriptionText is estimate's --help text; {{.Name}} is a constant of
// helpConstants.
const descriptionText = `estimate reads the records still to do (tokenized records, such as
dedupe-resume's output; files, or stdin when none or "-"; gzip and zstd are
read transparently) and prints, per dataset (--by PATH, e.g. dataset; a
done record without a dataset field counts in the dataset its file's folder
names, data/chat/out.jsonl: chat) and in total, how many records and tokens the rest of the job takes and what it
costs on each backend given: the time, the money, and, with --budget, how
many records fit and what an uncut run would spend past the budget.

Answer lengths. The answers to come are drawn from those already made:
--done FILE (the output so far, e.g. out.jsonl; repeatable) gives each
dataset its completion lengths and truncation share, and the tokens it
already holds, which count against --budget as budget-cut --append counts
them. Without a done file, or for a dataset with fewer than {{.MinDoneAnswers}} answers in
it, --lengths SPEC says what answers are expected to look like:
  mean=800,p90=1800     a lognormal with that mean and 90th percentile
  median=300,sigma=0.7  any two of mean, median (p50), p90, p99, sigma
  mean=800              one figure: sigma {{.DefaultSigma}} (p90 about {{.P90Ratio}} x the median)
  mean=800,max=4096     answers stop at 4,096 tokens (counted as truncated)
  lognormal:300,0.7,1500, fixed:N, uniform:MIN,MAX   llm-sim's forms
  file:PATH             lengths one per line, drawn at random
When neither says anything of a dataset, the answers of the other datasets
in the done file serve. --max-tokens caps every answer (generate's limit).

Tokens. Each of --draws futures (default {{.Draws}}, seeded by --seed so that the
estimate is the same every time) draws one answer length per record and
takes the records in input order until the next would pass what is left of
--budget (total tokens, as budget-cut counts them). The report gives the
mean of the records that fit and of their prompt and completion tokens, the
10th, 50th and 90th percentiles of their total, and what an uncut run would
spend past the budget.

Conversations (tokenize-prompts --turns all records, for generate --turns
all): each assistant turn of the source is a request, its answer drawn as
any answer (a done file's conversations give each turn's length). A turn's
prompt is the conversation so far: the turn before's prompt, its answer,
and what the source adds between them (its user and tool turns, at about {{.BytesPerToken}}
bytes of their JSON a token, spread evenly over the turns after the first,
as generate's budget expects). Every turn's prompt is counted as sent
(prompt_tokens, budgets and prices: what was spent, synthpipe-records(7));
prefill is the part a prefix cache does not hold, at best: all of the first
prompt, then only what the source adds, the conversation so far being
cached since its turn before (a server that evicts it between turns, or a
template that renders earlier turns otherwise later, prefills more; paid
APIs are priced without a discount for cached input). A turn that reaches
--max-tokens ends its conversation, as generate ends it; an answer that
departs from the source (generate's "mismatch") is not foreseen, so the
figures are for every turn. Under --budget a conversation fits whole or not
at all (generate may stop one part way, "budget"). The table gains the
turns and prefill columns. The time models send a conversation's later
turns as generate does: each as soon as the turn before is answered, in the
request slot the conversation holds.

Backends, any combination; each is a column of the table:
  --url URL (repeatable): an SGLang server. Its KV cache and running request
    limit come from /server_info, and the time from a model of its
    continuous batch: generate's requests in flight (as many as the cache
    holds, plus {{.QueueMargin}}), admitted first come first served while they fit,
    every running request getting one token per decode step, the newest
    retracted when the cache is full; the steps are counted and turned into
    seconds by the server's speed. That comes from --rate (its tokens per
    second with a full batch), else from sglang:gen_throughput and
    sglang:num_running_reqs on /metrics (SGLang started with
    --enable-metrics) or /v1/loads (recent releases) while it is busy, else
    from the status file of a job running
    against it (--status FILE, generate --status-file: the server's metrics
    as the job last read them, else the job's own output rate), else from
    the done file's latencies: its
    run is replayed through the same model, and each answer's latency
    fitted to the steps it lived through and the tokens generated meanwhile,
    which gives a step's fixed part and its part per running request (a
    small batch steps faster). --hourly-cost prices its hours.
  --model ID (repeatable): a model on OpenRouter (or any API that lists
    prices in OpenRouter's /models shape at --openrouter-url). Prices come
    from its /models list (pricing.prompt and .completion, USD per token),
    or --price-in and --price-out (USD per million tokens). Time comes from
    --rate (the tokens per second the provider gives the whole job), else
    from the done file's answers made with generate --backend openai (one
    request's decode rate and first-token delay) with generate's requests
    in flight ({{.AIMDStart}}, one more per window of answers; --concurrency N if the
    run will use a fixed N).
  Under a budget, a run of generate --token-budget reserves prompt plus
  --max-tokens per request in flight: with --max-tokens given, both models
  hold requests back as generate will, which slows a run whose budget is
  small beside --max-tokens, most of all its end.
--rate N applies to every backend; --rate NAME=N to the backend whose URL or
model id is NAME.

Output: one table, datasets down, with a row for the total (datasets one
after another), and per backend its time and money; lines above it say
where each figure comes from. --json prints one object instead: budget,
seed, draws, backends [{label, kind, url, model, kv_tokens, max_running,
rate, step_seconds, step_seconds_per_request, rate_source, price_in,
price_out (USD per million tokens), price_source, hourly_cost}], datasets
and total [{dataset, records, done_records, spent, budget_left, fit,
conversations, turns, prefill_tokens (with conversations), prompt_tokens, completion_tokens, total_tokens {mean, p10, p50, p90},
uncut_tokens, past_budget, lengths {source, mean, truncated_share},
backends [{label, seconds, hours, usd, steps, uncut_seconds, uncut_usd}]}];
a figure no source gives is null or left out.

Limits: the time model assumes the run has its backend to itself. With a
speed of one figure (--rate, /metrics) a decode step takes as long with a
small batch as with a full one, so the last wave's drain is counted at the
full batch's pace (estimates run long); a done file's fit knows better,
and also counts generate's first second, sized before any answer is known.
A done file written by a run stopped with requests in flight lacks their
answers, the longer ones: its lengths read somewhat short.`

// helpConstants are the tuning constants the description states: those of
// generate's sizing, which estimate models (lib/capacity, lib/conversation),
// and estimate's own.
type helpConstants struct {
	QueueMargin, DefaultSigma, P90Ratio             string
	AIMDStart, MinDoneAnswers, Draws, BytesPerToken int
}

// description is estimate's --help text, with its constants filled in.
func description() string {
	return cliutil.FillHelp("estimate", descriptionText, helpConstants{
		QueueMargin:    cliutil.Percent(capacity.QueueMargin),
		DefaultSigma:   strconv.FormatFloat(lengthdist.DefaultSigma, 'g', -1, 64),
		P90Ratio:       strconv.FormatFloat(lengthdist.P90Ratio(lengthdist.DefaultSigma), 'f', 1, 64),
		AIMDStart:      capacity.AIMDStart,
		MinDoneAnswers: minDoneAnswers,
		Draws:          defaultDraws,
		BytesPerToken:  conversation.BytesPerToken,
	})
}

// NewApp returns a fresh estimate command.
func NewApp() *cliutil.App {
	cfg := new(config)
	return cliutil.NewApp(cliutil.Spec{
		Name:        "estimate",
		Usage:       "what the rest of a job will cost, in time, tokens and money, here or there",
		ArgsUsage:   "[FILE...]",
		Description: description(),
		Flags:       flags(cfg),
		Environment: []cliutil.EnvVar{
			{Name: apiKeyEnv, Meaning: "API key sent with the --openrouter-url /models request (never printed)"},
		},
		ExitCodes: []cliutil.ExitStatus{
			{Code: 75, Meaning: "a server did not answer, or answered without what the estimate needs: try again later"},
			{Code: 77, Meaning: "the price list refused the API key"},
		},
		Examples: []cliutil.Example{
			{Comment: "the rest of a dataset: finish on our SGLang server, or move to OpenRouter?",
				Command: "tokenize-prompts --tokenizer DIR p.jsonl | dedupe-resume --done out.jsonl | estimate --done out.jsonl --budget 10M --url http://gpu1:30000 --model moonshotai/kimi-k2.5"},
			{Comment: "ten datasets before the first answer, with expected lengths and a provider's speed",
				Command: "estimate --by dataset --lengths mean=800,p90=1800,max=10240 --model moonshotai/kimi-k2.5 --rate 2500 data/*/todo.jsonl"},
			{Comment: "from cron, every hour: the hours the rest of chat will take on gpu1, logged",
				Command: "0 * * * * cd /srv/distill && estimate -q --json --done data/chat/out.jsonl --url http://gpu1:30000 data/chat/todo.jsonl.zst | jq -c '{at: now | todate, hours: .total.backends[0].hours}' >> estimate.log"},
		},
		SeeAlso: []string{"generate(1)", "budget-cut(1)", "tokstat(1)", "dedupe-resume(1)", "llm-sim(1)", "synthpipe-records(7)"},
		Action:  func(c *cli.Context) error { return run(c, cfg) },
	})
}

// flags lists estimate's options, each bound to its field of cfg and
// checked where it is declared; what depends on several flags is checked
// by cfg.check.
func flags(cfg *config) []cli.Flag {
	all := answerFlags(cfg)
	all = append(all, backendFlags(cfg)...)
	return append(all, runFlags(cfg)...)
}

// answerFlags are the options for the records' grouping and answers, and
// the budget they are cut to.
func answerFlags(cfg *config) []cli.Flag {
	cfg.budget = -1
	return []cli.Flag{
		&cli.StringFlag{Name: flagBy, EnvVars: cliutil.EnvVars(flagBy), Destination: &cfg.by,
			Usage: "one row per value of this gjson `PATH` of the records (e.g. dataset)"},
		&cli.StringSliceFlag{Name: flagDone, Usage: "the output so far, `FILE` (repeatable; missing = empty): answer lengths, timings, tokens spent",
			Action: func(_ *cli.Context, files []string) error { cfg.done = files; return nil }},
		&cli.StringFlag{Name: flagLengths, Destination: &cfg.lengthsSpec, Usage: "answer lengths when no done file says (`SPEC`: mean=800,p90=1800; see above)"},
		&cli.StringFlag{Name: flagMaxTokens, EnvVars: cliutil.EnvVars(flagMaxTokens),
			Usage: "generate's --max-tokens, `N`: caps every answer; under --budget, what generate --token-budget reserves per request",
			Action: func(_ *cli.Context, s string) error {
				if s == "" {
					return nil
				}
				n, err := cliutil.ParseCount(s)
				if err != nil || n < 1 || n > 1<<30 {
					return cliutil.Usagef("--%s %q: want a positive number of tokens", flagMaxTokens, s)
				}
				cfg.maxTokens = int(n)
				return nil
			}},
		&cli.StringFlag{Name: flagMaxTrainLength, Usage: cliutil.MaxTrainLengthUsage + " (the column \"past train len\"; --json past_train_tokens, past_train_records)",
			Action: func(_ *cli.Context, s string) (err error) {
				cfg.maxTrainLength, err = cliutil.ParseMaxTrainLength(flagMaxTrainLength, s)
				return err
			}},
		&cli.StringFlag{Name: flagBudget, EnvVars: cliutil.EnvVars(flagBudget),
			Usage: "token budget per dataset, `N` (250k, 10M, 1.5G), the done file's tokens counting as spent; 0 is refused with 64, as in every tool",
			Action: func(_ *cli.Context, s string) (err error) {
				cfg.budget, err = cliutil.ParseBudget(flagBudget, s, "for no budget, leave --"+flagBudget+" out (or $"+cliutil.EnvName(flagBudget)+" empty)")
				return err
			}},
	}
}

// backendFlags are the options that name the backends estimated for, and
// their speeds and prices.
func backendFlags(cfg *config) []cli.Flag {
	cfg.rates = map[string]float64{}
	return []cli.Flag{
		&cli.StringSliceFlag{Name: flagURL, Usage: "an SGLang server to estimate for, `URL` (repeatable)",
			Action: func(_ *cli.Context, raws []string) (err error) {
				if cfg.urls, err = backend.NormalizeURLs(flagURL, raws); err != nil {
					return cliutil.Usagef("%v", err)
				}
				return nil
			}},
		&cli.StringSliceFlag{Name: flagModel, Usage: "an OpenRouter model to estimate for, `ID` (repeatable)",
			Action: func(_ *cli.Context, ids []string) error { cfg.models = ids; return nil }},
		&cli.StringFlag{Name: flagOpenRouterURL, Value: defaultOpenRouterURL, EnvVars: cliutil.EnvVars(flagOpenRouterURL), Destination: &cfg.routerURL,
			Usage:  "the API base `URL` whose /models lists the --model prices",
			Action: func(_ *cli.Context, s string) error { cfg.routerURL = strings.TrimSuffix(s, "/"); return nil }},
		&cli.Float64Flag{Name: flagPriceIn, Destination: &cfg.priceIn, Action: priceAction(flagPriceIn, maxPricePerMillion),
			Usage: "prompt price of --model, `USD` per million tokens (instead of the /models list)"},
		&cli.Float64Flag{Name: flagPriceOut, Destination: &cfg.priceOut, Action: priceAction(flagPriceOut, maxPricePerMillion),
			Usage: "completion price of --model, `USD` per million tokens"},
		&cli.StringSliceFlag{Name: flagStatus, Usage: "the status `FILE` of a job running against a --url server (generate --status-file; repeatable): the server's speed as the job sees it",
			Action: func(_ *cli.Context, files []string) error { cfg.statuses = files; return nil }},
		&cli.StringSliceFlag{Name: flagRate, Usage: "generated tokens per second, `[NAME=]N`, of every backend or of the one whose URL or model is NAME (repeatable)",
			Action: func(_ *cli.Context, specs []string) error { return cfg.readRates(specs) }},
		&cli.Float64Flag{Name: flagHourlyCost, Destination: &cfg.hourlyCost, Action: priceAction(flagHourlyCost, maxHourlyCost),
			Usage: "what an hour of each --url server costs, `USD` (its GPUs)"},
		&cli.IntFlag{Name: flagConcurrency, Destination: &cfg.concurrency,
			Usage: "requests in flight on a --model backend timed from per-request rates, `N` (default: generate's adaptive concurrency, from " + strconv.Itoa(capacity.AIMDStart) + " up)",
			Action: func(_ *cli.Context, n int) error {
				if n < 0 {
					return cliutil.Usagef("--%s must not be negative (0: as generate's adaptive concurrency grows)", flagConcurrency)
				}
				return nil
			}},
	}
}

// priceAction is the Action of a price flag (USD) that refuses what is not
// a finite number from 0 to most.
func priceAction(name string, most float64) func(*cli.Context, float64) error {
	return func(_ *cli.Context, v float64) error {
		if err := checkPrice(name, v, most); err != nil {
			return cliutil.Usagef("%v", err)
		}
		return nil
	}
}

// runFlags are the options for the simulated futures and the report.
func runFlags(cfg *config) []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: flagDraws, Value: defaultDraws, Destination: &cfg.draws, Usage: "simulated futures per dataset, `N`",
			Action: func(_ *cli.Context, n int) error {
				if n < 1 || n > maxDraws {
					return cliutil.Usagef("--%s must be between 1 and %d", flagDraws, maxDraws)
				}
				return nil
			}},
		&cli.Uint64Flag{Name: flagSeed, Value: 1, Destination: &cfg.seed, Usage: "seed of the simulated futures, `N`"},
		&cli.BoolFlag{Name: flagJSON, Destination: &cfg.json, Usage: "print one JSON object instead of the table"},
		cliutil.QuietFlag(),
		cliutil.MaxLineFlag(),
		cliutil.SkipInvalidFlag(),
	}
}

// Main runs estimate and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliutil.Main(NewApp(), args, stdin, stdout, stderr)
}
