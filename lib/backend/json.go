package backend

import (
	"bytes"
	"encoding/json"

	"github.com/tidwall/gjson"
)

// JSON helpers shared by both backends: building request bodies and
// reading answers whose fields moved between server versions.

// samplingFields are the sampling parameters that SGLang's sampling_params
// and the chat completions body name alike; embedded, they flatten into
// either.
type samplingFields struct {
	Temperature  *float64 `json:"temperature,omitempty"`
	TopP         *float64 `json:"top_p,omitempty"`
	TopK         *int     `json:"top_k,omitempty"`
	MinP         *float64 `json:"min_p,omitempty"`
	Stop         []string `json:"stop,omitempty"`
	StopTokenIDs []int    `json:"stop_token_ids,omitempty"`
}

// zero reports that f sets nothing: it would be written as {}.
func (f *samplingFields) zero() bool {
	return f.Temperature == nil && f.TopP == nil && f.TopK == nil && f.MinP == nil && len(f.Stop) == 0 && len(f.StopTokenIDs) == 0
}

func samplingFieldsOf(p *Params) samplingFields {
	return samplingFields{
		Temperature:  p.Temperature,
		TopP:         p.TopP,
		TopK:         p.TopK,
		MinP:         p.MinP,
		Stop:         p.Stop,
		StopTokenIDs: p.StopTokenIDs,
	}
}

// mergeExtra merges a user-supplied object into a request body: each
// top-level key of extra replaces the body's, except that two objects are
// merged key by key, recursively (so {"sampling_params": {...}} or
// {"reasoning": {"exclude": true}} add to what synthpipe sets), and a null
// removes the key (for servers that refuse a field synthpipe sends).
func mergeExtra(body []byte, extra json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(extra)) == 0 || string(bytes.TrimSpace(extra)) == "null" {
		return body, nil
	}
	var add map[string]json.RawMessage
	if err := json.Unmarshal(extra, &add); err != nil {
		return nil, &Error{Kind: KindRequest, Message: "extra request fields must be a JSON object: " + err.Error()}
	}
	var merged map[string]json.RawMessage
	if err := json.Unmarshal(body, &merged); err != nil {
		return nil, &Error{Kind: KindRequest, Message: err.Error(), cause: err}
	}
	for k, v := range add {
		switch old, had := merged[k]; {
		case string(bytes.TrimSpace(v)) == "null":
			delete(merged, k)
		case had && isJSONObject(old) && isJSONObject(v):
			inner, err := mergeExtra(old, v)
			if err != nil {
				return nil, err
			}
			merged[k] = inner
		default:
			merged[k] = v
		}
	}
	out, err := json.Marshal(merged)
	if err != nil {
		return nil, &Error{Kind: KindRequest, Message: err.Error(), cause: err}
	}
	return out, nil
}

func isJSONObject(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '{'
}

// firstOf returns the first of several paths that holds a value, for
// fields that were renamed between server versions.
func firstOf(doc gjson.Result, paths ...string) gjson.Result {
	for _, p := range paths {
		if v := doc.Get(p); v.Exists() && v.Type != gjson.Null {
			return v
		}
	}
	return gjson.Result{}
}

// intOr returns v as an int, or def when v is absent.
func intOr(v gjson.Result, def int) int {
	if v.Type != gjson.Number {
		return def
	}
	return int(v.Int())
}

// rawJSON copies a value's JSON text; nil when absent.
func rawJSON(v gjson.Result) json.RawMessage {
	if !v.Exists() {
		return nil
	}
	return json.RawMessage(v.Raw)
}
