package engine

import (
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/flaggroup"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
	"github.com/synthpipe/synthpipe/lib/thinking"
)

// Config is everything a run is built from: the settings generate's flags
// give, checked, and the run's surroundings (its outputs, its messages,
// what earlier runs spent). It holds plain values: the command translates
// its options into one.
type Config struct {
	Kind    *backend.Kind // --backend
	URLs    []string
	Model   string
	APIKey  string
	Referer string
	Title   string
	Params  backend.Params
	Stream  bool
	Timeout time.Duration
	Idle    time.Duration // --idle-timeout, with --stream
	// AnswerMem bounds the answers being received together, in bytes
	// (--max-answer-memory).
	AnswerMem int64
	Retries   int
	// MaxRetryWait caps every wait before a retry and every pause of a
	// server, Retry-After included (--max-retry-wait).
	MaxRetryWait time.Duration
	// Backoff is the first retry delay; it doubles per attempt.
	Backoff   time.Duration
	Errors    string // --errors, the name messages give it; "" for none
	IDPath    string
	Quiet     bool
	Ordered   bool
	Window    int
	FixedConc int // 0: auto
	// ContextLength is --context-length (0: the servers'); MinRoom is
	// --min-room. See contextFit.
	ContextLength, MinRoom int
	Shared                 bool // --shared: probe servers without /metrics

	TokenBudget int64 // 0: none
	CountMode   record.CountMode
	CostBudget  float64 // USD, 0: none

	ProgressEvery time.Duration
	Total         int64 // records expected; 0: unknown
	DrainTimeout  time.Duration

	Tokenizer   string // model folder for re-tokenizing answers, "" for none
	Declaration string // --tool-declaration: how tools reach the template with --tokenizer
	TurnsAll    bool   // --turns all: regenerate whole conversations
	Thinking    thinking.Mode
	Samples     int // --samples: answers per prompt

	InputFormat, OutputFormat string // FormatRecords or FormatOpenAIBatch

	// Tuning is what no flag sets; its zero fields take their defaults.
	Tuning Tuning

	// The run's surroundings.
	Out  *jsonl.Writer // the results: stdout
	Errs *jsonl.Writer // the --errors file; nil without one
	// Note prints a line on stderr unless -q; Warn even with -q, about the
	// data or the money.
	Note, Warn func(format string, args ...any)
	// Stops are made before the input is opened: reading stops with
	// dispatching.
	Stops *Stops
	// Already and AlreadyRecords are the tokens and records of the
	// --already files; USDPerToken the worst price a request in flight is
	// reserved at; Key what the server said of the API key (nil: unknown).
	Already, AlreadyRecords int64
	USDPerToken             float64
	Key                     *Key
}

// Names of the flags the engine's messages name (generate declares them).
const (
	FlagBackend         = flaggroup.FlagBackend
	FlagMaxTokens       = flaggroup.FlagMaxTokens
	FlagTokenBudget     = "token-budget"
	FlagCostBudget      = "cost-budget"
	FlagMinRoom         = "min-room"
	FlagSamples         = "samples"
	FlagDrainTimeout    = "drain-timeout"
	FlagShared          = "shared"
	FlagTokenizer       = flaggroup.FlagTokenizer
	FlagTurns           = "turns"
	FlagIdleTimeout     = "idle-timeout"
	FlagMaxAnswerMemory = "max-answer-memory"
	FlagTimeout         = "timeout"
	FlagInputFormat     = "input-format"
)

// Tuning holds the engine's timings and thresholds that no flag sets:
// generate runs with the defaults, and its tests shorten them. A zero
// field takes its default (DefaultMetricsEvery and the others).
type Tuning struct {
	// MetricsEvery is how often a server's load is read; never more often
	// than MinMetricsEvery, however often progress is printed.
	MetricsEvery, MinMetricsEvery time.Duration
	// KVFull, LimitPolls and LimitFor are when the server is the limit
	// (serverview.go).
	KVFull     float64
	LimitPolls int
	LimitFor   time.Duration
	// ServerInfoTimeout bounds the capacity and price queries at start-up.
	ServerInfoTimeout time.Duration
}

// withDefaults is t with its zero fields set to their defaults.
func (t Tuning) withDefaults() Tuning {
	orDefault(&t.MetricsEvery, DefaultMetricsEvery)
	orDefault(&t.MinMetricsEvery, DefaultMinMetricsEvery)
	orDefault(&t.KVFull, DefaultKVFull)
	orDefault(&t.LimitPolls, DefaultLimitPolls)
	orDefault(&t.LimitFor, DefaultLimitFor)
	orDefault(&t.ServerInfoTimeout, DefaultServerInfoTimeout)
	return t
}

// ServerInfoTimeoutOrDefault is t's ServerInfoTimeout, or its default: the command
// bounds its own start-up queries (the price list, the API key) by it too.
func (t Tuning) ServerInfoTimeoutOrDefault() time.Duration {
	return t.withDefaults().ServerInfoTimeout
}

func orDefault[T int | float64 | time.Duration](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}
