package backend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/tidwall/gjson"
)

// StreamMode says how an SGLang /generate stream carries its output.
type StreamMode int

const (
	// StreamAuto detects the mode in each stream (see sglangAnswer.mode).
	StreamAuto StreamMode = iota
	// StreamCumulative: every chunk holds the whole text and output_ids so
	// far (SGLang's default).
	StreamCumulative
	// StreamIncremental: every chunk holds only the new text and ids
	// (SGLang's --incremental-streaming-output).
	StreamIncremental
)

// ridNonce tells this process's rids from those of an earlier run: after
// a crash SGLang may still hold the old run's request in flight, and it
// refuses a duplicate rid with HTTP 400. It is drawn on first use: a tool
// that sends no request never reads the system's random source.
var ridNonce = sync.OnceValue(newRIDNonce)

func newRIDNonce() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// RID returns the SGLang request id of one attempt at a record:
// "<id>#<attempt>.<nonce>", where nonce is 8 hex digits drawn once per
// process. SGLang refuses a rid that is still in flight, and a timed-out
// attempt can still be in flight when the next one starts, so every attempt
// (and every run) needs its own rid; the record id leads so that an
// operator can grep SGLang's logs for it.
func RID(id string, attempt int) string {
	return id + "#" + strconv.Itoa(attempt) + "." + ridNonce()
}

// SGLang is SGLang's native API: POST /generate with token ids, GET
// /server_info for the KV cache's size.
var SGLang = register(&Kind{
	Name:      "sglang",
	About:     "native /generate with input_ids",
	Input:     TokenIDs,
	BatchBody: sglangBatchBody,
	Auth:      Bearer,
	Classify:  statusError,
	open:      func(c client) Backend { return &sglang{client: c} },
})

type sglang struct {
	client
}

// NewSGLang returns a backend of kind SGLang.
func NewSGLang(opts Options) Backend { return SGLang.New(opts) }

func (b *sglang) Name() string { return b.kind.Name }

// sglangSamplingKeys are the chat completions body fields that SGLang's
// sampling_params understand; the rest have no meaning for /generate.
var sglangSamplingKeys = map[string]bool{
	"frequency_penalty": true, "presence_penalty": true, "repetition_penalty": true,
	"min_tokens": true, "ignore_eos": true,
}

// sglangBatchBody sends the penalties SGLang understands among the sampling
// parameters and leaves the rest out, except a response_format asking for
// JSON: unconstrained answers where the file asked for JSON would pass for
// good data.
func sglangBatchBody(key string, value json.RawMessage) (BodyMember, error) {
	switch {
	case sglangSamplingKeys[key]:
		return BodySampling, nil
	case key == "response_format" && gjson.GetBytes(value, "type").String() != "text":
		return BodyDrop, errors.New(`"body" has a "response_format": --backend sglang does not send it; use --backend openai with the server's /v1`)
	}
	return BodyDrop, nil
}

// requestBody builds the /generate body. Params.Extra is merged in (see
// mergeExtra): {"sampling_params": {"repetition_penalty": 1.1}} adds a
// sampling parameter, {"return_logprob": true} a top-level field.
func (b *sglang) requestBody(req *Request, rid string) ([]byte, error) {
	p := &req.Params
	if len(req.InputIDs) == 0 {
		return nil, &Error{Kind: KindRequest, Message: "no input_ids: the SGLang backend sends token ids (tokenize the prompts first)"}
	}
	if p.MaxTokens <= 0 {
		return nil, &Error{Kind: KindRequest, Message: fmt.Sprintf("max tokens must be positive, got %d", p.MaxTokens)}
	}
	body, err := appendSGLangBody(make([]byte, 0, 192+9*len(req.InputIDs)), req, rid, b.opts.Stream)
	if err != nil {
		return nil, &Error{Kind: KindRequest, Message: err.Error(), cause: err}
	}
	return mergeExtra(body, p.Extra)
}

// appendSGLangBody appends the /generate body of req to dst, fields as in
// SGLang's GenerateReqInput and SamplingParams: what json.Marshal writes
// for the struct of TestSGLangBodyIsMarshal, without its reflection (the
// ids are most of the body and of the client's work per request).
// max_new_tokens is always sent: SGLang's default of 128 would truncate
// answers without anyone asking for it. skip_special_tokens false and
// no_stop_trim true keep special tokens, tool-call markers and the matched
// stop in text and output_ids: the training data must hold exactly what
// the model produced.
func appendSGLangBody(dst []byte, req *Request, rid string, stream bool) ([]byte, error) {
	p := &req.Params
	dst = append(dst, `{"input_ids":`...)
	dst = jsonl.AppendIntArray(dst, req.InputIDs)
	dst = append(dst, `,"rid":`...)
	dst = appendJSONString(dst, rid)
	dst = append(dst, `,"sampling_params":{"max_new_tokens":`...)
	dst = strconv.AppendInt(dst, int64(p.MaxTokens), 10)
	dst, err := p.appendMembers(dst, wireSGLang, "")
	if err != nil {
		return nil, err
	}
	dst = append(dst, `,"skip_special_tokens":false,"no_stop_trim":true}`...)
	if stream {
		dst = append(dst, `,"stream":true`...)
	}
	return append(dst, '}'), nil
}

// Do sends req to POST {base}/generate.
//
// Finish reasons: {type: stop, matched: <token id or string>} (a matched
// EOS is the normal end) becomes "stop"; {type: length} "length". An
// {type: abort} answer is an error of KindAbort, retryable unless its
// status_code is a 4xx client error: SGLang aborts requests it cannot
// serve (shutdown, memory pressure, a client that seemed gone) and the
// partial output is not worth keeping.
func (b *sglang) Do(ctx context.Context, base string, req *Request) (*Result, error) {
	return b.Start(ctx, base, req).Result()
}

// Start sends req to POST {base}/generate (see Do).
func (b *sglang) Start(ctx context.Context, base string, req *Request) *Call {
	rid := RID(req.ID, req.Attempt)
	of := &sglangCall{b: b, req: req, rid: rid, answerRID: rid}
	body, err := of.body()
	if err != nil {
		return failedCall(b.clean(err))
	}
	if len(req.Params.Extra) > 0 { // --extra may set its own
		of.answerRID = gjson.GetBytes(body, "rid").String()
	}
	call := b.start(ctx, joinURL(base, "/generate"), body, req.Timeout, of)
	call.fix = duplicateRID
	return call
}

// sglangCall makes a /generate request's body and parser again (see
// remade).
type sglangCall struct {
	b              *sglang
	req            *Request
	rid, answerRID string // the rid sent, and the one the answer must name
}

func (s *sglangCall) body() ([]byte, error) { return s.b.requestBody(s.req, s.rid) }

func (s *sglangCall) parser() answerParser {
	return &sglangAnswer{mode: s.b.opts.SGLangStreamMode, promptTokens: len(s.req.InputIDs), rid: s.answerRID}
}

// duplicateRID makes SGLang's refusal of a rid it holds retryable: the
// previous attempt is still in flight on the server, and the next attempt
// has a new rid.
func duplicateRID(e *Error) {
	if e.Status == http.StatusBadRequest && strings.Contains(strings.ToLower(e.Message), "duplicate request id") {
		e.Kind, e.Retryable = KindHTTP, true
	}
}

// sglangAnswer accumulates a /generate answer or stream.
type sglangAnswer struct {
	rid          string // the rid sent (--extra may set its own); "" checks nothing
	mode         StreamMode
	promptTokens int          // len(input_ids), for servers that omit prompt_tokens
	chunks       int          // stream chunks seen
	ids          []int        // output ids so far
	text         []byte       // text so far
	scratch      []int        // ids of the current chunk
	finish       gjson.Result // the last chunk's meta_info.finish_reason
	counts       sglangCounts // and its counts
	sawOutput    bool         // a chunk carried output (FirstToken is known)
}

func (a *sglangAnswer) whole(doc gjson.Result) (*Result, *Error) {
	a.mode = StreamCumulative
	if _, e := a.event(doc); e != nil {
		return nil, e
	}
	if !a.finish.IsObject() && a.finish.Type != gjson.String {
		return nil, protocolError("answer has no finish_reason: %s", snippet([]byte(doc.Raw)))
	}
	return a.end()
}

// event takes one chunk. In auto mode the first chunk that tells the modes
// apart decides for the rest of the stream (a server streams one way):
// meta_info.completion_tokens counts all tokens so far, so a chunk whose
// output_ids are that long is cumulative and one that is that long only
// when added to the ids so far is incremental. Servers that omit the count
// are judged by prefixes: a chunk that does not extend the output so far is
// a delta. Until a chunk decides (the first chunk is read the same either
// way), chunks are taken as cumulative, SGLang's default.
func (a *sglangAnswer) event(doc gjson.Result) (bool, *Error) {
	var ok bool
	if a.scratch, ok = appendIDs(a.scratch[:0], doc.Get("output_ids")); !ok {
		return false, protocolError("output_ids is not a list of token ids")
	}
	text := doc.Get("text")
	if text.Exists() && text.Type != gjson.String && text.Type != gjson.Null {
		return false, protocolError("text is not a string")
	}
	meta := pickSGLangMeta(doc.Get("meta_info"))
	if id := meta.id; a.rid != "" && id.Exists() && id.String() != a.rid {
		// A proxy or server that mixes up its connections answers one
		// request with another's output: never to be written as this
		// record's answer. Another attempt may well get its own.
		return false, protocolError("answer to another request: meta_info.id is %q, the rid sent was %q", id.String(), a.rid)
	}
	if a.mode == StreamAuto && a.chunks > 0 {
		a.mode = a.detectMode(a.scratch, text.Str, meta.completionTokens)
	}
	output := len(a.scratch) > 0 || text.Str != ""
	if a.mode == StreamIncremental {
		a.ids = append(a.ids, a.scratch...)
		a.text = append(a.text, text.Str...)
	} else {
		// Swap rather than copy: a cumulative stream of a long answer
		// would otherwise copy every id once per chunk.
		a.ids, a.scratch = a.scratch, a.ids
		a.text = append(a.text[:0], text.Str...)
	}
	a.finish, a.counts = meta.finishReason, meta.counts()
	a.chunks++
	a.sawOutput = a.sawOutput || output
	return output, nil
}

// sglangMeta is what the answer reads of a chunk's meta_info, picked in
// one pass over it: a lookup by name walks the object up to its key, and
// to its end for a key that is absent (cached_tokens, most retraction
// counts), past the logprobs when they were asked for. Like a lookup, it
// takes the first of a key written twice.
type sglangMeta struct {
	id, finishReason, promptTokens, completionTokens, cachedTokens, reasoningTokens gjson.Result
	// retraction is num_retractions, total_retractions and
	// retraction_count, the names of the count in SGLang's versions.
	retraction [3]gjson.Result
}

func pickSGLangMeta(meta gjson.Result) sglangMeta {
	var m sglangMeta
	if !meta.IsObject() {
		return m
	}
	meta.ForEach(func(key, v gjson.Result) bool {
		var slot *gjson.Result
		switch key.Str {
		case "id":
			slot = &m.id
		case "finish_reason":
			slot = &m.finishReason
		case "prompt_tokens":
			slot = &m.promptTokens
		case "completion_tokens":
			slot = &m.completionTokens
		case "cached_tokens":
			slot = &m.cachedTokens
		case "reasoning_tokens":
			slot = &m.reasoningTokens
		case "num_retractions":
			slot = &m.retraction[0]
		case "total_retractions":
			slot = &m.retraction[1]
		case "retraction_count":
			slot = &m.retraction[2]
		}
		if slot != nil && !slot.Exists() {
			*slot = v
		}
		return true
	})
	return m
}

// retractions is the first retraction count given (see firstOf).
func (m *sglangMeta) retractions() gjson.Result {
	for _, v := range m.retraction {
		if v.Exists() && v.Type != gjson.Null {
			return v
		}
	}
	return gjson.Result{}
}

// sglangCounts is what an answer keeps of its last chunk's counts, as
// numbers: the parser is made for every answer, and its meta_info's
// values would take 80 bytes each.
type sglangCounts struct {
	prompt, completion             givenInt
	cached, reasoning, retractions int
}

// givenInt is a count that a server may leave out (or give as something
// else than a number).
type givenInt struct {
	n     int
	given bool
}

// or is the count, or def when it was not given.
func (g givenInt) or(def int) int {
	if !g.given {
		return def
	}
	return g.n
}

func (m *sglangMeta) counts() sglangCounts {
	return sglangCounts{
		prompt:      givenInt{int(m.promptTokens.Int()), m.promptTokens.Type == gjson.Number},
		completion:  givenInt{int(m.completionTokens.Int()), m.completionTokens.Type == gjson.Number},
		cached:      int(m.cachedTokens.Int()),
		reasoning:   int(m.reasoningTokens.Int()),
		retractions: int(m.retractions().Int()),
	}
}

// superseded skips the intermediate snapshots of a cumulative stream once
// the first output arrived: the final chunk holds everything they hold, and
// parsing each would cost time quadratic in the answer's length (a 16k-token
// answer streamed token by token repeats its ids 16k times). Only the
// finish reason is looked up, by a scan that allocates nothing; an error
// event or the final chunk is parsed and checked in full.
func (a *sglangAnswer) superseded(data []byte) bool {
	if a.mode != StreamCumulative || !a.sawOutput {
		return false
	}
	fr := gjson.GetBytes(data, "meta_info.finish_reason")
	if !fr.Exists() || fr.Type != gjson.Null || gjson.GetBytes(data, "error").Exists() {
		return false
	}
	a.chunks++
	return true
}

func (a *sglangAnswer) detectMode(ids []int, text string, completion gjson.Result) StreamMode {
	if completion.Type == gjson.Number {
		n := int(completion.Int())
		cumulative, incremental := len(ids) == n, len(a.ids)+len(ids) == n
		switch {
		case cumulative && !incremental:
			return StreamCumulative
		case incremental && !cumulative:
			return StreamIncremental
		case cumulative && incremental:
			return StreamAuto // nothing so far: either reading agrees
		}
	}
	if len(ids) < len(a.ids) || !slices.Equal(ids[:len(a.ids)], a.ids) || !strings.HasPrefix(text, string(a.text)) {
		return StreamIncremental
	}
	if len(a.ids) == 0 && len(a.text) == 0 {
		return StreamAuto
	}
	if len(ids) == len(a.ids) && len(text) == len(a.text) {
		// A snapshot adds to what came before; a chunk that repeats the
		// output so far exactly is a delta that repeats its tokens
		// ([5], [5], [5]): read as snapshots they would collapse into one.
		return StreamIncremental
	}
	return StreamCumulative
}

// heldBytes is what the stream's output so far takes.
func (a *sglangAnswer) heldBytes() int64 {
	return int64(cap(a.text) + 8*(cap(a.ids)+cap(a.scratch)))
}

func (a *sglangAnswer) end() (*Result, *Error) {
	fr, counts := a.finish, &a.counts
	res := &Result{
		OutputIDs:          a.ids,
		Text:               string(a.text),
		NativeFinishReason: rawJSON(fr),
		PromptTokens:       counts.prompt.or(a.promptTokens),
		CompletionTokens:   counts.completion.or(len(a.ids)),
		CachedTokens:       counts.cached,
		ReasoningTokens:    counts.reasoning,
		Retractions:        counts.retractions,
	}
	kind := fr.Get("type").String()
	if fr.Type == gjson.String {
		kind = fr.Str
	}
	switch kind {
	case "stop", "length":
		res.FinishReason = kind
	case "abort":
		return nil, sglangAbort(fr)
	case "":
		return nil, &Error{Kind: KindStream, Message: "stream ended without a finish reason", Retryable: true}
	default:
		res.FinishReason = kind
	}
	res.Usage = sglangUsage(res)
	return res, nil
}

// sglangAbort classifies {type: abort, message, status_code}.
func sglangAbort(fr gjson.Result) *Error {
	e := &Error{Kind: KindAbort, Status: int(fr.Get("status_code").Int()), Message: "aborted by the server"}
	if msg := fr.Get("message").String(); msg != "" {
		e.Message += ": " + msg
	}
	e.Retryable = e.Status == 0 || retryableStatus(e.Status)
	return e
}

// sglangUsage is the usage record of an SGLang answer, built from
// meta_info (which also holds timings and, when asked for, logprobs that
// do not belong in the accounting).
// It is written by hand, as encoding/json would write its fields: one
// per answer, where json.Marshal took a reflective walk and two buffers.
func sglangUsage(res *Result) json.RawMessage {
	u := make([]byte, 0, 96)
	u = strconv.AppendInt(append(u, `{"prompt_tokens":`...), int64(res.PromptTokens), 10)
	u = strconv.AppendInt(append(u, `,"completion_tokens":`...), int64(res.CompletionTokens), 10)
	u = strconv.AppendInt(append(u, `,"cached_tokens":`...), int64(res.CachedTokens), 10)
	if res.ReasoningTokens != 0 {
		u = strconv.AppendInt(append(u, `,"reasoning_tokens":`...), int64(res.ReasoningTokens), 10)
	}
	u = strconv.AppendInt(append(u, `,"retractions":`...), int64(res.Retractions), 10)
	return append(u, '}')
}

// ServerInfo reads GET {base}/server_info, or the older /get_server_info
// when that is missing. The document is SGLang's server_args, its
// scheduler info and internal_states (one per data-parallel rank); the
// fields moved between versions, so each is looked for in every place it
// has been.
func (b *sglang) ServerInfo(ctx context.Context, base string) (*ServerInfo, error) {
	doc, err := b.getJSON(ctx, joinURL(base, "/server_info"))
	var e *Error
	if errors.As(err, &e) && (e.Status == http.StatusNotFound || e.Status == http.StatusMethodNotAllowed) {
		doc, err = b.getJSON(ctx, joinURL(base, "/get_server_info"))
	}
	if err != nil {
		return nil, err
	}
	info := parseServerInfo(doc)
	info.Model = b.modelPath(ctx, base, doc)
	return info, nil
}

// modelPath is the model the server serves: model_path of GET
// {base}/model_info, or of the older /get_model_info, else of the server
// info doc (its server_args), else "".
func (b *sglang) modelPath(ctx context.Context, base string, doc gjson.Result) string {
	for _, path := range []string{"/model_info", "/get_model_info"} {
		m, err := b.getJSON(ctx, joinURL(base, path))
		if err == nil {
			if p := m.Get("model_path").String(); p != "" {
				return p
			}
			break
		}
		var e *Error
		if !errors.As(err, &e) || e.Status != http.StatusNotFound && e.Status != http.StatusMethodNotAllowed {
			break
		}
	}
	return doc.Get("model_path").String()
}

func parseServerInfo(doc gjson.Result) *ServerInfo {
	states := doc.Get("internal_states")
	if states.IsObject() {
		states = gjson.Parse("[" + states.Raw + "]")
	}
	first := states.Get("0")
	info := &ServerInfo{
		MaxTotalTokens:       int(firstOf(doc, "max_total_num_tokens", "max_total_tokens").Int()),
		MaxRunningRequests:   int(firstOf(doc, "max_running_requests").Int()),
		ContextLength:        int(firstOf(doc, "context_length").Int()),
		IncrementalStreaming: doc.Get("incremental_streaming_output").Bool(),
		Version:              doc.Get("version").String(),
		Raw:                  json.RawMessage(doc.Raw),
	}
	if info.MaxTotalTokens == 0 {
		info.MaxTotalTokens = int(first.Get("max_total_num_tokens").Int())
	}
	if info.MaxRunningRequests == 0 {
		// server_args leaves it null when SGLang sized it itself; the
		// ranks then report what they use, newer versions per rank.
		if perRank := first.Get("effective_max_running_requests_per_dp").Int(); perRank > 0 {
			info.MaxRunningRequests = int(perRank) * len(states.Array())
		} else {
			info.MaxRunningRequests = int(first.Get("max_running_requests").Int())
		}
	}
	if info.ContextLength == 0 {
		if n := int(doc.Get("max_req_input_len").Int()); n > 0 {
			info.ContextLength = n + 1
		}
	}
	states.ForEach(func(_, s gjson.Result) bool {
		info.TokenCapacity += int(firstOf(s, "memory_usage.token_capacity", "token_capacity").Int())
		return true
	})
	return info
}

// appendIDs appends a JSON array of token ids to dst, in one linear pass;
// false when it is not an array of non-negative integers. A missing or null
// value is an empty list.
func appendIDs(dst []int, arr gjson.Result) ([]int, bool) {
	if !arr.Exists() || arr.Type == gjson.Null {
		return dst, true
	}
	if !arr.IsArray() {
		return dst, false
	}
	// plain digits, what servers write, in one scan of their bytes: a float
	// parse per id was a tenth of the client's work per answer
	if ids, ok := jsonl.AppendInts(dst, arr.Raw); ok {
		return ids, true
	}
	ok := true
	arr.ForEach(func(_, v gjson.Result) bool {
		if v.Type != gjson.Number || v.Num < 0 || v.Num != float64(int64(v.Num)) || v.Num > 1<<53 {
			ok = false
			return false
		}
		dst = append(dst, int(v.Num))
		return true
	})
	return dst, ok
}
