package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/tidwall/gjson"
)

// processingComment is the SSE comment OpenRouter sends to keep a stream
// alive while the model has not produced anything yet.
var processingComment = []byte(": OPENROUTER PROCESSING\n\n")

// chatInput is a parsed chat completion request.
type chatInput struct {
	model        string
	key          uint64
	promptTokens int
	promptIDs    []int // pseudo ids of the messages, for the prefix cache
	params       genParams
	stream       bool
	reasoning    reasoningRequest
	tool         string // function to call, "" for a plain answer
	// calls are the functions the answer calls under Kimi's ids
	// (Config.AnswerFormat kimi-k2.5): those the last user turn names.
	calls []string
}

// reasoningRequest is OpenRouter's reasoning object (also reached through
// reasoning_effort and the legacy include_reasoning).
type reasoningRequest struct {
	enabled   bool
	effort    string
	maxTokens int
	exclude   bool
}

// parseChat reads the request. The prompt length is estimated from the text
// of the messages (see estimateTokens) because the simulator has no
// tokenizer; the prompt key covers roles and texts, so identical
// conversations get identical answers.
func (s *Server) parseChat(doc gjson.Result) (chatInput, error) {
	in := chatInput{model: doc.Get("model").String()}
	if in.model == "" {
		in.model = s.cfg.ModelName
	}
	messages := doc.Get("messages")
	if !messages.IsArray() || len(messages.Array()) == 0 {
		return in, errors.New("messages: expected a non-empty array of messages")
	}
	var prompt strings.Builder
	for _, m := range messages.Array() {
		start := prompt.Len()
		prompt.WriteString(m.Get("role").String())
		prompt.WriteByte('\n')
		content := m.Get("content")
		if content.IsArray() {
			for _, part := range content.Array() {
				prompt.WriteString(part.Get("text").String())
			}
		} else {
			prompt.WriteString(content.String())
		}
		prompt.WriteByte('\n')
		// Cut per message: conversations that share their first
		// messages share their first pseudo ids.
		in.promptIDs = appendPseudoIDs(in.promptIDs, prompt.String()[start:])
	}
	text := prompt.String()
	in.key = keyOfText(text)
	in.promptTokens = estimateTokens(text)
	if n := doc.Get("n"); n.Exists() && n.Int() != 1 {
		return in, errors.New("n: only n=1 is supported")
	}

	maxName := "max_tokens"
	if doc.Get("max_completion_tokens").Exists() {
		maxName = "max_completion_tokens"
	}
	// Without a limit the answer may use the rest of the context window.
	room := min(s.cfg.ContextLength, s.cfg.MaxTotalTokens) - in.promptTokens
	var err error
	if in.params, err = parseSampling(doc.Get, maxName, max(room, 0)); err != nil {
		return in, err
	}
	if err := s.checkLengths(in.promptTokens, in.params.maxNew); err != nil {
		return in, err
	}
	in.key = withSeed(in.key, doc.Get("seed"))
	in.stream = doc.Get("stream").Bool()
	in.reasoning = parseReasoning(doc)
	in.tool = chosenTool(doc)
	if s.kimi != nil && in.tool == "" {
		in.calls = namedTools(doc)
	}
	return in, nil
}

func parseReasoning(doc gjson.Result) reasoningRequest {
	var rr reasoningRequest
	if r := doc.Get("reasoning"); r.IsObject() {
		rr.effort = r.Get("effort").String()
		rr.maxTokens = int(r.Get("max_tokens").Int())
		rr.exclude = r.Get("exclude").Bool()
		rr.enabled = rr.effort != "" || rr.maxTokens > 0 || r.Get("enabled").Bool()
		if e := r.Get("enabled"); e.Exists() && !e.Bool() {
			rr.enabled = false
		}
	}
	if e := doc.Get("reasoning_effort").String(); e != "" && !rr.enabled {
		rr.enabled, rr.effort = true, e
	}
	if doc.Get("include_reasoning").Bool() {
		rr.enabled = true
	}
	thinkingKwargs(doc.Get("chat_template_kwargs"), &rr)
	if rr.effort == "none" {
		rr.enabled = false
	}
	return rr
}

// thinkingKwargs reads the chat template variables that vLLM and SGLang
// servers pass to a thinking model's template: enable_thinking (Qwen3),
// thinking (Kimi, DeepSeek) or reasoning_effort (gpt-oss). A false one
// turns reasoning off whatever else the request says, as the template
// then closes the reasoning block before the answer.
func thinkingKwargs(kw gjson.Result, rr *reasoningRequest) {
	if !kw.IsObject() {
		return
	}
	for _, name := range []string{"enable_thinking", "thinking"} {
		switch v := kw.Get(name); v.Type {
		case gjson.True:
			rr.enabled = true
		case gjson.False:
			rr.enabled = false
			return
		}
	}
	if e := kw.Get("reasoning_effort").String(); e != "" {
		rr.enabled, rr.effort = true, e
	}
}

// chosenTool returns the function the answer calls: the one named by
// tool_choice, or the first tool when tool_choice is "required". With
// "auto" (the default) the simulator answers in text.
func chosenTool(doc gjson.Result) string {
	tools := doc.Get("tools")
	if !tools.IsArray() || len(tools.Array()) == 0 {
		return ""
	}
	choice := doc.Get("tool_choice")
	if name := choice.Get("function.name").String(); name != "" {
		return name
	}
	if choice.String() == "required" {
		return tools.Get("0.function.name").String()
	}
	return ""
}

// namedTools are the request's tools its last message, when it is the
// user's, names (see namedIn).
func namedTools(doc gjson.Result) []string {
	msgs := doc.Get("messages").Array()
	last := msgs[len(msgs)-1]
	if last.Get("role").String() != "user" {
		return nil
	}
	text := last.Get("content").String()
	if c := last.Get("content"); c.IsArray() {
		text = ""
		for _, part := range c.Array() {
			text += part.Get("text").String()
		}
	}
	var tools []string
	for _, t := range doc.Get("tools").Array() {
		tools = append(tools, t.Get("function.name").String())
	}
	return namedIn(tools, text)
}

// reasoningTokens is how many of the answer's content tokens are reasoning.
func (s *Server) reasoningTokens(rr reasoningRequest, content int) int {
	if !rr.enabled {
		return 0
	}
	share := s.cfg.ReasoningShare
	switch rr.effort {
	case "high", "xhigh":
		share *= 2
	case "low", "minimal":
		share /= 2
	}
	n := int(math.Round(math.Min(share, 0.9) * float64(content)))
	if rr.maxTokens > 0 {
		n = min(n, rr.maxTokens)
	}
	return n
}

// The chat completion schema, OpenAI's with OpenRouter's additions.
type (
	chatMessage struct {
		Role             string            `json:"role,omitempty"`
		Content          *string           `json:"content"`
		Refusal          *string           `json:"refusal,omitempty"`
		Reasoning        *string           `json:"reasoning"`
		ReasoningDetails []reasoningDetail `json:"reasoning_details,omitempty"`
		ToolCalls        []toolCall        `json:"tool_calls,omitempty"`
	}
	reasoningDetail struct {
		Type   string `json:"type"`
		Text   string `json:"text"`
		Format string `json:"format"`
		Index  int    `json:"index"`
	}
	toolCall struct {
		Index    int          `json:"index"`
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function toolFunction `json:"function"`
	}
	toolFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	chatChoice struct {
		Index              int          `json:"index"`
		Message            *chatMessage `json:"message,omitempty"`
		Delta              *chatMessage `json:"delta,omitempty"`
		FinishReason       *string      `json:"finish_reason"`
		NativeFinishReason *string      `json:"native_finish_reason"`
		Logprobs           any          `json:"logprobs"`
	}
	chatUsage struct {
		PromptTokens        int     `json:"prompt_tokens"`
		CompletionTokens    int     `json:"completion_tokens"`
		TotalTokens         int     `json:"total_tokens"`
		Cost                float64 `json:"cost"`
		IsBYOK              bool    `json:"is_byok"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	}
	chatError struct {
		Code     any            `json:"code"`
		Message  string         `json:"message"`
		Metadata map[string]any `json:"metadata,omitempty"`
	}
	chatResponse struct {
		ID       string       `json:"id"`
		Provider string       `json:"provider"`
		Model    string       `json:"model"`
		Object   string       `json:"object"`
		Created  int64        `json:"created"`
		Choices  []chatChoice `json:"choices"`
		Usage    *chatUsage   `json:"usage,omitempty"`
		Error    *chatError   `json:"error,omitempty"`
	}
)

// chatAnswer is the rendered state of a chat request after n tokens.
type chatAnswer struct {
	reasoning string
	content   string
}

// answerAt renders the first n output tokens, the first r of which are
// reasoning. fin trims stops once the answer finished.
func answerAt(pl *plan, n, r int, fin finishReason) chatAnswer {
	full := pl.text(n, fin)
	var b strings.Builder
	renderInto(&b, pl.ids(0, min(r, n)), pl.eos)
	reasoning := b.String()
	content, ok := strings.CutPrefix(full, reasoning)
	if !ok {
		// A stop string inside the reasoning cut the answer short.
		reasoning, content = full, ""
	}
	return chatAnswer{reasoning: strings.TrimPrefix(reasoning, " "), content: strings.TrimPrefix(content, " ")}
}

// ExpectedChatAnswer returns the content and the reasoning text this server
// answers to a chat completion request body when no fault strikes, so a
// test can check that every answer belongs to its own request. The
// reasoning is returned even when the request excludes it from the answer.
func (s *Server) ExpectedChatAnswer(body []byte) (content, reasoning string, err error) {
	if !jsonl.Valid(body) {
		return "", "", errors.New("sim: request body is not valid JSON")
	}
	in, err := s.parseChat(gjson.ParseBytes(body))
	if err != nil {
		return "", "", err
	}
	pl := s.newPlan(in.key, in.params)
	ans := answerAt(&pl, pl.total, s.reasoningTokens(in.reasoning, pl.contentTokens()), pl.finish)
	return ans.content, ans.reasoning, nil
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	doc, err := readJSON(r)
	if err != nil {
		s.reject(w, openaiDialect, http.StatusBadRequest, err.Error())
		return
	}
	in, err := s.parseChat(doc)
	if err != nil {
		s.reject(w, openaiDialect, http.StatusBadRequest, err.Error())
		return
	}
	fault, err := s.faults.pick(r, in.key)
	if err != nil {
		s.reject(w, openaiDialect, http.StatusBadRequest, err.Error())
		return
	}
	if s.serveEarlyFault(w, r, fault, openaiDialect, in.stream) {
		return
	}
	if s.keyExhausted() {
		writeJSON(w, http.StatusPaymentRequired, errorBody(openaiDialect, http.StatusPaymentRequired,
			"Key limit exceeded. Raise the key's limit or use another key.", nil))
		return
	}
	pl := s.newPlan(in.key, in.params)
	delay := s.applyLateFault(fault, &pl, true)
	req := newRequest("gen-"+s.newRID(), in.promptTokens, pl, in.stream)
	req.promptIDs = in.promptIDs
	if err := s.engine.submit(req); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, errorBody(openaiDialect, http.StatusServiceUnavailable, err.Error(), nil))
		return
	}
	c := &chatCall{s: s, req: req, in: in, created: time.Now().Unix(), reasoning: s.reasoningTokens(in.reasoning, pl.contentTokens())}
	w.Header().Set("X-Generation-Id", req.rid)
	if in.stream {
		c.stream(w, r, delay)
		return
	}
	if !s.holdFirstToken(r.Context(), req, delay) || !s.waitDone(r.Context(), req) {
		return
	}
	res := req.result
	if res.finish.kind == finishAbort {
		// OpenRouter reports errors after processing began with HTTP 200
		// and the error in the body.
		writeJSON(w, http.StatusOK, errorBody(openaiDialect, http.StatusBadGateway, res.finish.message,
			map[string]any{"provider_name": "sim", "raw": res.finish.message}))
		return
	}
	ans := answerAt(&req.plan, res.outputLen, c.reasoning, res.finish)
	msg := &chatMessage{Role: "assistant", Content: &ans.content}
	c.fillReasoning(msg, ans.reasoning)
	if c.calling() {
		msg.Content = nil
		msg.ToolCalls = c.toolCalls(ans.content)
	}
	resp := c.envelope("chat.completion")
	finish := c.finishReason(res.finish)
	resp.Choices = []chatChoice{{Message: msg, FinishReason: &finish, NativeFinishReason: &finish}}
	resp.Usage = c.usage(res.outputLen)
	writeJSON(w, http.StatusOK, resp)
}

// chatCall carries what the response builders of one chat request share.
type chatCall struct {
	s         *Server
	req       *request
	in        chatInput
	created   int64
	reasoning int // reasoning tokens at the start of the answer
}

func (c *chatCall) envelope(object string) chatResponse {
	return chatResponse{ID: c.req.rid, Provider: "sim", Model: c.in.model, Object: object, Created: c.created}
}

func (c *chatCall) finishReason(f finishReason) string {
	switch {
	case c.calling():
		return "tool_calls"
	case f.kind == finishLength:
		return "length"
	default:
		return "stop"
	}
}

// fillReasoning sets reasoning and reasoning_details unless the request
// asked to exclude them (the tokens are still counted and billed).
func (c *chatCall) fillReasoning(msg *chatMessage, text string) {
	if !c.in.reasoning.enabled || c.in.reasoning.exclude || text == "" {
		return
	}
	msg.Reasoning = &text
	msg.ReasoningDetails = []reasoningDetail{{Type: "reasoning.text", Text: text, Format: "unknown", Index: 0}}
}

// calling tells that the answer calls tools.
func (c *chatCall) calling() bool { return c.in.tool != "" || len(c.in.calls) > 0 }

// toolCalls are the answer's calls: the tool_choice function with the
// answer's text as its input, or the named tools under Kimi's ids.
func (c *chatCall) toolCalls(content string) []toolCall {
	args, _ := json.Marshal(map[string]string{"input": content})
	if c.in.tool != "" {
		return []toolCall{{ID: "call_" + c.req.rid[len(c.req.rid)-12:], Type: "function",
			Function: toolFunction{Name: c.in.tool, Arguments: string(args)}}}
	}
	calls := make([]toolCall, len(c.in.calls))
	for i, name := range c.in.calls {
		calls[i] = toolCall{Index: i, ID: fmt.Sprintf("functions.%s:%d", name, i), Type: "function",
			Function: toolFunction{Name: name, Arguments: string(args)}}
	}
	return calls
}

// usage counts every output token, the EOS included, as SGLang's
// completion_tokens does, and prices them with the configured rates.
func (c *chatCall) usage(completion int) *chatUsage {
	u := &chatUsage{PromptTokens: c.in.promptTokens, CompletionTokens: completion, TotalTokens: c.in.promptTokens + completion}
	cost := float64(c.in.promptTokens)*math.Abs(c.s.cfg.PromptPrice) + float64(completion)*math.Abs(c.s.cfg.CompletionPrice)
	// Round away float noise such as 3.2999999999999997e-06; OpenRouter
	// reports costs with at most a dozen decimals.
	u.Cost = math.Round(cost*1e12) / 1e12
	c.s.key.add(u.Cost)
	u.CompletionTokensDetails.ReasoningTokens = min(c.reasoning, completion)
	u.PromptTokensDetails.CachedTokens = int(c.req.cached.Load())
	return u
}

// stream answers stream=true the way OpenRouter does: a processing comment,
// a first chunk with the assistant role, content and reasoning deltas, a
// chunk with the finish reason, a chunk with usage and empty choices, then
// "data: [DONE]". A failure mid-way sends OpenRouter's error chunk (top-level
// error, finish_reason "error", the usage and cost of the tokens generated
// so far) and ends the stream without [DONE].
func (c *chatCall) stream(w http.ResponseWriter, r *http.Request, delay time.Duration) {
	s, req := c.s, c.req
	sse := startSSE(w)
	sse.raw(processingComment)
	if !s.holdFirstToken(r.Context(), req, delay) {
		return
	}
	empty := ""
	c.sendDelta(sse, &chatMessage{Role: "assistant", Content: &empty}, nil)
	var sent chatAnswer
	var none finishReason
	emit := func(now chatAnswer) error {
		delta := &chatMessage{Role: "assistant"}
		if d, ok := strings.CutPrefix(now.content, sent.content); ok && d != "" {
			delta.Content = &d
		}
		if d, ok := strings.CutPrefix(now.reasoning, sent.reasoning); ok && d != "" {
			c.fillReasoning(delta, d)
		}
		sent = now
		if delta.Content == nil && delta.Reasoning == nil {
			return nil
		}
		if c.calling() {
			// Tool arguments are sent whole at the end.
			delta.Content = nil
			if delta.Reasoning == nil {
				return nil
			}
		}
		return c.sendDelta(sse, delta, nil)
	}
	ok := s.follow(r.Context(), req, s.cfg.ProcessingCommentInterval, func() error { return sse.raw(processingComment) },
		func(n int) error { return emit(answerAt(&req.plan, n, c.reasoning, none)) })
	if !ok {
		return
	}
	res := req.result
	if res.finish.kind == finishAbort {
		resp := c.envelope("chat.completion.chunk")
		resp.Error = &chatError{Code: "server_error", Message: res.finish.message}
		// The tokens generated before the failure are billed, and the
		// chunk says what was charged.
		resp.Usage = c.usage(res.outputLen)
		errReason := "error"
		resp.Choices = []chatChoice{{Delta: &chatMessage{Content: &empty}, FinishReason: &errReason, NativeFinishReason: &errReason}}
		sse.data(resp)
		return
	}
	final := answerAt(&req.plan, res.outputLen, c.reasoning, res.finish)
	if emit(final) != nil {
		return
	}
	last := &chatMessage{Role: "assistant", Content: &empty}
	if c.calling() {
		last.Content = nil
		last.ToolCalls = c.toolCalls(final.content)
	}
	finish := c.finishReason(res.finish)
	c.sendDelta(sse, last, &finish)
	usage := c.envelope("chat.completion.chunk")
	usage.Choices = []chatChoice{}
	usage.Usage = c.usage(res.outputLen)
	sse.data(usage)
	sse.raw(sseDone)
}

func (c *chatCall) sendDelta(sse *sseWriter, delta *chatMessage, finish *string) error {
	resp := c.envelope("chat.completion.chunk")
	resp.Choices = []chatChoice{{Delta: delta, FinishReason: finish, NativeFinishReason: finish}}
	return sse.data(resp)
}

// handleModels lists the served model in OpenAI's shape with SGLang's
// root/max_model_len and OpenRouter's context_length and pricing (USD per
// token, as decimal strings).
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	price := func(p float64) string {
		if p < 0 {
			return "-1" // a variable price
		}
		return strconv.FormatFloat(p, 'f', -1, 64)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": []any{map[string]any{
			"id":             s.cfg.ModelName,
			"object":         "model",
			"created":        s.start.Unix(),
			"owned_by":       "sglang",
			"root":           s.cfg.ModelName,
			"max_model_len":  s.cfg.ContextLength,
			"name":           s.cfg.ModelName,
			"context_length": s.cfg.ContextLength,
			"pricing":        map[string]string{"prompt": price(s.cfg.PromptPrice), "completion": price(s.cfg.CompletionPrice)},
		}},
	})
}
