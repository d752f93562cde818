// Package backend talks to inference servers: SGLang's native /generate API
// and OpenAI-compatible chat completions (OpenRouter, vLLM, SGLang's /v1).
// It builds requests, parses answers (whole or streamed), and classifies
// failures so that the scheduler in lib/generate can decide to retry, record
// an error, or stop the run. It knows nothing of files or scheduling.
package backend

import (
	"context"
	"encoding/json"
	"time"
)

// Request is one generation request.
type Request struct {
	ID      string // the record's id
	Attempt int    // 1 for the first try; SGLang's rid is ID plus attempt
	// InputIDs are the prompt token ids (SGLang native).
	InputIDs []int
	// Messages and Tools are the conversation (OpenAI-style backends).
	Messages json.RawMessage
	Tools    json.RawMessage
	Params   Params
}

// Params are the sampling parameters common to the backends. nil pointers
// mean "not set": the server's default applies.
type Params struct {
	MaxTokens          int // always sent: SGLang's default of 128 truncates silently
	Temperature        *float64
	TopP               *float64
	TopK               *int
	MinP               *float64
	Stop               []string
	StopTokenIDs       []int
	Seed               *int64
	ReasoningEffort    string          // OpenAI-style: reasoning.effort
	ReasoningMaxTokens int             // OpenAI-style: reasoning.max_tokens
	Extra              json.RawMessage // object merged into the request body (--extra)
}

// Result is a successful answer. Soft failures (truncated, empty) are
// results too, flagged by FinishReason: they stay in the data and are
// counted. A generation the server aborted is an *Error of KindAbort, since
// its partial output is not an answer.
type Result struct {
	OutputIDs          []int           // nil when the backend returns none
	Text               string          // the answer
	Reasoning          string          // its reasoning part, when separate
	ReasoningDetails   json.RawMessage // OpenRouter's reasoning_details, as sent
	ToolCalls          json.RawMessage // OpenAI tool_calls array, as sent
	FinishReason       string          // normalized: stop, length, tool_calls, abort, content_filter, error
	NativeFinishReason json.RawMessage // the backend's own value, as sent
	PromptTokens       int
	CompletionTokens   int
	CachedTokens       int
	ReasoningTokens    int
	Cost               *float64 // USD, when the backend reports it
	Retractions        int      // SGLang: times the request was preempted
	Usage              json.RawMessage
	Model              string // the model that answered, when reported
	Latency            time.Duration
	FirstToken         time.Duration // time to the first streamed token; 0 when not streamed
}

// Error kinds.
const (
	KindConnect  = "connect" // could not connect, or the connection broke
	KindTimeout  = "timeout" // no complete answer within the timeout
	KindHTTP     = "http"    // an error status
	KindRate     = "rate_limit"
	KindAbort    = "abort"    // the server aborted the generation (SGLang finish_reason abort)
	KindStream   = "stream"   // an error reported after the answer began (error chunk or body, finish_reason "error")
	KindProtocol = "protocol" // 200 with a body that is not the expected JSON
	KindAuth     = "auth"     // 401/403: bad key, or refused
	KindCredits  = "credits"  // 402: no credits left
	KindRequest  = "bad_request"
)

// Error is a failed request, classified.
type Error struct {
	Kind       string
	Status     int    // HTTP status, 0 when none
	Message    string // what the server said (never the API key)
	Retryable  bool   // worth another attempt
	Fatal      bool   // stop the whole run (bad key, no credits)
	RetryAfter time.Duration

	cause error // see Unwrap
}

func (e *Error) Error() string { return e.Message }

// ServerInfo is what a server says about its capacity.
type ServerInfo struct {
	MaxTotalTokens     int // KV cache size in tokens (SGLang max_total_num_tokens)
	MaxRunningRequests int
	ContextLength      int
	TokenCapacity      int // internal_states[].memory_usage.token_capacity, summed over data-parallel ranks
	// IncrementalStreaming is SGLang's incremental_streaming_output: its
	// streams carry deltas rather than cumulative snapshots.
	IncrementalStreaming bool
	Version              string // the server's version, when reported
	Raw                  json.RawMessage
}

// Backend sends requests to one kind of server.
type Backend interface {
	// Name is "sglang" or "openai".
	Name() string
	// Do sends req to the server at base URL and returns its answer. A failed
	// request returns a *Error. ctx cancellation aborts the request (the
	// server sees the connection close).
	Do(ctx context.Context, base string, req *Request) (*Result, error)
	// ServerInfo asks the server for its capacity; (nil, nil) when the backend
	// has no such endpoint.
	ServerInfo(ctx context.Context, base string) (*ServerInfo, error)
}
