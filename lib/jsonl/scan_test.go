package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestScanObject(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		wantErr string // substring of the error; "" for valid
		offset  int    // SyntaxError.Offset when wantErr is set (0: not checked)
	}{
		{name: "empty object", line: `{}`},
		{name: "spaces around", line: " \t{ } \r"},
		{name: "members", line: `{"a":1,"b":[1,2,3],"c":{"d":null},"e":"x","f":true,"g":false,"h":-1.5e+3}`},
		{name: "int array with spaces", line: `{"ids":[ 1 , 2 ,3 ]}`},
		{name: "empty array", line: `{"ids":[ ]}`},
		{name: "array of zero", line: `{"ids":[0,0,10,0]}`},
		{name: "mixed array", line: `{"a":[1,"x",[2],{"b":0}]}`},
		{name: "huge int in array", line: `{"a":[1,123456789012345678901234567890]}`},
		{name: "escapes", line: `{"a":"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"}`},
		{name: "utf8", line: `{"a":"héllo wörld, 日本語 text long enough for chunks"}`},
		{name: "blank", line: "   ", wantErr: "empty line"},
		{name: "array record", line: `[1,2]`, wantErr: "must be a JSON object, not an array", offset: 1},
		{name: "string record", line: ` "x"`, wantErr: "not a string"},
		{name: "number record", line: `12`, wantErr: "not a number"},
		{name: "null record", line: `null`, wantErr: "not null"},
		{name: "bool record", line: `true`, wantErr: "not a boolean"},
		{name: "invalid non-object", line: `[1,`, wantErr: "unexpected end of line"},
		{name: "trailing comma", line: `{"a":1,}`, wantErr: "expected a string key", offset: 8},
		{name: "missing colon", line: `{"a" 1}`, wantErr: "expected ':'", offset: 6},
		{name: "two values", line: `{} {}`, wantErr: "expected end of line", offset: 4},
		{name: "leading zero", line: `{"a":01}`, wantErr: "leading zero", offset: 7},
		{name: "leading zero in int array", line: `{"a":[1,2,03]}`, wantErr: "leading zero", offset: 12},
		{name: "empty element", line: `{"a":[1,,2]}`, wantErr: "expected a value", offset: 9},
		{name: "empty element in a long run", line: `{"a":[11111,22222,,3]}`, wantErr: "expected a value", offset: 19},
		{name: "trailing comma in array", line: `{"a":[1,2,]}`, wantErr: "expected a value", offset: 11},
		{name: "leading comma in array", line: `{"a":[,1]}`, wantErr: "expected a value", offset: 7},
		{name: "unterminated array", line: `{"a":[1,2,3,4,5,6,7,8,9,10`, wantErr: "unexpected end of line"},
		{name: "control char", line: "{\"a\":\"x\ty\"}", wantErr: "control character", offset: 8},
		{name: "control char after long run", line: "{\"a\":\"abcdefghijklmnop\x01\"}", wantErr: "control character", offset: 23},
		{name: "bad escape", line: `{"a":"\x"}`, wantErr: "invalid escape", offset: 8},
		{name: "short unicode escape", line: `{"a":"\u12"}`, wantErr: "4 hex digits"},
		{name: "invalid utf8", line: "{\"a\":\"abcdefghij\xff\"}", wantErr: "invalid UTF-8", offset: 17},
		{name: "invalid utf8 in key", line: "{\"\xc3\":1}", wantErr: "invalid UTF-8", offset: 3},
		{name: "unterminated string", line: `{"a":"abcdefghijklmnopqrstuvwxyz`, wantErr: "unterminated string"},
		{name: "bad literal", line: `{"a":nul}`, wantErr: "expected null"},
		{name: "exponent without digits", line: `{"a":1e}`, wantErr: "exponent"},
		{name: "dot without digits", line: `{"a":1.}`, wantErr: "after '.'"},
		{name: "minus alone", line: `{"a":-}`, wantErr: "expected a digit"},
		{name: "too deep", line: `{"a":` + strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2) + `}`, wantErr: "nesting deeper"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ScanObject([]byte(tc.line), nil)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ScanObject(%q) = %v, want nil", tc.line, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ScanObject(%q) = %v, want an error containing %q", tc.line, err, tc.wantErr)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *SyntaxError", err)
			}
			if tc.offset != 0 && se.Offset != tc.offset {
				t.Errorf("offset = %d, want %d (%v)", se.Offset, tc.offset, err)
			}
		})
	}
}

func TestScanObjectMembers(t *testing.T) {
	line := ` {"id" : "a\"b", "ids":[1, 2],"o":{"x":[]} ,"n":null}`
	var got []string
	if err := ScanObject([]byte(line), func(m Member) {
		got = append(got, string(m.Key)+"="+string(m.Value))
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{`id="a\"b"`, `ids=[1, 2]`, `o={"x":[]}`, `n=null`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("members = %q, want %q", got, want)
	}
}

func TestIntArrayLen(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		ok   bool
		name string
	}{
		{name: "empty", in: `[]`, n: 0, ok: true},
		{name: "empty with space", in: `[ ]`, n: 0, ok: true},
		{name: "one", in: `[7]`, n: 1, ok: true},
		{name: "zero", in: `[0]`, n: 1, ok: true},
		{name: "zeros in a run", in: `[1,0,22,0,333,0,4444,0,0,0,55555]`, n: 11, ok: true},
		{name: "spaces", in: `[ 1 ,2,  3 ]`, n: 3, ok: true},
		{name: "long run", in: "[" + strings.Repeat("123456,", 999) + "1]", n: 1000, ok: true},
		{name: "max token id", in: `[2147483647]`, n: 1, ok: true},
		{name: "above the max token id", in: `[2147483648]`, ok: false},
		{name: "max uint64", in: `[18446744073709551615]`, ok: false},
		{name: "10 digits across two words", in: `[1,2,3,4,5,6,7,1234567890123,5]`, ok: false},
		{name: "above uint64", in: `[18446744073709551616]`, ok: false},
		{name: "21 digits", in: `[100000000000000000000]`, ok: false},
		{name: "above uint64 after a run", in: `[1,2,3,4,5,6,7,8,18446744073709551616]`, ok: false},
		{name: "leading zero", in: `[01]`, ok: false},
		{name: "leading zero after a run", in: `[1111,2222,3333,044]`, ok: false},
		{name: "leading zero right after a chunk", in: `[1000000,00,10000]`, ok: false},
		{name: "leading zero right after the second chunk", in: `[1000000,1000000,00,10000000]`, ok: false},
		{name: "empty element right after a chunk", in: `[1000000,,100000000]`, ok: false},
		{name: "zeros right after chunks", in: `[1000000,0,100000,0,1000000,0]`, n: 6, ok: true},
		{name: "negative", in: `[-1]`, ok: false},
		{name: "float", in: `[1.5]`, ok: false},
		{name: "exponent", in: `[1e3]`, ok: false},
		{name: "string", in: `["1"]`, ok: false},
		{name: "null element", in: `[null]`, ok: false},
		{name: "trailing comma", in: `[1,2,]`, ok: false},
		{name: "double comma in a run", in: `[111111,,2]`, ok: false},
		{name: "unterminated", in: `[1,2`, ok: false},
		{name: "trailing bytes", in: `[1] `, ok: false},
		{name: "not an array", in: `{}`, ok: false},
		{name: "empty input", in: ``, ok: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := IntArrayLen([]byte(tc.in))
			if n != tc.n || ok != tc.ok {
				t.Fatalf("IntArrayLen(%q) = %d, %v; want %d, %v", tc.in, n, ok, tc.n, tc.ok)
			}
		})
	}
}

func TestValid(t *testing.T) {
	for _, s := range []string{`1`, `"x"`, `[1,[2]]`, ` {"a":{}} `, `null`} {
		if !Valid([]byte(s)) {
			t.Errorf("Valid(%q) = false", s)
		}
	}
	for _, s := range []string{``, `1 2`, `[1,]`, `{"a"}`, `nul`} {
		if Valid([]byte(s)) {
			t.Errorf("Valid(%q) = true", s)
		}
	}
}

// isJSONObject is the reference for ScanObject: valid JSON whose value is an
// object. ScanObject is stricter than encoding/json in one way, on purpose:
// RFC 8259 text is UTF-8, and a record with invalid UTF-8 in a string would
// be silently changed by every decoder downstream, so it is refused.
func isJSONObject(b []byte) bool {
	if !json.Valid(b) || !utf8.Valid(b) {
		return false
	}
	// UseNumber: a number beyond float64 (1e700) is still valid JSON.
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return false
	}
	_, ok := v.(map[string]any)
	return ok
}

func FuzzScanObject(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1}`, `{"ids":[1,2,3,0,10]}`, `{"a":[1,,2]}`, `{"a":"\u00e9\n"}`, "{\"a\":\"\xff\"}",
		`[1]`, `{"a":01}`, `{"a":[1.5,-0,1e9]}`, `{"a":{"b":[{"c":null}]}} `, `{"a":[18446744073709551616]}`,
		`{"ids":[123456,234567,345678,456789,0,1]}`, `{"t":"abcdefghijklmnopq\"rs\\tuvwxyz"}`, `{"":1e700}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := ScanObject(b, func(Member) {})
		want := isJSONObject(b)
		if (err == nil) != want {
			t.Fatalf("ScanObject(%q) = %v, but encoding/json says valid object = %v", b, err, want)
		}
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 1 || se.Offset > len(b)+1 {
				t.Fatalf("ScanObject(%q): error %v has no offset within the line", b, err)
			}
		}
		if jsonValid := json.Valid(b) && utf8.Valid(b); Valid(b) != jsonValid {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, Valid(b), jsonValid)
		}
	})
}

func FuzzIntArrayLen(f *testing.F) {
	for _, s := range []string{
		`[]`, `[ ]`, `[0]`, `[1,2,3]`, `[01]`, `[1,,2]`, `[null]`, `[18446744073709551615]`, `[18446744073709551616]`,
		`[123456,234567,345678,456789,0,1]`, `[ 1 , 2 ]`, `[1.0]`, `[-1]`, `[1e2]`,
		`[2147483647]`, `[2147483648]`, `[1,22,333,4444,55555,2147483648,7]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := IntArrayLen(b)
		ids, jerr := tokenIDs(b)
		if jerr != nil && ok {
			t.Fatalf("IntArrayLen(%q) = %d, true; encoding/json refuses it: %v", b, n, jerr)
		}
		if jerr == nil && ok && n != len(ids) {
			t.Fatalf("IntArrayLen(%q) = %d; encoding/json counts %d", b, n, len(ids))
		}
		if ok {
			// an int array is also valid inside an object, through the general path
			if err := ScanObject(append(append([]byte(`{"a":`), b...), '}'), nil); err != nil {
				t.Fatalf("IntArrayLen accepts %q but ScanObject refuses it in an object: %v", b, err)
			}
		}
	})
}

// tokenIDs decodes an array of token ids with encoding/json, refusing ids
// past MaxTokenID as IntArrayLen must.
func tokenIDs(b []byte) ([]uint64, error) {
	var ids []uint64
	if err := json.Unmarshal(b, &ids); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if id > MaxTokenID {
			return nil, fmt.Errorf("token id %d past %d", id, MaxTokenID)
		}
	}
	return ids, nil
}

// TestIntArrayLenEveryOffset puts each element the fast path must hand to
// the byte-at-a-time one (a leading zero, an empty element, the id 0, a run
// of digits, white space) at every offset of the 16-byte chunks and the 64-byte blocks, and compares with
// encoding/json.
func TestIntArrayLenEveryOffset(t *testing.T) {
	for _, odd := range []string{"00", "", "0", "012", "123456789012", "18446744073709551616",
		"999999999", "2147483647", "2147483648", "9999999999", "1234567,1234567", " 5", "5 ", "  5 , 6"} {
		for pad := 0; pad < 150; pad++ {
			in := "[" + strings.Repeat("7", pad%7+1) + "," + strings.Repeat("12,", pad) + odd + ",345,6789,1,23456,7,89]"
			ids, jerr := tokenIDs([]byte(in))
			n, ok := IntArrayLen([]byte(in))
			if ok != (jerr == nil) || ok && n != len(ids) {
				t.Errorf("IntArrayLen(%q) = %d, %v; encoding/json: %d ids, error %v", in, n, ok, len(ids), jerr)
			}
			// AppendInts reads what IntArrayLen counts, after what dst holds.
			got, ok := AppendInts([]int{42}, []byte(in))
			want := []int{42}
			for _, id := range ids {
				want = append(want, int(id))
			}
			if ok != (jerr == nil) || !slices.Equal(got, want[:len(got)]) || ok && len(got) != len(want) || !ok && len(got) != 1 {
				t.Errorf("AppendInts([42], %q) = %v, %v; encoding/json: %v, error %v", in, got, ok, ids, jerr)
			}
		}
	}
}

// TestAppendInts: the one scan reads a string as it reads bytes, what
// encoding/json reads, and refuses the rest with dst as it was, leading
// zeros among them: JSON forbids them and gjson, behind callers' general
// paths, reads them anyway.
func TestAppendInts(t *testing.T) {
	for _, in := range []string{
		`[]`, `[ ]`, `[0]`, `[1,2,3]`, `[ 12 , 7 ,0 ]`, "[1,\n2]", `[2147483647]`, `[10,100]`,
		`[01]`, `[00]`, `[1,007]`, `[1.0]`, `[1e3]`, `[-1]`, `[-0]`, `[1,]`, `[1 2]`, `[2147483648]`,
		`[1000000000000000]`, `[1,"2"]`, `[[1]]`, `[1]x`, `[1] `, ` [1]`, `[`, ``, `{}`,
	} {
		ids, jerr := tokenIDs([]byte(in))
		if strings.TrimSpace(in) != in {
			jerr = fmt.Errorf("white space around the array") // a raw value has none
		}
		want := []int{42}
		for _, id := range ids {
			want = append(want, int(id))
		}
		fromString, okString := AppendInts([]int{42}, in)
		fromBytes, okBytes := AppendInts([]int{42}, []byte(in))
		if okString != okBytes || !slices.Equal(fromString, fromBytes) {
			t.Errorf("%q: a string reads %v %v, bytes %v %v", in, fromString, okString, fromBytes, okBytes)
		}
		if okString != (jerr == nil) || okString && !slices.Equal(fromString, want) || !okString && !slices.Equal(fromString, []int{42}) {
			t.Errorf("AppendInts([42], %q) = %v, %v; encoding/json: %v, error %v", in, fromString, okString, ids, jerr)
		}
	}
}

// TestStringStopEveryOffset: a string's stops (its closing quote, an
// escape, a control character) and the non-ASCII bytes before them are
// found at every offset within the 8-byte word that holds them, as
// encoding/json finds them.
func TestStringStopEveryOffset(t *testing.T) {
	for pad := range 17 {
		for _, tail := range []string{`"`, `\n"`, `\u00e9x"`, "\x01\"", "é\"", "\xff\"", "\xe2\x80\"", "…\\\"", `\q"`} {
			line := []byte(`{"k":"` + strings.Repeat("a", pad) + tail + `}`)
			err := ScanObject(line, func(Member) {})
			if want := isJSONObject(line); (err == nil) != want {
				t.Errorf("ScanObject(%q) = %v, but encoding/json says valid object = %v", line, err, want)
			}
		}
	}
}

func TestWithinDepth(t *testing.T) {
	for _, tc := range []struct {
		json  string
		limit int
		want  bool
	}{
		{`1`, 0, true},
		{`[]`, 0, false},
		{`[]`, 1, true},
		{`{"a":[{"b":[]}]}`, 4, true},
		{`{"a":[{"b":[]}]}`, 3, false},
		{`{"a":"[[[[[["}`, 1, true},                    // brackets inside a string do not count
		{`{"a":"\"[[[[["}`, 1, true},                   // nor after an escaped quote
		{`{"a":"\\"}`, 1, true},                        // an escaped backslash ends before the quote
		{`[[[[`, 3, false},                             // unbalanced: the depth reached counts
		{`]]]][`, 1, true},                             // closing first never goes below the limit
		{strings.Repeat("[", 12<<20), MaxDepth, false}, // the reply that crashed generate
	} {
		if got := WithinDepth([]byte(tc.json), tc.limit); got != tc.want {
			t.Errorf("WithinDepth(%.40q, %d) = %v, want %v", tc.json, tc.limit, got, tc.want)
		}
	}
}

func FuzzWithinDepth(f *testing.F) {
	for _, s := range []string{`[[1]]`, `{"a":"[\"["}`, `[` + strings.Repeat(`{"a":[`, 20)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// The scanner bounds the depth of values, so an empty array may
		// open one level more: what it accepts nests within MaxDepth+1.
		if Valid(b) && !WithinDepth(b, MaxDepth+1) {
			t.Fatalf("Valid(%q) but not WithinDepth", b)
		}
		if !WithinDepth(b, 3) && Valid(b) {
			deep := bytes.Repeat([]byte("["), MaxDepth-2)
			wrapped := append(append(deep, b...), bytes.Repeat([]byte("]"), MaxDepth-2)...)
			if Valid(wrapped) {
				t.Fatalf("%q nests deeper than 3, yet wrapped %d deep it stays within MaxDepth", b, MaxDepth-2)
			}
		}
	})
}
