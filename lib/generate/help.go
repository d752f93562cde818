package generate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/engine"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/runview"
)

// helpConstants are the tuning constants the description states, formatted
// from the code that applies them, so that the help cannot drift from it.
type helpConstants struct {
	QueueMargin, AloneQueued, ShareInterval, MaxRetryWait, IdleTimeout, MaxAnswer string
	MetricsEvery, KVFull, LimitFor, LiveRedraw                                    string
	ShareStart, ShareQueueOver, ShareQueueTarget, ReportChange                    string
	ProbeEvery, ProbeOver, ProbeTarget, ProbeUnder, ProbeDeepest                  string
	AIMDStart, ETASamples, LimitPolls, MinRoom                                    int
}

// helpValues formats the constants for the description.
func helpValues() helpConstants {
	return helpConstants{
		QueueMargin: cliutil.Percent(capacity.QueueMargin),
		// A run alone sends its margin beyond what the server runs: that
		// share of all it holds is queued.
		AloneQueued:      fmt.Sprintf("%.0f%%", 100*capacity.QueueMargin/(1+capacity.QueueMargin)),
		ShareInterval:    seconds(capacity.ShareInterval),
		MaxRetryWait:     seconds(defaultMaxRetryWait),
		IdleTimeout:      seconds(defaultIdleTimeout),
		MaxAnswer:        fmt.Sprintf("%d MiB", backend.DefaultMaxResponseBytes>>20),
		MetricsEvery:     seconds(engine.DefaultMetricsEvery),
		KVFull:           cliutil.Percent(engine.DefaultKVFull),
		LimitFor:         seconds(engine.DefaultLimitFor),
		LiveRedraw:       every(runview.LiveRedraw),
		ShareStart:       portion(capacity.ShareStart),
		ShareQueueOver:   cliutil.Percent(capacity.ShareQueueOver),
		ShareQueueTarget: cliutil.Percent(capacity.ShareQueueTarget),
		ReportChange:     portion(capacity.ReportChange),
		ProbeEvery:       fractionNames[capacity.ProbesPerLatency],
		ProbeOver:        cliutil.Percent(capacity.ProbeOver),
		ProbeTarget:      cliutil.Percent(capacity.ProbeTarget),
		ProbeUnder:       cliutil.Percent(capacity.ProbeUnder),
		ProbeDeepest:     portion(capacity.ProbeDeepest),
		AIMDStart:        capacity.AIMDStart,
		ETASamples:       engine.MinETASamples,
		LimitPolls:       engine.DefaultLimitPolls,
		MinRoom:          defaultMinRoom,
	}
}

// fractionNames are the fractions 1/n the help writes in words.
var fractionNames = map[int]string{2: "half", 3: "third", 4: "quarter", 5: "fifth", 8: "eighth", 10: "tenth"}

// portion is a share as the help writes it: 1/8 is "an eighth", 0.25 "a
// quarter"; a share that is no such fraction is a percentage.
func portion(share float64) string {
	n := int(math.Round(1 / share))
	name, ok := fractionNames[n]
	if !ok || math.Abs(share*float64(n)-1) > 1e-9 {
		return cliutil.Percent(share)
	}
	if strings.ContainsRune("aeiou", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
}

// every is a period as "every ..." reads: a second is "second".
func every(d time.Duration) string {
	if d == time.Second {
		return "second"
	}
	return seconds(d)
}

// seconds is a duration as the help writes it: "0.5s", "20s", "5m".
func seconds(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// description is generate's long help, with its constants filled in.
func description() string {
	return cliutil.FillHelp("generate", descriptionText, helpValues())
}

// environment lists the variables generate reads besides its flags'.
func environment() []cliutil.EnvVar {
	return []cliutil.EnvVar{
		{Name: "OPENROUTER_API_KEY", Meaning: "API key sent as a Bearer token (first choice)"},
		{Name: "OPENAI_API_KEY", Meaning: "API key, when OPENROUTER_API_KEY is not set"},
		{Name: "TERM", Meaning: "dumb: progress as plain lines every --progress-interval, never redrawn"},
		{Name: "NO_COLOR", Meaning: "set and not empty: the progress bar without colours"},
		{Name: "COLUMNS", Meaning: "the width the progress bar fits in when the terminal does not tell its own (default " + strconv.Itoa(runview.DefaultColumns) + ")"},
	}
}

// exitCodes says what each exit status of generate means.
func exitCodes() []cliutil.ExitStatus {
	return []cliutil.ExitStatus{
		{Code: exitcode.OK, Meaning: "success: at least one record succeeded (failures are in --errors), or the only failures were records refused for themselves (HTTP 400); also when a downstream reader (head, budget-cut) closed the pipe"},
		{Code: exitcode.DataErr, Meaning: "a record that cannot be sent (refused unless --skip-invalid), or, with --require-same-params, --already records made with another backend, model or sampling parameters"},
		{Code: exitcode.TempFail, Meaning: "try again later: no server could be reached after the retries, or no record succeeded and at least one failed after all its retries (server errors, HTML or garbage answers, timeouts)"},
		{Code: exitcode.NoPerm, Meaning: "a server refused the run: bad API key (401), no credits (402), refused or moderated (403), or a redirect that is not followed; or --cost-budget is above what the API key can still spend (without --over-key-limit)"},
	}
}

// examples are the help's closing examples.
func examples() []cliutil.Example {
	return []cliutil.Example{
		{Comment: "the pipeline: tokenize, skip what is done, generate, stop at 10M tokens",
			Command: "tokenize-prompts --tokenizer DIR p.jsonl | dedupe-resume --done out.jsonl | generate --backend sglang --url http://gpu1:30000 --max-tokens 8192 --errors err.jsonl --token-budget 10M --already out.jsonl | budget-cut --tokens 10M -o out.jsonl --append"},
		{Comment: "two SGLang servers, then retry exactly the failures",
			Command: "generate --url http://gpu1:30000 --url http://gpu2:30000 --errors err.jsonl < req.jsonl > out.jsonl; generate --url http://gpu1:30000 --errors err2.jsonl < err.jsonl >> out.jsonl"},
		{Comment: "OpenRouter with a spending cap, one dataset per job with GNU parallel",
			Command: "parallel 'generate --backend openai --url https://openrouter.ai/api/v1 --model deepseek/deepseek-r1 --cost-budget 20 --errors {.}.err.jsonl < {} > {.}.out.jsonl' ::: data/*.jsonl"},
		{Comment: "a draft for both modes: 30% of the prompts with thinking on (the same 30% on every rerun), recorded for to-train",
			Command: "tokenize-prompts --tokenizer DIR --thinking mix:0.3 prompts.jsonl | generate --backend openai --url https://openrouter.ai/api/v1 --model qwen/qwen3-8b > thinking-mix.jsonl"},
		{Comment: "four answers per prompt with distinct seeds, resumed sample by sample after a stop",
			Command: "dedupe-resume --samples 4 --done out.jsonl req.jsonl | generate --url http://gpu1:30000 --samples 4 --temperature 0.8 >> out.jsonl"},
		{Comment: "a cron line that resumes every hour, every stage quiet (-q): cron mails only what fails",
			Command: "0 * * * * cd /data && flock -n .lock sh -c 'dedupe-resume -q --done out.jsonl req.jsonl | generate -q --url http://gpu1:30000 --errors err.jsonl --token-budget 10M --already out.jsonl | budget-cut -q --tokens 10M --already out.jsonl >> out.jsonl'"},
	}
}

// descriptionText is generate's long help; {{.Name}} is a constant of
// helpConstants.
const descriptionText = `generate reads request records (files, or stdin when none or "-"; gzip and
zstd are read transparently) and sends them to the servers named by --url:
SGLang's native /generate with the record's input_ids (--backend sglang), or
OpenAI-compatible chat completions with its messages and tools (--backend
openai: OpenRouter, vLLM, SGLang's /v1). Each answer is written to stdout as
soon as it completes (--ordered: in input order) as the request record with
the response fields added: output_ids, text, reasoning, tool_calls,
finish_reason (normalized; the server's own value in native_finish_reason),
completion_tokens, prompt_tokens (when the request had none), usage and gen
(backend, model, endpoint, attempts, latency_ms, params). The input line is
kept byte for byte; a stale "error" member of a record re-fed from an errors
file is dropped. Truncated (finish_reason length), empty and aborted answers
stay in the output and are counted.

Thinking. A record's thinking setting is generated as it says: "thinking"
and "reasoning_effort", written by tokenize-prompts --thinking, which
rendered its prompt so. An OpenAI-compatible server gets it as OpenRouter's
reasoning switch (reasoning.enabled false, or true with --reasoning-effort
and --reasoning-max-tokens; with effort levels, reasoning.effort) and as the
chat template variables vLLM and SGLang pass to the template
(chat_template_kwargs: enable_thinking and thinking, or reasoning_effort);
--tokenizer and --turns all render each turn with it. --thinking
on|off|mix:P|effort:... chooses a setting for records without one, by the
same seeded hash of the id as tokenize-prompts (--thinking-seed), and writes
it on the record, for to-train. A record whose setting --thinking would
choose otherwise is refused (exit 65, or counted with --skip-invalid), and
so is a record without one on --backend sglang, whose input_ids were
rendered already: run tokenize-prompts --thinking.

Concurrency. --concurrency auto (the default) sizes the requests in flight per
server (a server is contacted once the run has a request to send: a run
with nothing to do, an empty input or a spent budget, contacts none).
Against SGLang it reads /server_info (KV cache tokens, running
request limit) and keeps as many requests in flight as the KV cache holds
given the mean prompt length and the tokens a running answer holds on
average (E[L^2]/2E[L] for answer lengths L, learned as answers arrive,
counting the ones still running, and starting from --max-tokens/2), plus
{{.QueueMargin}} so that the server never idles between requests; it logs the first
choice on stderr, and a later one when it moved by more than {{.ReportChange}}.

Several runs, one server. Runs started at once against one SGLang server
(scripts/fanout.sh datasets, or runs on other machines) share it without
knowing of each other: each run reads the requests the server holds
(running + queued), from its /metrics (with --enable-metrics) or else from
the /v1/loads or /get_load report SGLang serves whatever its flags, every
{{.ShareInterval}} and keeps the sum near what one run alone would keep in flight (the
size above), as TCP shares a link: a run starts at {{.ShareStart}} of that size
and doubles while the server has room; when the server holds more, every
run cuts its limit in proportion (limit x size / held), so together they
come down to it at once; beside other runs, a queue over {{.ShareQueueOver}} of what the
server holds cuts too, to what it runs plus {{.ShareQueueTarget}} (each run's size is its own
estimate, and early ones are high: the queue is the same for all), and
while more than {{.ShareQueueTarget}} is queued, the runs grow by the half-request step
alone; when it holds less, every run grows by its share of the room plus
half a request per reading, and these equal steps bring the runs to equal
shares over time. A run says it shares the server once, when a reading
first shows requests that are not its own; alone, it says nothing of
sharing, reaches its full size within a third of a second and keeps it. Limits: a client that does not take part (a run with
a fixed --concurrency, another program) is not pushed back, the runs that
take part only leave it room; equal shares are reached slowly (minutes
with few runs), while the sum is right within seconds; gauges that lag (a
real server's /metrics update about once a second) make the runs overshoot
briefly.

A server that reports none of these (the oldest SGLang releases, or a
proxy in front of a server that passes on only its requests) is sized as
if it were the run's own, and the run says so: alone, it is right from the
start. With --shared (scripts/fanout.sh sets it) each run measures such a
server's queue itself instead: every {{.ProbeEvery}} of an answer's latency it
sends a probe, a one-token prompt asking for one token, which waits in the
queue behind everything sent before it. By Little's law the probe's wait
over an answer's latency is the share of the server's requests that are
queued; one run alone keeps about {{.AloneQueued}} queued (its {{.QueueMargin}} margin). Over half a
latency of probes: a run that holds nearly everything the server holds is
alone and keeps its full size; over {{.ProbeOver}} queued, every run cuts its limit
in proportion, to bring the queue to {{.ProbeTarget}} (at most to {{.ProbeDeepest}} at once);
under {{.ProbeUnder}}, a run doubles (from {{.ShareStart}}, once a latency, until its first
cut), else grows by a request every half latency; in between by half a
request a latency. Limits: it assumes the server serves in arrival order
(SGLang's fcfs); it reacts an answer's latency late, so runs started
together queue more for their first latency; the queue held is about half
again one run's with ten runs (the probes wait in it too); with the
server's own report the runs share more closely.

Against OpenAI-style servers it starts at {{.AIMDStart}} and adapts: one more after a
window of successes, half on HTTP 429, and no new requests to that server
until its Retry-After has passed. With several --url, each request goes to
the server with the fewest tokens outstanding; a server that fails to
connect is sidelined and retried later with backoff, and a request whose
connection was refused moves to another server at once without using a retry (when
no server is up, the run stops with 75 and leaves it to a later run).

The context length. Each request asks for --max-tokens, or less when its
prompt leaves less of the model's context length: the context length is
--context-length, else the smallest the servers report (SGLang's
/server_info context_length; an OpenAI-compatible server's /models entry,
context_length or vLLM's max_model_len, and OpenRouter's
top_provider.max_completion_tokens, which caps every answer; with
--concurrency N the list is not read). The capped value is the record's
gen.params.max_tokens and what a budget reserves. A prompt that leaves fewer
than --min-room tokens (default {{.MinRoom}}: SGLang refuses a prompt as long as the
context) is not sent: it goes to --errors with kind context_overflow and the
closing summary counts it ("2 errors (2 context overflow; in errors.jsonl)").
Only an exact prompt size is capped on: token ids, or the record's
prompt_tokens (tokenize-prompts writes them); the size of messages without
them is an estimate, and a server that refuses such a prompt for its length
gives the same kind. With --turns all on SGLang each turn is capped at what
its own prompt leaves, and a conversation whose next prompt leaves too little
ends there ("ended": "context").

Failures. What the server marks retryable (connection errors, timeouts, 5xx,
429) is retried up to --retries times with exponential backoff and jitter,
Retry-After honoured up to --max-retry-wait (default {{.MaxRetryWait}}: a server asking for
decades gets that), on any server. An attempt ends after --timeout, and
with --stream also when the server has sent nothing for --idle-timeout
(default {{.IdleTimeout}}: a stopped server, a dead peer behind a proxy); both are
retried like a broken connection. The answers being received hold at most
--max-answer-memory bytes together (one alone at most {{.MaxAnswer}}), so that no
server can push generate out of memory: an answer that would pass it fails
and is retried. Other failures (HTTP 400, a prompt over
the context length) and exhausted retries become error records in --errors
FILE: the request's own fields plus error {kind, status, message, attempts,
retryable, and cost when its failed attempts were charged}, so that
"generate --errors e2.jsonl < errors.jsonl" retries exactly those. HTTP 401,
402 and 403 (bad key, no credits, a refused key) stop the whole run at once
with exit 77; OpenRouter's 403 for one flagged input is that record's error.
An error OpenRouter reports with HTTP 200 (a body or a stream chunk with
error.code) is taken as that status: 402 stops the run, 400 fails the
record, 429 and 5xx are retried. A stream that reaches [DONE] without a
finish reason is an answer (finish_reason ""), as a whole completion with a
null one is: it was paid for. When every server has been unreachable for as
long as the retries would wait, the run stops with exit 75. A run in which
no record succeeded and at least one failed after all its retries (server
errors, HTML or garbage answers, timeouts) exits 75 as well: try again
later. A run with some successes exits 0 with its failures in --errors, and
so does one whose only failures are records refused for themselves (HTTP
400). Requests
cancelled in flight (a signal, a closed stdout) are not
errors: they are counted, and dedupe-resume finds them not done. Nothing is
dropped silently: the summary line counts ok (written), lost (answered but
never written: a full disk, a closed stdout, named with the reason),
errors (and how many of them never reached a full --errors file), cut (by
a budget), cancelled in flight and not started, which add up to the
records read.

Several answers per prompt. --samples N writes N answers to each prompt,
each its own record: sample 1 keeps the prompt's id, sample k is ID#k, and
every sample carries "prompt_id" and "sample" (synthpipe-records(7)).
Sample k is sent with the seed --seed + k - 1 (--seed 0 when not given; to
SGLang as sampling_params.sampling_seed, to OpenAI-compatible servers as
"seed", which vLLM and SGLang honour and OpenRouter passes on to providers
that do) and gen.sample_seed records it. Each sample is a request of its
own: it reserves its own share of --token-budget and --cost-budget, is
retried, written and sent to --errors alone; the progress counts samples. A
record that carries "sample" already (dedupe-resume --samples N wrote it, or
an errors file re-fed) is sent as that one sample with its seed: resume with
"dedupe-resume --samples N --done out.jsonl", which writes only the missing
samples. --samples is for records, not OpenAI Batch files.

Provenance. The records of --already FILE say in "gen" who made them: when
some were made with another backend, model (when --model is given) or
sampling parameters (gen.params without max_tokens, which is capped per
prompt) than this run's, generate says so on stderr, once per field, with
the values and how many records had each, even with -q: the dataset would
mix answers of two distributions. --require-same-params refuses to mix
them: exit 65 before anything is sent. dedupe-resume does the same for its
--done files (see dedupe-resume(1)).

Budgets. --token-budget N never writes past N tokens (counted like
budget-cut, --count, plus the tokens of --already FILE...). Every request
reserves its prompt plus --max-tokens, and the next request starts only if
the tokens of the finished answers, plus the reservations of the requests
in flight, plus its own reservation fit in N: the budget is refused before
it is spent. When it does not fit and requests are in flight, generate
waits for them to finish (what each answer used replaces its reservation)
and tries again. Only when nothing is in flight and the next request still
does not fit is the budget reached: dispatching stops, there is nothing to
cancel, and generate exits 0. --cost-budget USD does the same with money:
usage.cost of the answers plus, for each request in flight, its worst case
at --max-price (USD per million tokens), or the price the server's /models
endpoint lists; an answer charged more raises that worst case for the
requests that start after it. What a server reports as spent is counted as
spent, always, even past a reservation (an answer past max_tokens, a price
above --max-price): the answer is written, the moment the spending reaches a
budget no request starts any more (nor a retry), the requests then in flight finish and
are written (they are paid for; that is all a budget can be passed by), and
a closing line says by how much and why. A failed attempt is spent too when
the server says what it charged for it (usage.cost in an error chunk or
body): the summary says how much of the spending that was. The usage a server reports is
checked first: a count that is missing, negative, not whole, larger than
the answer can hold or at odds with the ids returned is counted from the
answer itself (its ids, the --tokenizer's, else its bytes up to
max_tokens), named once on stderr and totalled at the end.

Progress and stopping. Progress goes to stderr: on a terminal a bar redrawn
in place every {{.LiveRedraw}} on the last line, log lines printed above it (done/total
rounded down, ok, errors, truncated, rates, requests in flight, ETA; the bar
a fifth of the terminal's width), else (not a terminal, or TERM=dumb) a plain
line every --progress-interval. "in flight (limit: budget)" names what held
the requests in flight down: the server, the budget, the reorder window, the
output backlog, the input, or draining at the end. The ETA is computed from
tokens, to the end of the input or of the budget, whichever comes first,
counting the answers still in flight so that the short answers finishing
first do not make it optimistic; under a token budget it counts the tail,
where each request in flight holds its worst case (prompt + max_tokens)
and so fewer and fewer run at once (3, then 2, then 1, each an answer's
time); it shows "ETA ..." until {{.ETASamples}} answers are in. When stdout closes (budget-cut or
head downstream) requests in flight are cancelled and generate exits 0. On
SIGINT, SIGTERM or SIGHUP it stops reading, lets requests in flight finish
for up to --drain-timeout, writes them, and exits 130, 143 or 129; requests
waiting to retry (a back-off, a Retry-After) are cancelled at once, and a
second signal stops everything at once. Ctrl-C of a whole pipeline loses none of them:
budget-cut, to-train and tokstat read on until generate has written them.
A scheduler that sends SIGTERM and then SIGKILL after a grace period (Slurm's
KillWait, on preemption, requeue or scancel) needs --drain-timeout below
that grace; scripts/slurm/run-array.sbatch sets it.
The lines also say where the dataset stands against its budgets, earlier
runs' --already tokens included, the soft failures among the answers
(truncated, empty, aborted: counts and shares), the retries so far and the
servers down; the summary repeats them.

The server's own view. Where a --url serves SGLang's Prometheus metrics
(SGLang started with --enable-metrics; llm-sim always), generate reads its
/metrics every {{.MetricsEvery}} and shows them in the progress lines ("server: 48 running,
0 queued, KV 91%, 1,250 tok/s"; data-parallel ranks added up) and their mean
while busy in the summary. When the server's KV cache stays {{.KVFull}} full with
requests waiting in its queue for {{.LimitPolls}} readings and {{.LimitFor}}, generate says once that
the server itself is the limit: more requests in flight would only queue, and
only more capacity helps (another server, another backend). A server without
/metrics is asked once; everything else works from generate's own
measurements. With --backend openai, generate reads the key's limit and
credit from the server's /key (OpenRouter's GET /api/v1/key) at the start
and shows what is left; a --cost-budget above what the key can still spend
is refused with exit 77 unless --over-key-limit.

Status file. --status-file FILE is rewritten atomically every
--progress-interval and at exit with the run's state as one JSON object
(counts, tokens, spend, budgets, rates, ETA, the servers' view, how it
ended), never torn, even by SIGKILL; synthpipe-status(7) documents its
versioned fields, and tokstat DIR shows many at once. --metrics-listen
HOST:PORT serves the same figures in the Prometheus text format
(synthpipe_generate_records_total, _tokens_total, _budget_tokens_spent,
_spent_usd_total, _eta_seconds, _server_queued_requests, ...) while the run
lasts, for those who scrape long jobs.

OpenAI Batch files. --input-format openai-batch reads the lines of a file
prepared for the OpenAI Batch API or vllm run-batch ({custom_id, method,
url, body}): custom_id is the id, the body's messages and tools are the
conversation, and its sampling fields (max_tokens or max_completion_tokens,
temperature, top_p, stop, seed, ...) override the command line's for that
request. With --backend openai the body's model (unless --model is set) and
its other fields are sent as written; with --backend sglang, --tokenizer DIR
renders the messages with the chat template and tokenizes them, and of
the other fields only the penalties are sent (a response_format is refused,
not dropped). A line
whose url is not /v1/chat/completions is invalid (exit 65, or counted with
--skip-invalid). Written as synthpipe records, each result gets custom_id
as its "id". --output-format openai-batch writes Batch output lines
{id, custom_id, response {status_code, request_id, body: a chat.completion},
error}, one per request: failures too, with error {code, message} and the
server's status when it answered. Failures also go to --errors as the Batch
lines they came from, so that the errors file is re-fed as it is.

API keys come from $OPENROUTER_API_KEY or $OPENAI_API_KEY, or --api-key-file:
never from the command line, where ps and shell history would show them. A
user and password in a URL (http://user:pass@host; best in $SYNTHPIPE_URL,
since the command line is public) are sent as Basic authentication when no
API key is set, and are never printed or written: gen.endpoint and every
message show the URL without them. Credentials go only to the scheme, host
and port they were given for: a redirect elsewhere (a downgrade to http
included) is never followed, nor one that would turn a request into a GET;
generate follows only a 307 or 308 within the same origin, and otherwise
stops with exit 77, naming the Location.`
