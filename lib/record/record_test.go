package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestScanCounts(t *testing.T) {
	tests := []struct {
		name       string
		line       string
		prompt     int64
		completion int64
		wantErr    string
	}{
		{name: "count fields", line: `{"prompt_tokens":6,"completion_tokens":4}`, prompt: 6, completion: 4},
		{name: "count fields win over arrays", line: `{"prompt_tokens":6,"input_ids":[1],"completion_tokens":4,"output_ids":[1,2]}`, prompt: 6, completion: 4},
		{name: "array lengths", line: `{"input_ids":[1,2,3],"output_ids":[4,5]}`, prompt: 3, completion: 2},
		{name: "empty arrays", line: `{"input_ids":[],"output_ids":[]}`},
		{name: "usage", line: `{"usage":{"prompt_tokens":7,"completion_tokens":9,"total_tokens":16}}`, prompt: 7, completion: 9},
		{name: "arrays win over usage", line: `{"input_ids":[1],"usage":{"prompt_tokens":7,"completion_tokens":9}}`, prompt: 1, completion: 9},
		{name: "null falls back", line: `{"prompt_tokens":null,"input_ids":[1,2],"completion_tokens":null,"output_ids":null,"usage":{"completion_tokens":5}}`, prompt: 2, completion: 5},
		{name: "null in usage is absent", line: `{"usage":{"prompt_tokens":null,"completion_tokens":3}}`, completion: 3},
		{name: "usage not an object", line: `{"usage":null}`},
		{name: "nothing", line: `{"id":"a"}`},
		{name: "integral floats", line: `{"prompt_tokens":1000.0,"usage":{"completion_tokens":2e3}}`, prompt: 1000, completion: 2000},
		{name: "duplicate keys: last wins", line: `{"prompt_tokens":1,"prompt_tokens":2,"usage":{"completion_tokens":1,"completion_tokens":3}}`, prompt: 2, completion: 3},
		{name: "escaped key", line: `{"prompt\u005ftokens":5}`, prompt: 5},
		{name: "count as string", line: `{"prompt_tokens":"6"}`, wantErr: `"prompt_tokens" is "6", not a non-negative integer`},
		{name: "negative count", line: `{"completion_tokens":-1}`, wantErr: `"completion_tokens" is -1`},
		{name: "fractional count", line: `{"prompt_tokens":1.5}`, wantErr: `, not a non-negative integer`},
		{name: "count too big", line: `{"prompt_tokens":1e300}`, wantErr: `"prompt_tokens" is 1e300, more than 2^53`},
		{name: "count past float range", line: `{"prompt_tokens":1e400}`, wantErr: `"prompt_tokens" is 1e400, more than 2^53`},
		{name: "count past 2^53", line: `{"prompt_tokens":9007199254740993}`, wantErr: `more than 2^53: no record holds that many tokens`},
		{name: "counts whose sum would overflow", line: `{"prompt_tokens":9223372036854775807,"completion_tokens":9223372036854775807}`, wantErr: `more than 2^53`},
		{name: "count of 2^53", line: `{"prompt_tokens":9007199254740992}`, prompt: 1 << 53},
		{name: "ids with a string", line: `{"input_ids":[1,"2"]}`, wantErr: `input_ids[1] is "2": token ids are integers from 0 to 2147483647`},
		{name: "ids not an array", line: `{"output_ids":{"a":1}}`, wantErr: `output_ids is an object, want an array of token ids`},
		{name: "ids a string", line: `{"input_ids":"abc"}`, wantErr: `input_ids is a string, want an array of token ids`},
		{name: "negative id", line: `{"output_ids":[1,-2]}`, wantErr: `output_ids[1] is -2: token ids`},
		{name: "id past 2^31-1", line: `{"output_ids":[1,2147483648]}`, wantErr: `output_ids[1] is 2147483648: token ids are integers from 0 to 2147483647`},
		{name: "id past 2^64 wraps no more", line: `{"input_ids":[18446744073709551615]}`, wantErr: `input_ids[0] is 18446744073709551615`},
		{name: "largest id", line: `{"input_ids":[2147483647]}`, prompt: 1},
		{name: "bad usage count", line: `{"usage":{"prompt_tokens":"x"}}`, wantErr: `"usage.prompt_tokens" is "x"`},
		{name: "invalid JSON", line: `{"prompt_tokens":1,}`, wantErr: "invalid JSON at byte 20"},
		{name: "not an object", line: `[1]`, wantErr: "must be a JSON object"},
	}
	s := NewScanner("", false, "")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := s.Scan([]byte(tc.line))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Scan(%s) error = %v, want %q", tc.line, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if in.PromptTokens != tc.prompt || in.CompletionTokens != tc.completion {
				t.Errorf("counts = %d+%d, want %d+%d", in.PromptTokens, in.CompletionTokens, tc.prompt, tc.completion)
			}
		})
	}
}

func TestTokensByMode(t *testing.T) {
	line := []byte(`{"prompt_tokens":6,"completion_tokens":4,"usage":{"total":11},"meta":{"n":3.0}}`)
	tests := []struct {
		name    string
		path    string
		mode    CountMode
		want    int64
		wantErr string
	}{
		{name: "total", mode: CountTotal, want: 10},
		{name: "prompt", mode: CountPrompt, want: 6},
		{name: "completion", mode: CountCompletion, want: 4},
		{name: "path wins over mode", path: "usage.total", mode: CountPrompt, want: 11},
		{name: "nested path, integral float", path: "meta.n", want: 3},
		{name: "missing path", path: "usage.nope", wantErr: `no value at --path "usage.nope"`},
		{name: "path to an object", path: "usage", wantErr: `value at --path "usage" is {"total":11}, not a non-negative integer`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := NewScanner("", false, tc.path).Scan(line)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := in.Tokens(tc.mode); got != tc.want {
				t.Errorf("Tokens(%v) = %d, want %d", tc.mode, got, tc.want)
			}
		})
	}
}

func TestParseCountMode(t *testing.T) {
	for in, want := range map[string]CountMode{"": CountTotal, "total": CountTotal, "prompt": CountPrompt, "completion": CountCompletion} {
		if got, err := ParseCountMode(in); err != nil || got != want {
			t.Errorf("ParseCountMode(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseCountMode("all"); err == nil || !strings.Contains(err.Error(), "want total, prompt or completion") {
		t.Errorf("ParseCountMode(all) error = %v", err)
	}
}

func TestScanIDs(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		need    bool
		line    string
		id      string
		hasID   bool
		wantErr string
	}{
		{name: "top level", line: `{"id":"abc"}`, id: "abc", hasID: true},
		{name: "escaped", line: `{"id":"a\"b\\c\u00e9\ud83d\ude00"}`, id: "a\"b\\cé😀", hasID: true},
		{name: "escaped key", line: `{"\u0069d":"k"}`, id: "k", hasID: true},
		{name: "other top-level field", path: "uid", line: `{"id":"no","uid":"yes"}`, id: "yes", hasID: true},
		{name: "nested", path: "meta.uid", line: `{"id":"no","meta":{"uid":"deep"}}`, id: "deep", hasID: true},
		{name: "nested escaped", path: "meta.uid", line: `{"meta":{"uid":"a\tb"}}`, id: "a\tb", hasID: true},
		{name: "missing, not needed", line: `{"x":1}`},
		{name: "number, not needed", line: `{"id":12}`},
		{name: "missing", need: true, line: `{"x":1}`, wantErr: `no "id" field: every record needs a string id (pick another field with --id-path)`},
		{name: "missing nested", path: "meta.uid", need: true, line: `{"meta":{}}`, wantErr: `no "meta.uid" field`},
		{name: "number", need: true, line: `{"id":12}`, wantErr: `"id" is a number, not a string`},
		{name: "null", need: true, line: `{"id":null}`, wantErr: `"id" is null, not a string`},
		{name: "object", need: true, line: `{"id":{}}`, wantErr: `"id" is an object, not a string`},
		{name: "empty", need: true, line: `{"id":""}`, wantErr: `"id" is an empty string`},
		{name: "lone high surrogate", line: `{"id":"x\ud83d"}`, id: "x\xed\xa0\xbd", hasID: true},
		{name: "lone low surrogate", line: `{"id":"x\udc00"}`, id: "x\xed\xb0\x80", hasID: true},
		{name: "replacement character", line: `{"id":"x\ufffd"}`, id: "x\ufffd", hasID: true},
		{name: "surrogate pair", line: `{"id":"x\ud83d\ude00"}`, id: "x\U0001F600", hasID: true},
		{name: "escaped letter", line: `{"id":"\u0041\/"}`, id: "A/", hasID: true},
		{name: "duplicate id key", line: `{"id":"a","x":1,"id":"b"}`, wantErr: `the key "id" appears 2 times at --id-path "id": a record has one id`},
		{name: "duplicate escaped id key", line: `{"id":"a","\u0069d":"a"}`, wantErr: `the key "id" appears 2 times`},
		{name: "duplicate nested id key", path: "meta.uid", line: `{"meta":{"uid":"a","uid":"b"}}`, wantErr: `the key "uid" appears 2 times at --id-path "meta.uid"`},
		{name: "duplicate key on the way", path: "meta.uid", line: `{"meta":{"uid":"a"},"meta":{"uid":"b"}}`, wantErr: `the key "meta" appears 2 times at --id-path "meta"`},
		{name: "duplicates elsewhere are fine", path: "meta.uid", line: `{"id":1,"id":2,"meta":{"x":1,"x":2,"uid":"u"}}`, id: "u", hasID: true},
	}
	for _, tc := range tests {
		// A scanner that borrows ids reads the same ones.
		for _, borrow := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, borrowing %v", tc.name, borrow), func(t *testing.T) {
				s := NewScanner(tc.path, tc.need, "")
				if borrow {
					s = s.BorrowingIDs()
				}
				in, err := s.Scan([]byte(tc.line))
				if tc.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("error = %v, want %q", err, tc.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if in.ID != tc.id || in.HasID != tc.hasID {
					t.Errorf("id = %q (%v), want %q (%v)", in.ID, in.HasID, tc.id, tc.hasID)
				}
			})
		}
	}
}

// TestBorrowedIDSharesTheLine: a borrowed id is a view of the line (no copy),
// and the scanner it was made from still copies.
func TestBorrowedIDSharesTheLine(t *testing.T) {
	line := []byte(`{"id":"abc"}`)
	s := NewScanner("", true, "")
	borrowed, err := s.BorrowingIDs().Scan(line)
	if err != nil {
		t.Fatal(err)
	}
	copied, err := s.Scan(line)
	if err != nil {
		t.Fatal(err)
	}
	line[8] = 'X' // the b
	if borrowed.ID != "aXc" || copied.ID != "abc" {
		t.Errorf("after changing the line: borrowed id %q (want aXc), copied id %q (want abc)", borrowed.ID, copied.ID)
	}
}

func TestScanFinishAndError(t *testing.T) {
	tests := []struct {
		line      string
		finish    string
		truncated bool
		hasError  bool
	}{
		{line: `{"finish_reason":"stop"}`, finish: "stop"},
		{line: `{"finish_reason":"length"}`, finish: "length", truncated: true},
		{line: `{"finish_reason":null}`},
		{line: `{"error":null}`},
		{line: `{"error":{"kind":"http"}}`, hasError: true},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			in, err := NewScanner("", false, "").Scan([]byte(tc.line))
			if err != nil {
				t.Fatal(err)
			}
			if in.FinishReason != tc.finish || in.Truncated() != tc.truncated || in.HasError != tc.hasError {
				t.Errorf("got %+v", in)
			}
		})
	}
}

// refInfo is what the reference decoder finds in a record.
type refInfo struct {
	prompt, completion int64
	id                 string
	hasID              bool
}

// referenceScan computes a record's counts and id the slow, obvious way,
// with encoding/json, by the rules of synthpipe-records(7). ok is false
// where Scan must refuse the line.
func referenceScan(line []byte) (ref refInfo, ok bool) {
	// UseNumber: a number beyond float64 (1e700) is valid JSON, carried
	// through untouched by the tools.
	var v any
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if !utf8.Valid(line) || !json.Valid(line) || d.Decode(&v) != nil {
		return ref, false
	}
	if _, isObj := v.(map[string]any); !isObj {
		return ref, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return ref, false
	}
	var usage map[string]json.RawMessage
	json.Unmarshal(m["usage"], &usage) // not an object: no usage figures
	side := func(countField, idsField string) (int64, bool) {
		if raw, ok := m[countField]; ok && !isJSONNull(raw) {
			return refCount(raw)
		}
		if raw, ok := m[idsField]; ok && !isJSONNull(raw) {
			var ids []any
			d := json.NewDecoder(bytes.NewReader(raw))
			d.UseNumber()
			if d.Decode(&ids) != nil || ids == nil {
				return 0, false
			}
			for _, id := range ids {
				n, isNum := id.(json.Number)
				if !isNum {
					return 0, false
				}
				if id, err := strconv.ParseUint(string(n), 10, 64); err != nil || id > 1<<31-1 {
					return 0, false
				}
			}
			return int64(len(ids)), true
		}
		if raw, ok := usage[countField]; ok && !isJSONNull(raw) {
			return refCount(raw)
		}
		return 0, true
	}
	var pOK, cOK bool
	ref.prompt, pOK = side("prompt_tokens", "input_ids")
	ref.completion, cOK = side("completion_tokens", "output_ids")
	if raw, ok := m["id"]; ok {
		ref.hasID = json.Unmarshal(raw, &ref.id) == nil
	}
	return ref, pOK && cOK && topKeyCount(line, "id") < 2
}

// topKeyCount counts the top-level members of an object named key.
func topKeyCount(line []byte, key string) int {
	d := json.NewDecoder(bytes.NewReader(line))
	d.Token() // {
	n := 0
	for d.More() {
		k, _ := d.Token()
		if k == key {
			n++
		}
		var skip json.RawMessage
		d.Decode(&skip)
	}
	return n
}

// asDecoders is an exact id as encoding/json reads it: lone surrogates,
// kept apart by DecodeID as their WTF-8 bytes, become U+FFFD.
func asDecoders(id string) string {
	b := []byte(id)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == 0xed && b[i+1] >= 0xa0 && b[i+1] <= 0xbf {
			b[i], b[i+1], b[i+2] = 0xef, 0xbf, 0xbd
		}
	}
	return string(b)
}

func isJSONNull(raw json.RawMessage) bool { return string(raw) == "null" }

// refCount reads a count as the records page defines it: a non-negative
// integer, or an integral number up to 2^53.
func refCount(raw json.RawMessage) (int64, bool) {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return 0, false
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, false
	}
	if i, err := n.Int64(); err == nil {
		return i, i >= 0 && i <= 1<<53
	}
	f, err := n.Float64()
	if err != nil || f < 0 || f > 1<<53 || f != math.Trunc(f) {
		return 0, false
	}
	return int64(f), true
}

func FuzzRecordScan(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","prompt_tokens":6,"completion_tokens":4}`,
		`{"id":"b","input_ids":[1,2,3,0],"output_ids":[4,5]}`,
		`{"usage":{"prompt_tokens":7,"completion_tokens":9}}`,
		`{"prompt_tokens":null,"input_ids":[1],"usage":{"completion_tokens":2.0}}`,
		`{"prompt_tokens":"6"}`, `{"input_ids":[1,"2"]}`, `{"input_ids":[null]}`, `{"output_ids":[18446744073709551616]}`, `{"output_ids":[2147483648]}`,
		`{"id":"a\u00e9\ud800","prompt\u005ftokens":1}`, `{"usage":{"prompt_tokens":1,"prompt_tokens":2}}`,
		`{"prompt_tokens":-0}`, `{"completion_tokens":1e2}`, `[1]`, `{"id":1}`, `{"id":"x","id":"y"}`,
	} {
		f.Add([]byte(s))
	}
	s := NewScanner("", false, "")
	f.Fuzz(func(t *testing.T, line []byte) {
		in, err := s.Scan(line)
		ref, ok := referenceScan(line)
		if (err == nil) != ok {
			t.Fatalf("Scan(%q) error = %v, but the reference says ok = %v", line, err, ok)
		}
		if !ok {
			return
		}
		got := refInfo{in.PromptTokens, in.CompletionTokens, asDecoders(in.ID), in.HasID}
		if got != ref {
			t.Fatalf("Scan(%q) = %+v, reference %+v", line, got, ref)
		}
	})
}

func TestCheckVocab(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want string
	}{
		{`[]`, ""},
		{`[0, 1,99]`, ""},
		{`[0,100]`, `output_ids[1] is 100, past the tokenizer's vocabulary (ids 0 to 99)`},
		{`[ 5 , 7 , 1000 ]`, `output_ids[2] is 1000`},
	} {
		err := CheckVocab("output_ids", []byte(tc.raw), 100)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckVocab(%s) = %v, want %q", tc.raw, err, tc.want)
		}
	}
}

func TestIDText(t *testing.T) {
	for raw, want := range map[string]string{
		`"plain"`:         "plain",
		`"x\ud83d"`:       `x\ud83d`,
		`"x\udc00y"`:      `x\udc00y`,
		`"x\ufffd"`:       "x\ufffd",
		`"é\ud83d\ude00"`: "é\U0001F600",
	} {
		if got := IDText(DecodeID([]byte(raw))); got != want {
			t.Errorf("IDText(DecodeID(%s)) = %q, want %q", raw, got, want)
		}
	}
	if got := ShowID(DecodeID([]byte(`"x\ud83d"`))); got != `"x\\ud83d"` {
		t.Errorf("ShowID = %s", got)
	}
}
