package backend

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/thinking"
)

// OpenAI is OpenAI-compatible chat completions: OpenRouter (base
// https://openrouter.ai/api/v1), vLLM and SGLang (base http://host:port/v1).
// It posts the conversation to {base}/chat/completions with the model named.
var OpenAI = register(&Kind{
	Name:       "openai",
	About:      "chat completions with messages",
	Input:      Messages,
	NeedsModel: true,
	KeyInfo:    true,
	BatchBody:  func(string, json.RawMessage) (BodyMember, error) { return BodyField, nil },
	Auth:       BearerAttributed,
	Classify:   statusError,
	open:       func(c client) Backend { return &openAI{client: c} },
})

type openAI struct {
	client
}

// NewOpenAI returns a backend of kind OpenAI.
func NewOpenAI(opts Options) Backend { return OpenAI.New(opts) }

func (b *openAI) Name() string { return b.kind.Name }

// The chat completions body: OpenAI's fields, plus top_k, min_p and
// stop_token_ids (vLLM, SGLang and OpenRouter accept them) and
// OpenRouter's reasoning and usage. chatHead's members come first, then
// the sampling parameters (Sampling's chat names: the top-level ones, then
// each object, reasoning among them), then appendChatTail's.
type chatHead struct {
	Model    string          `json:"model,omitempty"`
	Messages json.RawMessage `json:"messages"`
	Tools    json.RawMessage `json:"tools,omitempty"`
	// MaxTokens rather than max_completion_tokens: OpenRouter, vLLM and
	// SGLang all honour max_tokens, while older vLLM and SGLang servers do
	// not know the newer name. --extra can send the other. 0 leaves the
	// limit to the server.
	MaxTokens int `json:"max_tokens,omitempty"`
}

// chatObjects are the objects that Sampling's chat names put members in,
// in the order of their first field.
var chatObjects = func() []string {
	var objects []string
	for _, f := range samplingFields {
		if o := f.object[wireChat]; o != "" && !slices.Contains(objects, o) {
			objects = append(objects, o)
		}
	}
	return objects
}()

// reasoningObject is OpenRouter's reasoning object, which a record's
// thinking setting switches on or off (enabled).
const reasoningObject = "reasoning"

func (b *openAI) requestBody(req *Request) ([]byte, error) {
	p := &req.Params
	if len(bytes.TrimSpace(req.Messages)) == 0 {
		return nil, &Error{Kind: KindRequest, Message: "no messages: the OpenAI-compatible backend sends the conversation"}
	}
	head := chatHead{Model: b.opts.Model, Messages: req.Messages, MaxTokens: p.MaxTokens}
	if t := bytes.TrimSpace(req.Tools); len(t) > 0 && string(t) != "null" && string(t) != "[]" {
		head.Tools = req.Tools
	}
	sampling := p.Sampling
	if c := req.Thinking; c != nil && c.Effort != "" { // --thinking effort:... replaces --reasoning-effort
		sampling.ReasoningEffort = c.Effort
	}
	out, err := json.Marshal(head)
	if err == nil { // open for the sampling parameters' members
		out, err = appendChatSampling(out[:len(out)-1], &sampling, req.Thinking)
	}
	if err == nil {
		out, err = appendChatTail(out, req.Thinking, b.opts.Stream)
	}
	if err != nil {
		return nil, &Error{Kind: KindRequest, Message: err.Error(), cause: err}
	}
	return mergeExtra(out, p.Extra)
}

// appendChatTail appends the members that follow the sampling parameters
// and closes the body. chat_template_kwargs carries a record's thinking
// setting to servers that render the chat template themselves (vLLM,
// SGLang): the variables enable_thinking and thinking, or
// reasoning_effort; OpenRouter reads the reasoning switch instead.
// stream_options asks for usage in the last chunk: without it OpenAI and
// vLLM streams carry no token counts. usage is OpenRouter's usage
// accounting switch (cost, cached and reasoning tokens): OpenRouter now
// always includes them and ignores it; other servers ignore unknown
// fields; {"usage": null} in --extra removes it.
func appendChatTail(dst []byte, c *thinking.Choice, stream bool) ([]byte, error) {
	if c != nil {
		kwargs, err := json.Marshal(c.TemplateArgs()) // keys sorted, as a struct's member would be
		if err != nil {
			return nil, err
		}
		dst = append(append(dst, `,"chat_template_kwargs":`...), kwargs...)
	}
	if stream {
		dst = append(dst, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	return append(dst, `,"usage":{"include":true}}`...), nil
}

// appendChatSampling appends the sampling parameters' members: the
// top-level ones, then each of chatObjects that has members. A record's
// thinking setting (OpenRouter's reasoning.enabled) leads the reasoning
// object: off sends {"enabled": false} alone, since an effort or a token
// limit would turn reasoning back on; on keeps them.
func appendChatSampling(dst []byte, s *Sampling, c *thinking.Choice) ([]byte, error) {
	dst, err := s.appendMembers(dst, wireChat, "")
	if err != nil {
		return nil, err
	}
	for _, object := range chatObjects {
		before := len(dst)
		dst = append(dst, ',')
		dst = appendJSONString(dst, object)
		dst = append(dst, ":{"...)
		open := len(dst)
		if object == reasoningObject && c != nil {
			dst = append(dst, `"enabled":`...)
			dst = strconv.AppendBool(dst, c.Thinking)
			if !c.Thinking {
				dst = append(dst, '}')
				continue
			}
		}
		if dst, err = s.appendMembers(dst, wireChat, object); err != nil {
			return nil, err
		}
		switch {
		case len(dst) == open: // nothing to send in it
			dst = dst[:before]
			continue
		case dst[open] == ',': // the first member's comma
			dst = append(dst[:open], dst[open+1:]...)
		}
		dst = append(dst, '}')
	}
	return dst, nil
}

// Do sends req to POST {base}/chat/completions. finish_reason "error" (a
// provider failing after the answer began) and error bodies or chunks are
// retryable errors of KindStream.
func (b *openAI) Do(ctx context.Context, base string, req *Request) (*Result, error) {
	return b.Start(ctx, base, req).Result()
}

// Start sends req to POST {base}/chat/completions (see Do).
func (b *openAI) Start(ctx context.Context, base string, req *Request) *Call {
	of := &openAICall{b: b, req: req}
	body, err := of.body()
	if err != nil {
		return failedCall(b.clean(err))
	}
	return b.start(ctx, joinURL(base, "/chat/completions"), body, req.Timeout, of)
}

// openAICall makes a chat completion request's body and parser again (see
// remade).
type openAICall struct {
	b   *openAI
	req *Request
}

func (o *openAICall) body() ([]byte, error) { return o.b.requestBody(o.req) }

func (o *openAICall) parser() answerParser { return &chatAnswer{} }

// chatAnswer accumulates a chat completion or its stream. Only choice 0 is
// read: synthpipe asks for one answer per request.
type chatAnswer struct {
	content   strings.Builder
	reasoning strings.Builder
	details   reasoningDetails
	tools     []toolCallDelta
	finish    string
	native    json.RawMessage
	usage     gjson.Result
	model     string
	sawFinish bool
}

func (a *chatAnswer) whole(doc gjson.Result) (*Result, *Error) {
	choice := doc.Get("choices.0")
	if !choice.IsObject() {
		return nil, protocolError("answer has no choices: %s", snippet([]byte(doc.Raw)))
	}
	msg := choice.Get("message")
	res := &Result{
		Text:             contentText(msg.Get("content")),
		Reasoning:        firstOf(msg, "reasoning", "reasoning_content").String(),
		ReasoningDetails: nonEmptyArray(msg.Get("reasoning_details")),
		ToolCalls:        nonEmptyArray(msg.Get("tool_calls")),
	}
	fr := choice.Get("finish_reason")
	return a.finishResult(res, fr.String(), nativeFinish(choice, fr), doc.Get("usage"), doc.Get("model").String())
}

func (a *chatAnswer) event(doc gjson.Result) (bool, *Error) {
	if m := doc.Get("model").String(); m != "" && a.model == "" {
		a.model = m
	}
	if u := doc.Get("usage"); u.IsObject() {
		a.usage = u
	}
	choice := doc.Get("choices.#(index==0)")
	if !choice.Exists() {
		choice = doc.Get("choices.0")
	}
	if !choice.IsObject() {
		return false, nil // the usage chunk has no choices
	}
	delta := choice.Get("delta")
	output := false
	if s := contentText(delta.Get("content")); s != "" {
		a.content.WriteString(s)
		output = true
	}
	if s := firstOf(delta, "reasoning", "reasoning_content").String(); s != "" {
		a.reasoning.WriteString(s)
		output = true
	}
	if d := delta.Get("reasoning_details"); d.IsArray() {
		a.details.add(d)
	}
	if tc := delta.Get("tool_calls"); tc.IsArray() && len(tc.Array()) > 0 {
		var bad bool
		tc.ForEach(func(_, call gjson.Result) bool {
			if !call.IsObject() {
				bad = true
				return false
			}
			a.tools = addToolCallDelta(a.tools, call)
			return true
		})
		if bad {
			return false, protocolError("tool_calls delta is not a list of objects")
		}
		output = true
	}
	if fr := choice.Get("finish_reason"); fr.Type == gjson.String && fr.Str != "" { // "" says no more than null
		a.finish, a.sawFinish = fr.Str, true
		a.native = nativeFinish(choice, fr)
		if fr.Str == "error" {
			return output, streamError(doc)
		}
	}
	return output, nil
}

// charged is what the stream's usage so far says was charged, for an
// attempt that then failed.
func (a *chatAnswer) charged() *float64 { return reportedCost(a.usage) }

// heldBytes is what the stream's output so far takes.
func (a *chatAnswer) heldBytes() int64 {
	n := int64(a.content.Cap() + a.reasoning.Cap() + len(a.native))
	n += a.details.bytes
	for _, t := range a.tools {
		n += int64(cap(t.arguments) + len(t.id) + len(t.typ) + len(t.name))
	}
	return n
}

// end builds the answer of a stream that said [DONE]. A stream without a
// finish reason is complete all the same ([DONE] says so) and is taken as
// a whole answer with a null finish_reason is: with none (its usage says
// what was paid for; another attempt would be paid again).
func (a *chatAnswer) end() (*Result, *Error) {
	res := &Result{
		Text:             a.content.String(),
		Reasoning:        a.reasoning.String(),
		ReasoningDetails: a.details.json(),
		ToolCalls:        toolCallsJSON(a.tools),
	}
	return a.finishResult(res, a.finish, a.native, a.usage, a.model)
}

// finishResult normalizes the finish reason and fills in the accounting.
func (a *chatAnswer) finishResult(res *Result, finish string, native json.RawMessage, usage gjson.Result, model string) (*Result, *Error) {
	switch norm := normalizeFinish(finish); norm {
	case "error":
		return nil, &Error{Kind: KindStream, Message: "the provider failed while answering (finish_reason error)", Retryable: true, Cost: reportedCost(usage)}
	case "abort":
		return nil, &Error{Kind: KindAbort, Message: "aborted by the server", Retryable: true, Cost: reportedCost(usage)}
	default:
		res.FinishReason = norm
	}
	res.NativeFinishReason = native
	res.Model = model
	if usage.IsObject() {
		res.Usage = json.RawMessage(usage.Raw)
		res.PromptTokens = int(usage.Get("prompt_tokens").Int())
		res.CompletionTokens = int(usage.Get("completion_tokens").Int())
		res.CachedTokens = int(usage.Get("prompt_tokens_details.cached_tokens").Int())
		res.ReasoningTokens = int(usage.Get("completion_tokens_details.reasoning_tokens").Int())
		res.Cost = reportedCost(usage)
	}
	return res, nil
}

// nativeFinish is the provider's own finish reason: OpenRouter's
// native_finish_reason, else the finish_reason as sent.
func nativeFinish(choice, finish gjson.Result) json.RawMessage {
	if n := choice.Get("native_finish_reason"); n.Exists() && n.Type != gjson.Null {
		return rawJSON(n)
	}
	return rawJSON(finish)
}

// normalizeFinish maps the finish reasons of OpenAI-compatible servers and
// of the providers behind OpenRouter onto synthpipe's: stop, length,
// tool_calls, content_filter, plus error and abort, which Do turns into
// errors. An unknown value passes through unchanged (it is in
// NativeFinishReason too); a missing one stays empty.
func normalizeFinish(reason string) string {
	switch r := strings.ToLower(reason); r {
	case "stop", "eos", "end_turn", "stop_sequence", "complete":
		return "stop"
	case "length", "max_tokens", "max_output_tokens", "model_length":
		return "length"
	case "tool_calls", "function_call", "tool_use":
		return "tool_calls"
	case "content_filter", "safety", "recitation", "refusal":
		return "content_filter"
	case "error", "abort":
		return r
	default:
		return reason
	}
}

// contentText reads message content: a string, or a list of parts whose
// text parts are joined.
func contentText(v gjson.Result) string {
	if !v.IsArray() {
		return v.String()
	}
	var b strings.Builder
	v.ForEach(func(_, part gjson.Result) bool {
		if part.Type == gjson.String {
			b.WriteString(part.Str)
		} else {
			b.WriteString(part.Get("text").String())
		}
		return true
	})
	return b.String()
}

// nonEmptyArray returns a JSON array as sent, or nil when absent or empty.
func nonEmptyArray(v gjson.Result) json.RawMessage {
	if !v.IsArray() || len(v.Array()) == 0 {
		return nil
	}
	return json.RawMessage(v.Raw)
}

// toolCallDelta is one tool call being assembled from stream fragments.
type toolCallDelta struct {
	index     int64
	id        string
	typ       string
	name      string
	arguments []byte // fragments concatenated
}

// addToolCallDelta merges one tool_calls delta: the call is found by its
// index (a delta without one continues the last call), id, type and name
// arrive once, and argument fragments are concatenated.
func addToolCallDelta(calls []toolCallDelta, d gjson.Result) []toolCallDelta {
	idx := d.Get("index")
	i := len(calls) - 1
	if idx.Type == gjson.Number {
		i = slices.IndexFunc(calls, func(c toolCallDelta) bool { return c.index == idx.Int() })
	}
	if i < 0 {
		calls = append(calls, toolCallDelta{index: idx.Int()})
		if idx.Type != gjson.Number {
			calls[len(calls)-1].index = int64(len(calls) - 1)
		}
		i = len(calls) - 1
	}
	c := &calls[i]
	if s := d.Get("id").String(); s != "" {
		c.id = s
	}
	if s := d.Get("type").String(); s != "" {
		c.typ = s
	}
	if s := d.Get("function.name").String(); s != "" {
		c.name += s
	}
	c.arguments = append(c.arguments, d.Get("function.arguments").String()...)
	return calls
}

// toolCallsJSON renders assembled tool calls in OpenAI's message form,
// ordered by index.
func toolCallsJSON(calls []toolCallDelta) json.RawMessage {
	if len(calls) == 0 {
		return nil
	}
	type function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string   `json:"id"`
		Type     string   `json:"type"`
		Function function `json:"function"`
		index    int64
	}
	out := make([]call, len(calls))
	for i := range calls {
		c := &calls[i]
		typ := c.typ
		if typ == "" {
			typ = "function"
		}
		out[i] = call{ID: c.id, Type: typ, Function: function{Name: c.name, Arguments: string(c.arguments)}, index: c.index}
	}
	slices.SortStableFunc(out, func(a, b call) int { return cmp.Compare(a.index, b.index) }) // a difference of int64s overflows
	b, _ := json.Marshal(out)
	return b
}

// reasoningDetails assembles OpenRouter's streamed reasoning_details:
// consecutive fragments of one detail (same type and index) have their
// text, summary or data concatenated and their other fields (signature,
// format, id) filled in as they arrive.
type reasoningDetails struct {
	items []map[string]any
	bytes int64 // the JSON text taken in, for the memory bound
}

// add takes the details of one delta. Entries that are not objects are
// skipped rather than failing the answer: the details are provenance, not
// the answer itself.
func (r *reasoningDetails) add(arr gjson.Result) {
	r.bytes += int64(len(arr.Raw))
	arr.ForEach(func(_, item gjson.Result) bool {
		if !item.IsObject() {
			return true
		}
		var d map[string]any
		dec := json.NewDecoder(strings.NewReader(item.Raw))
		dec.UseNumber() // keep numbers (indexes, ids) exactly as sent
		if dec.Decode(&d) != nil {
			return true
		}
		if n := len(r.items); n > 0 && sameDetail(r.items[n-1], d) {
			mergeDetail(r.items[n-1], d)
		} else {
			r.items = append(r.items, d)
		}
		return true
	})
}

func sameDetail(a, b map[string]any) bool {
	return fmt.Sprint(a["type"]) == fmt.Sprint(b["type"]) && fmt.Sprint(a["index"]) == fmt.Sprint(b["index"])
}

func mergeDetail(into, d map[string]any) {
	for k, v := range d {
		switch k {
		case "text", "summary", "data":
			s, ok := v.(string)
			if prev, isStr := into[k].(string); ok && isStr {
				into[k] = prev + s
				continue
			}
		}
		if v != nil {
			into[k] = v
		}
	}
}

func (r *reasoningDetails) json() json.RawMessage {
	if len(r.items) == 0 {
		return nil
	}
	b, _ := json.Marshal(r.items)
	return b
}

// ServerInfo reads the served model's context length from GET
// {base}/models (vLLM's max_model_len, OpenRouter's and SGLang's
// context_length, and OpenRouter's top_provider.max_completion_tokens). It returns (nil, nil) when the server has no model list
// or does not list Options.Model; OpenAI-compatible servers do not report
// their KV capacity.
func (b *openAI) ServerInfo(ctx context.Context, base string) (*ServerInfo, error) {
	doc, err := b.getJSON(ctx, joinURL(base, "/models"))
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m := findModel(doc, b.opts.Model)
	if !m.Exists() {
		return nil, nil
	}
	return &ServerInfo{
		ContextLength:       int(firstOf(m, "context_length", "max_model_len", "top_provider.context_length").Int()),
		MaxCompletionTokens: int(m.Get("top_provider.max_completion_tokens").Int()),
		Raw:                 json.RawMessage(m.Raw),
	}, nil
}

// findModel finds a model in a /models list by id (or OpenRouter's
// canonical_slug); with no name given, a list of one model answers.
func findModel(doc gjson.Result, name string) gjson.Result {
	var found gjson.Result
	list := doc.Get("data")
	list.ForEach(func(_, m gjson.Result) bool {
		if m.Get("id").String() == name || (name != "" && m.Get("canonical_slug").String() == name) {
			found = m
			return false
		}
		return true
	})
	if !found.Exists() && name == "" && len(list.Array()) == 1 {
		found = list.Get("0")
	}
	return found
}

// Pricing reads the price of model from an OpenRouter-style model list,
// GET {base}/models, whose entries carry pricing.prompt and
// pricing.completion as decimal strings in USD per token. OpenRouter's
// list is public, so no key is sent. A price ListedPrice cannot use (the
// -1 of variable-price routers) is an error of KindRequest.
func Pricing(ctx context.Context, base, model string) (promptUSDPerToken, completionUSDPerToken float64, err error) {
	c := newClient(Options{}, OpenAI)
	doc, err := c.getJSON(ctx, joinURL(base, "/models"))
	if err != nil {
		return 0, 0, err
	}
	m := findModel(doc, model)
	if !m.Exists() {
		return 0, 0, &Error{Kind: KindRequest, Message: fmt.Sprintf("model %q is not in the model list", model)}
	}
	if promptUSDPerToken, err = ListedPrice(m, "prompt"); err != nil {
		return 0, 0, &Error{Kind: KindProtocol, Message: err.Error()}
	}
	if completionUSDPerToken, err = ListedPrice(m, "completion"); err != nil {
		return 0, 0, &Error{Kind: KindProtocol, Message: err.Error()}
	}
	return promptUSDPerToken, completionUSDPerToken, nil
}

// MaxListedPrice bounds a price per token that is believed: a million
// dollars per million tokens is past any model's, and a list that says more
// (1e308) is wrong, not expensive; the products of such a price overflow.
const MaxListedPrice = 1.0

// ListedPrice reads pricing.FIELD (prompt, completion) of one entry of a
// /models list, USD per token as a decimal string or a number. A price that
// is missing, not a number, not finite, negative (OpenRouter lists -1 for
// routers whose price depends on the model they pick, such as
// openrouter/auto) or past MaxListedPrice is unknown: the error names the
// model and what was listed, for the caller to ask for a price instead.
func ListedPrice(model gjson.Result, field string) (float64, error) {
	v := model.Get("pricing." + field)
	id := model.Get("id").String()
	if !v.Exists() || v.Type == gjson.Null {
		return 0, fmt.Errorf("%q lists no %s price", id, field)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v.String()), 64)
	switch {
	case v.Type != gjson.Number && v.Type != gjson.String, err != nil && !errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%q lists its %s price as %s, which is not a number", id, field, clip(v.Raw))
	case math.IsNaN(f) || math.IsInf(f, 0) || errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%q lists its %s price as %s, which is not a finite number", id, field, clip(v.Raw))
	case f < 0:
		return 0, fmt.Errorf("%q lists its %s price as %s: a price that depends on the request (variable-price routers such as openrouter/auto list -1)", id, field, clip(v.Raw))
	case f > MaxListedPrice:
		return 0, fmt.Errorf("%q lists its %s price as %s USD per token, past any model's ($%g per token at most)", id, field, clip(v.Raw), MaxListedPrice)
	}
	return f, nil
}

// clip bounds server text quoted in an error.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
