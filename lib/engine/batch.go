package engine

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/conversation"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// Record formats: synthpipe's own records, or the lines of an OpenAI Batch
// file (what the OpenAI Batch API and vllm run-batch read and write).
const (
	FormatRecords     = "records"
	FormatOpenAIBatch = "openai-batch"
)

// batchChatURL is the one Batch endpoint generate serves: the others
// (embeddings, completions, responses) do not produce a chat answer.
const batchChatURL = "/v1/chat/completions"

// batchInput turns OpenAI Batch input lines into jobs.
type batchInput struct {
	kind   *backend.Kind
	model  string         // --model: overrides the bodies' model
	params backend.Params // the command line's, which each body overrides
	chat   *chat.Model    // renders and tokenizes the messages for a backend that takes token ids
}

// batchLine is one Batch input line, as the OpenAI Batch API defines it.
type batchLine struct {
	CustomID *string         `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// bodyLimits are the members of a chat completions body that size its
// answer; the sampling parameters are backend.Sampling's (Override), and
// the body's other members go along as extra fields.
type bodyLimits struct {
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	N                   *int `json:"n"`
}

// bodyOwnKeys are the body members besides the sampling parameters that
// generate sets from the record or its own flags rather than passing along.
var bodyOwnKeys = map[string]bool{
	"messages": true, "tools": true, "model": true, "max_tokens": true, "max_completion_tokens": true, "n": true,
	// generate chooses streaming (--stream) and asks for usage itself.
	"stream": true, "stream_options": true,
}

// parse reads one Batch input line. The line itself is what the job
// carries, so that a failure written to --errors is again a Batch line.
func (b *batchInput) parse(line []byte) (*job, error) {
	line = dropStaleError(bytes.Clone(line))
	var in batchLine
	if err := json.Unmarshal(line, &in); err != nil {
		return nil, fmt.Errorf("not an OpenAI Batch line: %v", err)
	}
	if in.CustomID == nil || *in.CustomID == "" {
		return nil, errors.New(`no "custom_id": every Batch line needs a non-empty custom_id string`)
	}
	if in.Method != "" && in.Method != "POST" {
		return nil, fmt.Errorf(`"method" is %q: Batch requests are POST`, in.Method)
	}
	if in.URL != batchChatURL {
		return nil, fmt.Errorf(`"url" is %q: generate serves only %s`, in.URL, batchChatURL)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(in.Body, &body); err != nil || body == nil {
		return nil, errors.New(`"body" must be a chat completions request object`)
	}
	messages := body["messages"]
	if len(messages) == 0 || messages[0] != '[' {
		return nil, errors.New(`"body" has no "messages" array`)
	}
	var tools json.RawMessage
	if t := body["tools"]; len(t) > 0 && t[0] == '[' {
		tools = t
	}
	params, err := b.requestParams(body)
	if err != nil {
		return nil, err
	}
	j := &job{line: line, params: ParamsJSON(params)}
	j.req.ID, j.req.Params = *in.CustomID, params
	if b.kind.Input == backend.TokenIDs {
		rendered, err := b.chat.Render(messages, tools, true)
		if err != nil {
			return nil, fmt.Errorf("chat template: %v", err)
		}
		j.req.InputIDs = b.chat.Encode(rendered)
		j.promptTokens, j.exactPrompt = len(j.req.InputIDs), true
		return j, nil
	}
	j.req.Messages, j.req.Tools = messages, tools
	// About conversation.BytesPerToken bytes of JSON a token: this only
	// sizes reservations.
	j.promptTokens = (len(messages) + len(tools)) / conversation.BytesPerToken
	return j, nil
}

// requestParams are the command line's sampling parameters overridden by
// the body's, and the body's other fields as extra request fields.
func (b *batchInput) requestParams(body map[string]json.RawMessage) (backend.Params, error) {
	p := b.params
	raw, _ := json.Marshal(body) // a map of raw members: cannot fail
	var bl bodyLimits
	if err := json.Unmarshal(raw, &bl); err != nil {
		return p, fmt.Errorf(`"body": %v`, err)
	}
	switch {
	case bl.MaxCompletionTokens != nil: // the newer name wins, as on OpenAI
		p.MaxTokens = *bl.MaxCompletionTokens
	case bl.MaxTokens != nil:
		p.MaxTokens = *bl.MaxTokens
	}
	if p.MaxTokens < 1 {
		return p, fmt.Errorf(`"body" asks for %d tokens: want at least 1`, p.MaxTokens)
	}
	if bl.N != nil && *bl.N != 1 {
		// A record is one answer: the others would be paid for and lost.
		return p, fmt.Errorf(`"body" asks for n=%d answers: generate writes one per line (repeat the line with other custom_ids)`, *bl.N)
	}
	// Override gives each of the body's values memory of its own: p
	// shares the command line's slices with every other line.
	if err := p.Override(body); err != nil {
		return p, fmt.Errorf(`"body" %v`, err)
	}
	if b.kind.NeedsModel && b.model == "" && len(body["model"]) == 0 {
		return p, errors.New(`"body" has no "model" and --model is not set`)
	}
	extra, err := b.extraFields(body)
	if err != nil {
		return p, err
	}
	p.Extra = extra
	return p, nil
}

// extraFields are --extra with the body's own other fields over it: the
// body's model (unless --model names one) and fields generate has no flag
// for (response_format, penalties, logit_bias, ...) reach an OpenAI-style
// server as written; SGLang gets the penalties it understands.
func (b *batchInput) extraFields(body map[string]json.RawMessage) (json.RawMessage, error) {
	extra := map[string]json.RawMessage{}
	if len(b.params.Extra) > 0 {
		if err := json.Unmarshal(b.params.Extra, &extra); err != nil {
			return nil, err // checked at start-up
		}
	}
	sampling := map[string]json.RawMessage{}
	for k, v := range body {
		if bodyOwnKeys[k] || backend.IsBatchSamplingKey(k) {
			continue
		}
		where, err := b.kind.BatchBody(k, v)
		if err != nil {
			return nil, err
		}
		switch where {
		case backend.BodySampling:
			sampling[k] = v
		case backend.BodyField:
			extra[k] = v
		}
	}
	if b.kind.NeedsModel && b.model == "" {
		extra["model"] = body["model"]
	}
	if len(sampling) > 0 {
		// mergeExtra merges objects key by key, so --extra's own
		// sampling_params keep what the body does not set.
		s, _ := json.Marshal(sampling)
		if old, ok := extra["sampling_params"]; ok {
			var merged map[string]json.RawMessage
			if json.Unmarshal(old, &merged) == nil {
				for k, v := range sampling {
					merged[k] = v
				}
				s, _ = json.Marshal(merged)
			}
		}
		extra["sampling_params"] = s
	}
	if len(extra) == 0 {
		return nil, nil
	}
	return json.Marshal(extra)
}

// dropStaleError removes the "error" member of a record re-fed from an
// errors file: its old error must not travel on with the answer or with a
// new error.
func dropStaleError(line []byte) []byte {
	if trimmed, err := sjson.DeleteBytes(line, record.FieldError); err == nil {
		return trimmed
	}
	return line
}

// resultLine is the output line of a successful answer.
func (c *collector) resultLine(j *job, res *backend.Result, attempts int) []byte {
	if c.cfg.OutputFormat != FormatOpenAIBatch {
		members := c.resultMembers(j, res, attempts)
		if c.cfg.InputFormat == FormatOpenAIBatch && !gjson.GetBytes(j.line, record.FieldID).Exists() {
			// The record contract keys on "id": with it, budget-cut,
			// dedupe-resume and tokstat take the result as they are.
			members = append(members, member{record.FieldID, jsonl.AppendString(nil, j.req.ID)})
		}
		return addMembers(j.line, members, j.collides)
	}
	model := res.Model
	if model == "" {
		model = c.cfg.Model
	}
	return batchResult(j.req.ID, model, promptTokensOf(j, res), res, time.Now())
}

// failureLine is the output line of a failed request: none in synthpipe's
// format, where failures go only to --errors; a Batch output file holds
// every request's outcome.
func (c *collector) failureLine(j *job, e *backend.Error) []byte {
	if c.cfg.OutputFormat != FormatOpenAIBatch {
		return nil
	}
	return batchFailure(j.req.ID, e)
}

// Batch output, as the OpenAI Batch API writes it: one line per request,
// the response as the endpoint would have answered it.
type (
	batchOutput struct {
		ID       string         `json:"id"`
		CustomID string         `json:"custom_id"`
		Response *batchResponse `json:"response"`
		Error    *batchError    `json:"error"`
	}
	batchResponse struct {
		StatusCode int    `json:"status_code"`
		RequestID  string `json:"request_id"`
		Body       any    `json:"body"`
	}
	batchError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	chatCompletion struct {
		ID      string       `json:"id"`
		Object  string       `json:"object"`
		Created int64        `json:"created"`
		Model   string       `json:"model"`
		Choices []chatChoice `json:"choices"`
		Usage   chatUsage    `json:"usage"`
	}
	chatChoice struct {
		Index        int         `json:"index"`
		Message      chatMessage `json:"message"`
		FinishReason string      `json:"finish_reason"`
		// TokenIDs are the generated ids, under the name vLLM's
		// return_token_ids gives them: synthpipe's token accounting
		// survives the format.
		TokenIDs []int `json:"token_ids,omitempty"`
	}
	chatMessage struct {
		Role      string          `json:"role"`
		Content   *string         `json:"content"`
		Reasoning string          `json:"reasoning,omitempty"`
		ToolCalls json.RawMessage `json:"tool_calls,omitempty"`
	}
	chatUsage struct {
		PromptTokens            int                   `json:"prompt_tokens"`
		CompletionTokens        int                   `json:"completion_tokens"`
		TotalTokens             int                   `json:"total_tokens"`
		PromptTokensDetails     *promptTokensDetails  `json:"prompt_tokens_details,omitempty"`
		CompletionTokensDetails *completionTokDetails `json:"completion_tokens_details,omitempty"`
		Cost                    *float64              `json:"cost,omitempty"`
	}
	promptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	}
	completionTokDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	}
)

// batchResult is the Batch output line of an answer.
func batchResult(customID, model string, promptTokens int, res *backend.Result, now time.Time) []byte {
	msg := chatMessage{Role: "assistant", Reasoning: res.Reasoning}
	// A server's tool calls go out as sent; ones that are not JSON would
	// make the whole line invalid.
	if t := bytes.TrimSpace(res.ToolCalls); len(t) > 0 && string(t) != "null" && json.Valid(t) {
		msg.ToolCalls = res.ToolCalls
	}
	if res.Text != "" || msg.ToolCalls == nil { // OpenAI: content null beside tool calls
		msg.Content = &res.Text
	}
	usage := chatUsage{
		PromptTokens:     promptTokens,
		CompletionTokens: res.CompletionTokens,
		TotalTokens:      promptTokens + res.CompletionTokens,
		Cost:             res.Cost,
	}
	if res.CachedTokens > 0 {
		usage.PromptTokensDetails = &promptTokensDetails{res.CachedTokens}
	}
	if res.ReasoningTokens > 0 {
		usage.CompletionTokensDetails = &completionTokDetails{res.ReasoningTokens}
	}
	return marshalBatch(batchOutput{
		ID:       "batch_req_" + randomHex(),
		CustomID: customID,
		Response: &batchResponse{StatusCode: 200, RequestID: "req_" + randomHex(), Body: chatCompletion{
			ID:      "chatcmpl-" + randomHex(),
			Object:  "chat.completion",
			Created: now.Unix(),
			Model:   model,
			Choices: []chatChoice{{Message: msg, FinishReason: res.FinishReason, TokenIDs: res.OutputIDs}},
			Usage:   usage,
		}},
	})
}

// batchFailure is the Batch output line of a failed request: with the
// server's status when it answered with one, so that a reader of the file
// tells a refused request from one that never reached a server.
func batchFailure(customID string, e *backend.Error) []byte {
	out := batchOutput{
		ID:       "batch_req_" + randomHex(),
		CustomID: customID,
		Error:    &batchError{Code: e.Kind, Message: e.Message},
	}
	if e.Status > 0 {
		out.Response = &batchResponse{StatusCode: e.Status, RequestID: "req_" + randomHex(), Body: map[string]any{
			"error": map[string]any{"message": e.Message, "type": e.Kind, "code": e.Status},
		}}
	}
	return marshalBatch(out)
}

func marshalBatch(out batchOutput) []byte {
	b, err := json.Marshal(out)
	if err != nil {
		panic(fmt.Sprintf("generate: batch output: %v", err)) // values checked on the way in: cannot fail
	}
	return b
}

// randomHex is a fresh identifier, as Batch output ids are: a re-run's
// lines must not pose as the same request.
func randomHex() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newBatchInput reads Batch lines when --input-format asks for them; nil
// otherwise. tmpl is the --tokenizer model, nil without one.
func newBatchInput(cfg *Config, tmpl *chat.Model) *batchInput {
	if cfg.InputFormat != FormatOpenAIBatch {
		return nil
	}
	return &batchInput{kind: cfg.Kind, model: cfg.Model, params: cfg.Params, chat: tmpl}
}
