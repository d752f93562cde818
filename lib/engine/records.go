package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/tidwall/sjson"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// member is one JSON member to add to a record.
type member struct {
	key string
	raw []byte
}

// addMembers returns line with members added. The input's bytes are kept as
// they are and the members appended before its closing brace; only a record
// that already has one of the keys goes through sjson to replace it.
func addMembers(line []byte, members []member, replace bool) []byte {
	if replace {
		out := line
		for _, m := range members {
			if next, err := sjson.SetRawBytes(out, m.key, m.raw); err == nil {
				out = next
			}
		}
		return out
	}
	end := bytes.LastIndexByte(line, '}')
	head := bytes.TrimRight(line[:end], " \t\r\n")
	size := len(head) + 1
	for _, m := range members {
		size += len(m.key) + len(m.raw) + 4
	}
	out := make([]byte, 0, size)
	out = append(out, head...)
	empty := head[len(head)-1] == '{'
	for _, m := range members {
		if !empty {
			out = append(out, ',')
		}
		empty = false
		out = append(out, '"')
		out = append(out, m.key...)
		out = append(out, '"', ':')
		out = append(out, m.raw...)
	}
	return append(out, '}')
}

// resultMembers are the response fields of a successful answer.
func (c *collector) resultMembers(j *job, res *backend.Result, attempts int) []member {
	ms := make([]member, 0, 12)
	add := func(k string, raw []byte) { ms = append(ms, member{k, raw}) }
	if res.OutputIDs != nil {
		add(record.FieldOutputIDs, jsonl.AppendIntArray(nil, res.OutputIDs))
	}
	add(record.FieldText, jsonl.AppendString(nil, res.Text))
	if res.Reasoning != "" {
		add(record.FieldReasoning, jsonl.AppendString(nil, res.Reasoning))
	}
	if len(res.ReasoningDetails) > 0 {
		add(record.FieldReasoningDetails, res.ReasoningDetails)
	}
	if len(res.ToolCalls) > 0 && !bytes.Equal(res.ToolCalls, []byte("null")) {
		add(record.FieldToolCalls, res.ToolCalls)
	}
	add(record.FieldFinishReason, jsonl.AppendString(nil, res.FinishReason))
	if len(res.NativeFinishReason) > 0 {
		add(record.FieldNativeFinishReason, res.NativeFinishReason)
	}
	add(record.FieldCompletionTokens, strconv.AppendInt(nil, int64(res.CompletionTokens), 10))
	if !j.hasPromptTokens {
		add(record.FieldPromptTokens, strconv.AppendInt(nil, int64(promptTokensOf(j, res)), 10))
	}
	if len(res.Usage) > 0 {
		add(record.FieldUsage, res.Usage)
	}
	add(record.FieldGen, c.genMember(j, res, attempts))
	return appendThinking(ms, j)
}

// appendThinking adds the thinking setting this run chose for j (see
// thinking.Choice.AppendFields), so that to-train renders the record as
// it was generated. A setting read from the record is there already.
func appendThinking(ms []member, j *job) []member {
	if !j.newThinking {
		return ms
	}
	c := j.req.Thinking
	ms = append(ms, member{record.FieldThinking, strconv.AppendBool(nil, c.Thinking)})
	if c.Effort != "" {
		ms = append(ms, member{record.FieldReasoningEffort, jsonl.AppendString(nil, c.Effort)})
	}
	return ms
}

// promptTokensOf is the record's prompt size, else the server's.
func promptTokensOf(j *job, res *backend.Result) int {
	if j.hasPromptTokens || res == nil || res.PromptTokens == 0 {
		return j.promptTokens
	}
	return res.PromptTokens
}

// genMember is the provenance of an answer.
func (c *collector) genMember(j *job, res *backend.Result, attempts int) []byte {
	b := make([]byte, 0, 160+len(c.ParamsJSON))
	b = append(b, `{"backend":`...)
	b = jsonl.AppendString(b, c.backendName)
	model := res.Model // what answered, else what the server says it serves, else --model
	if model == "" {
		model = j.server.model
	}
	if model == "" {
		model = c.cfg.Model
	}
	if model != "" {
		b = append(b, `,"model":`...)
		b = jsonl.AppendString(b, model)
	}
	b = append(b, `,"endpoint":`...)
	b = jsonl.AppendString(b, j.server.url)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(attempts), 10)
	b = append(b, `,"latency_ms":`...)
	b = strconv.AppendInt(b, res.Latency.Milliseconds(), 10)
	if res.FirstToken > 0 {
		b = append(b, `,"first_token_ms":`...)
		b = strconv.AppendInt(b, res.FirstToken.Milliseconds(), 10)
	}
	b = append(b, `,"params":`...)
	if j.params != nil {
		b = append(b, j.params...)
	} else {
		b = append(b, c.ParamsJSON...)
	}
	if j.sample > 0 {
		// The run's params are the same on every record; the seed is
		// each sample's own.
		b = append(b, `,"sample_seed":`...)
		b = strconv.AppendInt(b, *j.req.Params.Seed, 10)
	}
	return append(b, '}')
}

// errorMember is the error of a record that did not succeed.
func errorMember(e *backend.Error, attempts int, chargedUSD float64) []byte {
	b := make([]byte, 0, 96+len(e.Message))
	b = append(b, `{"kind":`...)
	b = jsonl.AppendString(b, e.Kind)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, `,"message":`...)
	b = jsonl.AppendString(b, e.Message)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(attempts), 10)
	b = append(b, `,"retryable":`...)
	b = strconv.AppendBool(b, e.Retryable)
	if chargedUSD > 0 {
		// Failed, but paid for: a cost budget counted it.
		b = append(b, `,"cost":`...)
		b = strconv.AppendFloat(b, chargedUSD, 'g', -1, 64)
	}
	return append(b, '}')
}

// ParamsJSON renders the sampling parameters for each record's gen.params,
// once: every record of a run shares them.
func ParamsJSON(p backend.Params) json.RawMessage {
	m := map[string]any{"max_tokens": p.MaxTokens}
	p.EachSet(func(name string, v any) { m[name] = v })
	if len(p.Extra) > 0 {
		m["extra"] = p.Extra
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("generate: sampling parameters: %v", err)) // only plain values: cannot fail
	}
	return b
}
