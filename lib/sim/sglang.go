package sim

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// maxBodyBytes bounds request bodies; prompts of a 32k context fit easily.
const maxBodyBytes = 64 << 20

// generateInput is a parsed POST /generate body.
type generateInput struct {
	rid           string
	key           uint64
	promptTokens  int
	promptIDs     []int // the ids, or pseudo ids of the text, for the prefix cache
	params        genParams
	stream        bool
	returnLogprob bool
	idsGiven      bool // the prompt came as token ids
}

// readJSON reads a request body and checks it is one JSON object.
func readJSON(r *http.Request) (gjson.Result, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes))
	if err != nil {
		return gjson.Result{}, fmt.Errorf("reading request body: %w", err)
	}
	if !jsonl.Valid(body) {
		return gjson.Result{}, errors.New("request body is not valid JSON (or nests deeper than 10000)")
	}
	doc := gjson.ParseBytes(body)
	if !doc.IsObject() {
		return gjson.Result{}, errors.New("request body must be a JSON object")
	}
	return doc, nil
}

// parseGenerate reads GenerateReqInput. Batched requests (lists of prompts)
// are refused: synthpipe sends one prompt per request, and SGLang's batch
// form has a different response shape (a list).
func (s *Server) parseGenerate(doc gjson.Result) (generateInput, error) {
	var in generateInput
	var top members
	top.pick(doc, generateNames)
	get := top.get
	ids, text, rid := get("input_ids"), get("text"), get("rid")
	if (ids.IsArray() && firstIsArray(ids.Raw)) || text.IsArray() || rid.IsArray() {
		return in, errors.New("batched /generate requests are not supported by the simulator; send one prompt per request")
	}
	switch {
	case ids.IsArray():
		list, err := s.parseInputIDs(ids)
		if err != nil {
			return in, err
		}
		if len(list) == 0 {
			return in, errors.New("input_ids must not be empty")
		}
		in.key, in.promptTokens, in.promptIDs = keyOfIDs(list), len(list), list
		in.idsGiven = true
	case text.Type == gjson.String:
		in.key, in.promptTokens = keyOfText(text.Str), estimateTokens(text.Str)
		in.promptIDs = appendPseudoIDs(nil, text.Str)
	default:
		return in, errors.New("Either text, input_ids or input_embeds should be provided.")
	}
	sp := get("sampling_params")
	if sp.Exists() && sp.Type != gjson.Null && !sp.IsObject() {
		return in, errors.New("sampling_params must be an object")
	}
	var params members
	params.pick(sp, sglangSamplingNames)
	spGet := params.get
	var err error
	if in.params, err = parseSampling(spGet, "max_new_tokens", s.cfg.DefaultMaxNewTokens); err != nil {
		return in, err
	}
	in.params.noStopTrim = spGet("no_stop_trim").Bool()
	in.key = withSeed(in.key, spGet("sampling_seed"))
	if err := s.checkLengths(in.promptTokens, in.params.maxNew); err != nil {
		return in, err
	}
	in.rid = rid.String()
	in.stream = get("stream").Bool()
	in.returnLogprob = get("return_logprob").Bool()
	return in, nil
}

// generateNames are the members of a /generate body that parseGenerate
// reads, and sglangSamplingNames those of its sampling_params.
var (
	generateNames       = []string{"input_ids", "text", "rid", "sampling_params", "stream", "return_logprob"}
	sglangSamplingNames = append([]string{"max_new_tokens", "no_stop_trim", "sampling_seed"}, samplingNames...)
)

// members holds the values of some members of a JSON object, read in one
// pass over it: a lookup by name of each one crossed the whole body again
// (the prompt's ids among it), nine lookups in all, a tenth of the
// simulator's work at zero latency, where it shares the cores of the
// client measured beside it.
type members struct {
	obj   gjson.Result
	names []string
	vals  [12]gjson.Result
}

// pick reads obj's members of the given names (at most len(m.vals)); a
// name written twice is the first, as obj.Get finds it.
func (m *members) pick(obj gjson.Result, names []string) {
	m.obj, m.names = obj, names[:min(len(names), len(m.vals))]
	if !obj.IsObject() {
		return
	}
	left := len(m.names)
	obj.ForEach(func(key, v gjson.Result) bool {
		for i, name := range m.names {
			if key.Str == name && !m.vals[i].Exists() {
				m.vals[i] = v
				left--
				break
			}
		}
		return left > 0
	})
}

// get is obj.Get(name): the value picked, or a lookup for a name not picked.
func (m *members) get(name string) gjson.Result {
	for i, n := range m.names {
		if n == name {
			return m.vals[i]
		}
	}
	if !m.obj.IsObject() {
		return gjson.Result{}
	}
	return m.obj.Get(name)
}

// firstIsArray says whether the array raw begins with an array: a batch
// of prompts. It looks at the byte, where a lookup of element 0 parsed it.
func firstIsArray(raw string) bool {
	return strings.HasPrefix(strings.TrimLeft(raw[1:], " \t\r\n"), "[")
}

// parseInputIDs reads input_ids, an array. Plain digits, what clients
// send, are read in one scan of their bytes (a float parse per id was a
// fifth of the simulator's work at zero latency, on the CPU the client
// measured beside it shares); anything else is read value by value.
func (s *Server) parseInputIDs(ids gjson.Result) ([]int, error) {
	list, ok := jsonl.AppendInts(nil, ids.Raw)
	if !ok {
		list = list[:0]
		var bad error
		ids.ForEach(func(_, v gjson.Result) bool {
			if v.Type != gjson.Number || v.Num != float64(int(v.Num)) || v.Num < 0 {
				bad = fmt.Errorf("input_ids must be non-negative integers, got %s", v.Raw)
				return false
			}
			list = append(list, int(v.Num))
			return true
		})
		if bad != nil {
			return nil, bad
		}
	}
	for _, id := range list {
		if id >= s.cfg.VocabSize {
			// SGLang's own check, with its wording: an id past the
			// vocabulary would index past the embedding table.
			return nil, fmt.Errorf("The input_ids %s contains values greater than the vocab size (%d).", ids.Raw, s.cfg.VocabSize)
		}
	}
	return list, nil
}

// samplingNames are the members parseSampling reads, besides the one that
// bounds the answer's length.
var samplingNames = []string{"temperature", "top_p", "top_k", "min_p", "stop", "stop_token_ids", "ignore_eos", "skip_special_tokens"}

// parseSampling validates the sampling parameters SGLang checks and
// extracts those that shape the answer. get looks a parameter up, so the
// same code reads /generate's sampling_params object and chat's top level.
func parseSampling(get func(string) gjson.Result, maxNewName string, defaultMaxNew int) (genParams, error) {
	p := genParams{maxNew: defaultMaxNew, skipSpecial: true}
	if v := get(maxNewName); v.Exists() && v.Type != gjson.Null {
		if v.Type != gjson.Number || v.Num != float64(int(v.Num)) || v.Num < 0 {
			return p, fmt.Errorf("%s must be at least 0, got %s.", maxNewName, v.Raw)
		}
		p.maxNew = int(v.Num)
	}
	if v := get("temperature"); v.Exists() && v.Type != gjson.Null && v.Float() < 0 {
		return p, fmt.Errorf("temperature must be non-negative, got %s.", v.Raw)
	}
	if v := get("top_p"); v.Exists() && v.Type != gjson.Null && (v.Float() <= 0 || v.Float() > 1) {
		return p, fmt.Errorf("top_p must be in (0, 1], got %s.", v.Raw)
	}
	if v := get("top_k"); v.Exists() && v.Type != gjson.Null && v.Int() != -1 && v.Int() < 1 {
		return p, fmt.Errorf("top_k must be -1 (disable), or at least 1, got %s.", v.Raw)
	}
	if v := get("min_p"); v.Exists() && v.Type != gjson.Null && (v.Float() < 0 || v.Float() > 1) {
		return p, fmt.Errorf("min_p must be in [0, 1], got %s.", v.Raw)
	}
	switch stop := get("stop"); {
	case stop.Type == gjson.String:
		p.stopStrs = []string{stop.Str}
	case stop.IsArray():
		for _, v := range stop.Array() {
			p.stopStrs = append(p.stopStrs, v.String())
		}
	}
	for _, v := range get("stop_token_ids").Array() {
		p.stopIDs = append(p.stopIDs, int(v.Int()))
	}
	p.ignoreEOS = get("ignore_eos").Bool()
	if v := get("skip_special_tokens"); v.Exists() && v.Type != gjson.Null {
		p.skipSpecial = v.Bool()
	}
	return p, nil
}

// checkLengths applies SGLang's context length checks and refuses what can
// never fit the KV cache (the engine could not finish it).
func (s *Server) checkLengths(prompt, maxNew int) error {
	ctx := s.cfg.ContextLength
	if prompt >= ctx {
		return fmt.Errorf("The input (%d tokens) is longer than the model's context length (%d tokens).", prompt, ctx)
	}
	if prompt+maxNew > ctx {
		return fmt.Errorf("Requested token count exceeds the model's maximum context length of %d tokens. "+
			"You requested a total of %d tokens: %d tokens from the input messages and %d tokens for the completion. "+
			"Please reduce the number of tokens in the input messages or the completion to fit within the limit.",
			ctx, prompt+maxNew, prompt, maxNew)
	}
	if prompt+maxNew > s.cfg.MaxTotalTokens {
		return fmt.Errorf("The request needs %d tokens of KV cache (%d prompt + %d max new tokens) but the server holds only %d.",
			prompt+maxNew, prompt, maxNew, s.cfg.MaxTotalTokens)
	}
	return nil
}

// newPlan draws the answer length for prompt key and plans the answer.
func (s *Server) newPlan(key uint64, params genParams) plan {
	natural := s.cfg.Lengths.sample(newRNG(s.cfg.Seed, key))
	return makePlan(&s.cfg, key, natural, params)
}

// generateMeta is SGLang's meta_info.
type generateMeta struct {
	ID                  string      `json:"id"`
	FinishReason        *finishJSON `json:"finish_reason"`
	PromptTokens        int         `json:"prompt_tokens"`
	WeightVersion       string      `json:"weight_version"`
	NumRetractions      int64       `json:"num_retractions"`
	ReasoningTokens     int         `json:"reasoning_tokens"`
	CompletionTokens    int         `json:"completion_tokens"`
	CachedTokens        int         `json:"cached_tokens"`
	E2ELatency          float64     `json:"e2e_latency,omitempty"`
	OutputTokenLogprobs []any       `json:"output_token_logprobs,omitempty"`
}

// generateOutput is one /generate answer or stream chunk.
type generateOutput struct {
	Text      string       `json:"text"`
	OutputIDs []int        `json:"output_ids"`
	MetaInfo  generateMeta `json:"meta_info"`
}

func (s *Server) handleGenerate(w http.ResponseWriter, r *http.Request) {
	doc, err := readJSON(r)
	if err != nil {
		s.reject(w, sglangDialect, http.StatusBadRequest, err.Error())
		return
	}
	in, err := s.parseGenerate(doc)
	if err != nil {
		s.reject(w, sglangDialect, http.StatusBadRequest, err.Error())
		return
	}
	identity := in.key
	if in.rid != "" {
		identity = keyOfText(in.rid)
	}
	fault, err := s.faults.pick(r, identity)
	if err != nil {
		s.reject(w, sglangDialect, http.StatusBadRequest, err.Error())
		return
	}
	if s.serveEarlyFault(w, r, fault, sglangDialect, in.stream) {
		return
	}
	if in.rid == "" {
		in.rid = s.newRID()
	}
	pl := s.newPlan(in.key, in.params)
	if s.kimi != nil && in.idsGiven {
		natural := s.cfg.Lengths.sample(newRNG(s.cfg.Seed, in.key))
		pl = makeKimiPlan(&s.cfg, s.kimi, in.promptIDs, in.key, natural, in.params)
	}
	delay := s.applyLateFault(fault, &pl, false)
	req := newRequest(in.rid, in.promptTokens, pl, in.stream)
	req.promptIDs, req.cacheAnswer = in.promptIDs, in.idsGiven
	if err := s.engine.submit(req); err != nil {
		if errors.Is(err, errDuplicateRID) {
			s.reject(w, sglangDialect, http.StatusBadRequest, fmt.Sprintf("Duplicate request ID detected: rid=%s is already in flight.", in.rid))
			return
		}
		writeJSON(w, http.StatusServiceUnavailable, errorBody(sglangDialect, http.StatusServiceUnavailable, err.Error(), nil))
		return
	}
	if in.stream {
		s.streamGenerate(w, r, req, in, delay, fault)
		return
	}
	if !s.holdFirstToken(r.Context(), req, delay) || !s.waitDone(r.Context(), req) {
		return
	}
	res := req.result
	if res.finish.kind == finishAbort {
		// SGLang turns scheduler aborts carrying 400 into a 400 error and
		// 500/503 into an HTTP error of that status; other aborts are a
		// normal answer with the abort finish reason.
		switch code := res.finish.statusCode; code {
		case http.StatusBadRequest, http.StatusInternalServerError, http.StatusServiceUnavailable:
			writeJSON(w, code, errorBody(sglangDialect, code, res.finish.message, nil))
			return
		}
	}
	writeJSON(w, http.StatusOK, s.generateChunk(req, in, 0, res.outputLen, res.finish, req.plan.text(res.outputLen, res.finish)))
}

// generateChunk builds the answer (or a stream chunk) covering output ids
// [from, to). fin is the finish reason, or finishNone for an intermediate
// chunk, and text the text it carries (cumulative or a delta).
func (s *Server) generateChunk(req *request, in generateInput, from, to int, fin finishReason, text string) generateOutput {
	pl := &req.plan
	out := generateOutput{
		Text:      text,
		OutputIDs: pl.ids(from, to),
		MetaInfo: generateMeta{
			ID:               req.rid,
			FinishReason:     fin.sglangJSON(),
			PromptTokens:     req.promptTokens,
			WeightVersion:    "default",
			NumRetractions:   req.retractions.Load(),
			CompletionTokens: to,
			CachedTokens:     int(req.cached.Load()),
		},
	}
	if fin.kind != finishNone {
		out.MetaInfo.E2ELatency = max(req.result.finishedAt.Sub(req.arrived).Seconds(), 1e-6)
	}
	if in.returnLogprob {
		for i := from; i < to; i++ {
			id := pl.idAt(i)
			out.MetaInfo.OutputTokenLogprobs = append(out.MetaInfo.OutputTokenLogprobs, []any{simulatedLogprob(pl.key, i), id, nil})
		}
	}
	return out
}

// simulatedLogprob is a deterministic log probability in (-4, 0].
func simulatedLogprob(key uint64, i int) float64 {
	return -float64(splitmix64(key^uint64(i)*golden)%4000) / 1000
}

// streamGenerate answers stream=true: SSE chunks, each a full
// generateOutput. By default every chunk holds the cumulative text and
// output_ids; with Config.IncrementalStreaming only the new part. The last
// chunk carries the finish reason, then "data: [DONE]".
func (s *Server) streamGenerate(w http.ResponseWriter, r *http.Request, req *request, in generateInput, delay time.Duration, fault FaultKind) {
	sse := startSSE(w)
	if !s.holdFirstToken(r.Context(), req, delay) {
		return
	}
	incremental := s.cfg.IncrementalStreaming
	sent, sentText := 0, 0
	var none finishReason
	ok := s.follow(r.Context(), req, 0, nil, func(n int) error {
		var chunk generateOutput
		if incremental {
			text := req.plan.render(req.plan.ids(sent, n))
			chunk = s.generateChunk(req, in, sent, n, none, text)
			sentText += len(text)
		} else {
			chunk = s.generateChunk(req, in, 0, n, none, req.plan.text(n, none))
		}
		sent = n
		return sse.data(chunk)
	})
	if !ok {
		return
	}
	res := req.result
	if res.finish.kind == finishAbort && fault == FaultMidStreamError {
		// SGLang reports an error raised during a stream as an error event.
		sse.data(map[string]any{"error": map[string]any{"message": res.finish.message}})
		sse.raw(sseDone)
		return
	}
	var final generateOutput
	if incremental {
		full := req.plan.text(res.outputLen, res.finish)
		delta := ""
		if len(full) > sentText {
			delta = full[sentText:]
		}
		final = s.generateChunk(req, in, sent, res.outputLen, res.finish, delta)
	} else {
		final = s.generateChunk(req, in, 0, res.outputLen, res.finish, req.plan.text(res.outputLen, res.finish))
	}
	sse.data(final)
	sse.raw(sseDone)
}

func (s *Server) handleServerInfo(w http.ResponseWriter, r *http.Request) {
	st := s.engine.snapshotStats()
	cfg := &s.cfg
	writeJSON(w, http.StatusOK, map[string]any{
		// A selection of SGLang's server_args.
		"model_path":                   cfg.ModelName,
		"tokenizer_path":               cfg.ModelName,
		"served_model_name":            cfg.ModelName,
		"host":                         "127.0.0.1",
		"context_length":               cfg.ContextLength,
		"max_running_requests":         cfg.MaxRunningRequests,
		"max_total_tokens":             cfg.MaxTotalTokens,
		"schedule_policy":              "fcfs",
		"page_size":                    1,
		"stream_interval":              1,
		"incremental_streaming_output": cfg.IncrementalStreaming,
		"random_seed":                  cfg.Seed,
		"disable_radix_cache":          cfg.PrefixCacheTokens == 0,
		"tp_size":                      1,
		"dp_size":                      1,
		// scheduler_info.
		"max_total_num_tokens": cfg.MaxTotalTokens,
		"max_req_input_len":    cfg.ContextLength - 1,
		"internal_states": []any{map[string]any{
			"memory_usage": map[string]any{
				"weight":         0,
				"kvcache":        0,
				"token_capacity": cfg.MaxTotalTokens,
				"graph":          0,
			},
			"max_total_num_tokens": cfg.MaxTotalTokens,
			"max_running_requests": cfg.MaxRunningRequests,
			"num_running_reqs":     st.Running,
			"num_waiting_reqs":     st.Queued,
			"token_usage":          float64(st.KVUsed) / float64(cfg.MaxTotalTokens),
			"last_gen_throughput":  0.0,
		}},
		"version": cfg.Version,
	})
}

func (s *Server) handleModelInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"model_path":                s.cfg.ModelName,
		"tokenizer_path":            s.cfg.ModelName,
		"is_generation":             true,
		"preferred_sampling_params": nil,
		"weight_version":            "default",
		"has_image_understanding":   false,
		"has_audio_understanding":   false,
		"model_type":                "llama",
		"architectures":             []string{"LlamaForCausalLM"},
	})
}

// handleHealthGenerate runs a one-token generation through the engine, as
// SGLang does, and answers 200 once it finished or 503 after 20 s or while
// shutting down.
func (s *Server) handleHealthGenerate(w http.ResponseWriter, r *http.Request) {
	pl := s.newPlan(keyOfIDs([]int{0}), genParams{maxNew: 1, skipSpecial: true})
	req := newRequest("HEALTH_CHECK_"+s.newRID(), 1, pl, false)
	req.internal = true
	if err := s.engine.submit(req); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	t := time.NewTimer(20 * time.Second)
	defer t.Stop()
	select {
	case <-req.done:
		w.WriteHeader(http.StatusOK)
	case <-t.C:
		s.engine.abort(req, "health check timed out")
		w.WriteHeader(http.StatusServiceUnavailable)
	case <-r.Context().Done():
		s.engine.abort(req, "client disconnected")
	}
}

// handleAbortRequest aborts {"rid": ...} or, with {"abort_all": true},
// everything; it answers 200 with an empty body even for unknown rids.
func (s *Server) handleAbortRequest(w http.ResponseWriter, r *http.Request) {
	doc, err := readJSON(r)
	if err != nil {
		s.reject(w, sglangDialect, http.StatusBadRequest, err.Error())
		return
	}
	s.engine.abortRID(doc.Get("rid").String(), doc.Get("abort_all").Bool())
	w.WriteHeader(http.StatusOK)
}
