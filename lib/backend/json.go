package backend

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// JSON helpers shared by both backends: building request bodies and
// reading answers whose fields moved between server versions.

// appendJSONString appends s as encoding/json writes it, without its
// reflection and allocations: ASCII by jsonEscapes, a string with
// non-ASCII (which may be invalid UTF-8, or U+2028) by json.Marshal.
func appendJSONString(dst []byte, s string) []byte {
	mark := len(dst)
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			q, _ := json.Marshal(s)
			return append(dst[:mark], q...)
		}
		if e := jsonEscapes[c]; e != "" {
			dst = append(append(dst, s[start:i]...), e...)
			start = i + 1
		}
	}
	return append(append(dst, s[start:]...), '"')
}

// jsonEscapes are what encoding/json writes for each ASCII byte that it
// escapes (quotes, backslashes, controls, HTML's <>&), asked of it once.
var jsonEscapes = func() (escapes [utf8.RuneSelf]string) {
	for c := range escapes {
		q, _ := json.Marshal(string(rune(c)))
		if e := string(q[1 : len(q)-1]); e != string(rune(c)) {
			escapes[c] = e
		}
	}
	return escapes
}()

// appendJSONFloat appends f as encoding/json writes a float64
// (jsonl.AppendFloat); NaN and the infinities are not JSON, an error.
func appendJSONFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	return jsonl.AppendFloat(dst, f), nil
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

// rawJSON copies a value's JSON text; nil when absent.
func rawJSON(v gjson.Result) json.RawMessage {
	if !v.Exists() {
		return nil
	}
	return json.RawMessage(v.Raw)
}
