package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

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
// they are and the members appended before its closing brace. With
// replace, a member whose key the record already has takes the place of
// its first value instead (a regenerated conversation's source record
// holds prompt_tokens; a record sent again holds the last answer's
// members): the record is crossed once, not once per member, as the
// conversation's members together outweigh the rest of the line.
func addMembers(line []byte, members []member, replace bool) []byte {
	var values []keyedValue
	if replace {
		values = memberValues(line, members)
	}
	end := bytes.LastIndexByte(line, '}')
	head := bytes.TrimRight(line[:end], " \t\r\n")
	size := len(head) + 1
	for _, m := range members {
		size += len(m.key) + len(m.raw) + 4
	}
	out := make([]byte, 0, size)
	from := 0 // the bytes of head before from are written
	for _, v := range values {
		out = append(out, head[from:v.start]...)
		out = append(out, members[v.member].raw...)
		from = v.end
	}
	out = append(out, head[from:]...)
	empty := head[len(head)-1] == '{'
	for i, m := range members {
		if slices.ContainsFunc(values, func(v keyedValue) bool { return v.member == i }) {
			continue
		}
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

// keyedValue is where, in a record, the value of a member to replace lies.
type keyedValue struct {
	start, end int // line[start:end] is the value
	member     int // the index of the member that replaces it
}

// memberValues finds, in order, the first value of each of members' keys
// that line has at its top level, its keys compared as decoded text.
func memberValues(line []byte, members []member) []keyedValue {
	var values []keyedValue
	jsonl.EachMember(line, func(mb jsonl.Member) bool {
		key := mb.Key
		if bytes.IndexByte(key, '\\') >= 0 {
			lit := append(append([]byte{'"'}, key...), '"')
			if text, _, err := jsonl.AppendUnquoted(nil, lit, utf8.AppendRune); err == nil {
				key = text
			}
		}
		for i, m := range members {
			if string(key) != m.key || slices.ContainsFunc(values, func(v keyedValue) bool { return v.member == i }) {
				continue
			}
			// mb.Value is a slice of line: its capacity tells where it starts.
			start := cap(line) - cap(mb.Value)
			values = append(values, keyedValue{start, start + len(mb.Value), i})
			break
		}
		return true
	})
	return values
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
