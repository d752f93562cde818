package sim

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// appender is a response body that writes its own JSON. encoding/json's
// reflection was a twentieth of the simulator's CPU at zero latency, where
// the simulator shares the machine with the client under test.
type appender interface {
	appendJSON(b []byte) []byte
}

// appendJSON writes o as encoding/json would, field for field, except that
// strings are written as SGLang's own JSON writer does, without escaping
// <, > and & (TestGenerateOutputJSON). Logprobs, rare and of mixed types,
// go through encoding/json.
func (o generateOutput) appendJSON(b []byte) []byte {
	if o.MetaInfo.OutputTokenLogprobs != nil {
		body, err := json.Marshal(o)
		if err != nil {
			panic(err) // every field is a plain value
		}
		return append(b, body...)
	}
	m := &o.MetaInfo
	b = append(b, `{"text":`...)
	b = jsonl.AppendString(b, o.Text)
	b = append(b, `,"output_ids":`...)
	if o.OutputIDs == nil {
		b = append(b, "null"...)
	} else {
		b = jsonl.AppendIntArray(b, o.OutputIDs)
	}
	b = append(b, `,"meta_info":{"id":`...)
	b = jsonl.AppendString(b, m.ID)
	b = append(b, `,"finish_reason":`...)
	b = m.FinishReason.appendJSON(b)
	b = append(b, `,"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(m.PromptTokens), 10)
	b = append(b, `,"weight_version":`...)
	b = jsonl.AppendString(b, m.WeightVersion)
	b = append(b, `,"num_retractions":`...)
	b = strconv.AppendInt(b, m.NumRetractions, 10)
	b = append(b, `,"reasoning_tokens":`...)
	b = strconv.AppendInt(b, int64(m.ReasoningTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(m.CompletionTokens), 10)
	b = append(b, `,"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(m.CachedTokens), 10)
	if m.E2ELatency != 0 {
		b = append(b, `,"e2e_latency":`...)
		b = jsonl.AppendFloat(b, m.E2ELatency)
	}
	return append(b, "}}"...)
}

// appendJSON writes f as encoding/json would; nil is null.
func (f *finishJSON) appendJSON(b []byte) []byte {
	if f == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"type":`...)
	b = jsonl.AppendString(b, f.Type)
	switch v := f.Matched.(type) {
	case nil:
	case int:
		b = append(b, `,"matched":`...)
		b = strconv.AppendInt(b, int64(v), 10)
	case string:
		b = append(b, `,"matched":`...)
		b = jsonl.AppendString(b, v)
	default:
		panic(fmt.Sprintf("sim: finish_reason matched is a %T, not an id or a string", v))
	}
	if f.Length != nil {
		b = append(b, `,"length":`...)
		b = strconv.AppendInt(b, int64(*f.Length), 10)
	}
	if f.Message != "" {
		b = append(b, `,"message":`...)
		b = jsonl.AppendString(b, f.Message)
	}
	if f.StatusCode != 0 {
		b = append(b, `,"status_code":`...)
		b = strconv.AppendInt(b, int64(f.StatusCode), 10)
	}
	return append(b, '}')
}
