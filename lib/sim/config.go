package sim

import (
	"errors"
	"fmt"
	"time"
)

// Config describes one simulated server. The zero value is not usable; start
// from Default and change what a test or benchmark needs.
type Config struct {
	// ModelName is the served model name reported by /v1/models,
	// /model_info and echoed in chat completions when the request names none.
	ModelName string
	// Version is the SGLang version string reported by /server_info.
	Version string

	// MaxTotalTokens is the KV-cache capacity in tokens shared by all running
	// requests (SGLang's max_total_num_tokens). A running request holds its
	// prompt plus every token generated so far.
	MaxTotalTokens int
	// MaxRunningRequests caps the decode batch (SGLang's max_running_requests).
	MaxRunningRequests int
	// DataParallel is the number of data-parallel ranks (SGLang's
	// --dp-size; 0 means 1). Each rank is a scheduler of its own with
	// MaxTotalTokens and MaxRunningRequests; requests are dealt to the ranks
	// in turn, and /metrics labels each rank's gauges with dp_rank.
	DataParallel int
	// ContextLength is the model's context window. Prompt plus max_new_tokens
	// beyond it is rejected with HTTP 400, as SGLang does.
	ContextLength int
	// DefaultMaxNewTokens applies when /generate omits
	// sampling_params.max_new_tokens (SGLang's default is 128).
	DefaultMaxNewTokens int

	// PrefixCacheTokens is the size in tokens of the prefix cache (0: none,
	// as SGLang with --disable-radix-cache). A prompt that starts with
	// ids the cache holds, an earlier prompt or an earlier prompt with its
	// answer, has that part prefilled for free (PrefillTimePerToken counts
	// only the rest) and reports it as cached_tokens. The least recently
	// used entries are evicted when it is full. Only prompts with token
	// ids, and chat prompts (cut into pseudo-tokens per message), use it.
	PrefixCacheTokens int

	// StepTime is the fixed wall time of one decode step.
	StepTime time.Duration
	// PerTokenTime is added to a step for every request in the batch, so a
	// step lasts StepTime + PerTokenTime*batch + PrefillTimePerToken*admitted.
	PerTokenTime time.Duration
	// PrefillTimePerToken is added to a step for every prompt token admitted
	// (or re-admitted after a retraction) in that step.
	PrefillTimePerToken time.Duration
	// IncrementalStreaming makes /generate streams carry only the new text
	// and output_ids in each chunk, like SGLang's
	// --incremental-streaming-output. The default (false) sends cumulative
	// snapshots, SGLang's default.
	IncrementalStreaming bool
	// NoMetrics answers /metrics with 404, as SGLang does when started
	// without --enable-metrics (its default): clients see no load.
	NoMetrics bool
	// LoadReports is which of SGLang's JSON load reports are served; SGLang
	// serves them whatever its flags. LoadReportsAll ("", the default):
	// /v1/loads and /get_load, as recent releases; LoadReportsGetLoad:
	// /get_load only, as releases before /v1/loads; LoadReportsNone: neither,
	// as the oldest SGLang releases or a proxy that passes on only requests
	// (with NoMetrics, no load at all).
	LoadReports string

	// VocabSize bounds the token ids: prompts with an id past it are refused
	// (as SGLang refuses them) and generated ids are below it. The default is
	// the bundled Kimi-K2.5 tokenizer's, so bundled prompts are accepted.
	VocabSize int
	// EOSTokenID is appended as the last output id when an answer stops
	// naturally (finish_reason {type: stop, matched: EOSTokenID}). It must be
	// below VocabSize; content tokens never take this id.
	EOSTokenID int
	// EOSText is how the EOS token renders in text when a request asks for
	// no_stop_trim and skip_special_tokens=false.
	EOSText string
	// AnswerFormat is how answers are written: AnswerWords (the default)
	// or AnswerKimiK25, where a /generate answer to input_ids is written in
	// the bundled Kimi-K2.5 tokenizer's ids as the model writes it
	// (reasoning, </think>, content or tool calls, <|im_end|> as its EOS,
	// whatever EOSTokenID says; see kimiFormat) and chat answers call the
	// tools the last user turn names, under Kimi's functions.NAME:INDEX ids.
	AnswerFormat string
	// Seed makes answer lengths and injected faults reproducible. Two servers
	// with the same Seed answer the same requests identically.
	Seed uint64
	// Lengths is the distribution of natural answer lengths (content tokens
	// before EOS). max_new_tokens still caps every answer.
	Lengths LengthDist

	// APIKey, when not empty, is required as "Authorization: Bearer <key>"
	// on every endpoint except /health, /health_generate and /metrics.
	// A missing or wrong key answers 401 with an OpenRouter-shaped error.
	APIKey string
	// PromptPrice and CompletionPrice are USD per token; they fill
	// usage.cost in chat completions and pricing in /v1/models. A negative
	// price is a variable one, as a router's (openrouter/auto): /v1/models
	// lists it as "-1", as OpenRouter does, and usage.cost charges its
	// absolute value.
	PromptPrice     float64
	CompletionPrice float64
	// KeyLimit is the API key's credit limit in USD, served by
	// GET /api/v1/key as OpenRouter does; 0 means no limit (null). Once the
	// key's usage reaches it, chat requests answer 402.
	KeyLimit float64
	// KeyUsage is what the key had spent, in USD, before the server
	// started; usage.cost of every chat answer adds to it.
	KeyUsage float64
	// KeyRateLimit is the requests per KeyRateInterval /api/v1/key reports
	// (reported only, not enforced; 0 reports -1, no limit).
	KeyRateLimit int
	// ReasoningShare is the share of a chat answer spent on reasoning tokens
	// when the request enables reasoning with effort "medium" (or without an
	// effort). "high" uses twice and "low" half of it, capped at 0.9.
	ReasoningShare float64
	// ProcessingCommentInterval is how often a chat stream sends
	// ": OPENROUTER PROCESSING" while the request waits for its first token.
	// One comment is always sent when a stream opens. Zero disables the
	// periodic comments.
	ProcessingCommentInterval time.Duration

	// Faults sets how often each fault is injected.
	Faults FaultConfig
}

// FaultConfig holds the probability of each injected fault and the knobs the
// faults need. Probabilities are in [0, 1] and their sum must not exceed 1;
// each request draws at most one fault. See FaultKind for what each does.
type FaultConfig struct {
	// HTTP500 answers 500 before any work is done.
	HTTP500 float64
	// RateLimit answers 429 with a Retry-After header.
	RateLimit float64
	// Reset writes the response head and part of a body, then resets the TCP
	// connection.
	Reset float64
	// Hang never answers; the request ends when the client gives up or the
	// server closes.
	Hang float64
	// SlowFirstToken delays the request by SlowFirstTokenDelay before it
	// enters the engine (streams have already sent their headers).
	SlowFirstToken float64
	// MidStreamError fails the generation halfway: a stream gets an error
	// chunk, a non-streaming request an error body.
	MidStreamError float64
	// Garbage answers 200 with a body that is not JSON.
	Garbage float64
	// HTML answers 502 with an HTML proxy error page.
	HTML float64
	// Abort ends a /generate request halfway with an SGLang abort finish
	// reason carrying AbortStatusCode (chat requests fail as MidStreamError).
	Abort float64
	// NoCredits answers 402 (OpenRouter: insufficient credits).
	NoCredits float64
	// Moderation answers 403 (OpenRouter: input flagged by moderation).
	Moderation float64
	// Repetition makes an answer loop to max_new_tokens (FaultRepetition).
	Repetition float64
	// MarkerLeak writes "<think>" into an answer's text (FaultMarkerLeak).
	MarkerLeak float64

	// RetryAfter is the Retry-After value sent with 429 answers; it is
	// rounded up to whole seconds (minimum 1).
	RetryAfter time.Duration
	// SlowFirstTokenDelay is the delay of the SlowFirstToken fault.
	SlowFirstTokenDelay time.Duration
	// AbortStatusCode is the status_code in the abort finish reason. SGLang
	// turns 400 into an HTTP 400 error and 500/503 into that HTTP status for
	// non-streaming requests; 0 omits status_code and answers 200 with the
	// abort finish reason (a graceful abort).
	AbortStatusCode int
}

// Default returns a configuration shaped like a single-GPU SGLang deployment
// of an 8B model: 159,277 KV tokens, 1,024 running requests, a 32,768 token
// context, zero latency, fixed 64-token answers and no faults.
func Default() Config {
	return Config{
		ModelName:                 "sim/llm-sim-8b",
		Version:                   "0.5.5-sim",
		MaxTotalTokens:            159277,
		MaxRunningRequests:        1024,
		ContextLength:             32768,
		DefaultMaxNewTokens:       128,
		VocabSize:                 163840,
		EOSTokenID:                2,
		EOSText:                   "</s>",
		Seed:                      1,
		Lengths:                   LengthDist{Kind: LengthFixed, Fixed: 64},
		PromptPrice:               0.0000001,
		CompletionPrice:           0.0000004,
		ReasoningShare:            0.3,
		ProcessingCommentInterval: 0,
		Faults: FaultConfig{
			RetryAfter:          time.Second,
			SlowFirstTokenDelay: 200 * time.Millisecond,
			AbortStatusCode:     0,
		},
	}
}

// Validate reports the first inconsistency in the configuration.
func (c *Config) Validate() error {
	switch {
	case c.MaxTotalTokens <= 1:
		return errors.New("sim: MaxTotalTokens must be at least 2")
	case c.AnswerFormat != AnswerWords && c.AnswerFormat != AnswerKimiK25:
		return fmt.Errorf("sim: AnswerFormat %q is none of %q (words) and %q", c.AnswerFormat, AnswerWords, AnswerKimiK25)
	case c.PrefixCacheTokens < 0:
		return errors.New("sim: PrefixCacheTokens must not be negative")
	case c.MaxRunningRequests <= 0:
		return errors.New("sim: MaxRunningRequests must be positive")
	case c.DataParallel < 0:
		return errors.New("sim: DataParallel must not be negative")
	case c.ContextLength <= 1:
		return errors.New("sim: ContextLength must be at least 2")
	case c.DefaultMaxNewTokens < 0:
		return errors.New("sim: DefaultMaxNewTokens must not be negative")
	case c.VocabSize < 2:
		return errors.New("sim: VocabSize must be at least 2")
	case c.EOSTokenID < 0 || c.EOSTokenID >= c.VocabSize:
		return fmt.Errorf("sim: EOSTokenID %d outside the vocabulary [0, %d)", c.EOSTokenID, c.VocabSize)
	case c.StepTime < 0 || c.PerTokenTime < 0 || c.PrefillTimePerToken < 0:
		return errors.New("sim: step times must not be negative")
	case c.KeyLimit < 0 || c.KeyUsage < 0 || c.KeyRateLimit < 0:
		return errors.New("sim: KeyLimit, KeyUsage and KeyRateLimit must not be negative")
	case c.ReasoningShare < 0 || c.ReasoningShare > 0.9:
		return errors.New("sim: ReasoningShare must be in [0, 0.9]")
	case c.LoadReports != LoadReportsAll && c.LoadReports != LoadReportsGetLoad && c.LoadReports != LoadReportsNone:
		return fmt.Errorf("sim: LoadReports %q is none of %q, %q and %q", c.LoadReports, LoadReportsAll, LoadReportsGetLoad, LoadReportsNone)
	}
	if err := c.Lengths.validate(); err != nil {
		return err
	}
	return c.Faults.validate()
}
