package chattemplate

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkStringDecoding decodes the JSON string literal lit (which holds an
// escape, or bytes that are UTF-8), with decodeJSON and with encoding/json,
// which it must agree with: the same string, or both an error. (A string
// without escapes is a slice of the input, its bytes kept as they are.)
func checkStringDecoding(t *testing.T, lit string) {
	t.Helper()
	var want string
	wantErr := json.Unmarshal([]byte(lit), &want)
	got, err := decodeJSON([]byte(lit))
	switch {
	case (err != nil) != (wantErr != nil):
		t.Fatalf("%q: error %v, encoding/json's %v", lit, err, wantErr)
	case err == nil && got != want:
		t.Fatalf("%q: decoded %q, encoding/json %q", lit, got, want)
	}
}

// TestStringEscapes decodes strings made of every kind of escape, surrogate
// pairs, lone and reversed surrogates, bytes that are not UTF-8, control
// characters and bad escapes, as encoding/json decodes them.
func TestStringEscapes(t *testing.T) {
	pieces := []string{
		`a`, `é`, `東京`, `😀`, ` `, `\n`, `\r`, `\t`, `\b`, `\f`, `\/`, `\\`, `\"`,
		`\u0041`, `\u00e9`, `\u6771`, `\u003c`, `\uFFFD`, `\u0000`, `\ud83d\ude00`, `\uD83D\uDE00`,
		`\ud83d`, `\ude00`, `\ude00\ud83d`, `\ud83d\u0041`, `\ud83d\ud83d`, `\ud83dx`,
		"\xff", "\xe6\x9d", "\xc0\x80", "\xed\xa0\x80",
		// Errors: bad escapes, short or bad \u, a control character.
		`\'`, `\x`, `\u12`, `\u12g4`, `\ud83d\u12`, "\x01", "\\\n", `\`,
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, p := range pieces {
		checkStringDecoding(t, `"x\n`+p+`"`)
	}
	for range 20000 {
		var b strings.Builder
		b.WriteString(`"\n`) // an escape, so that the string is unquoted
		for range rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		b.WriteByte('"')
		checkStringDecoding(t, b.String())
	}
}

// FuzzStringEscapes: decodeJSON reads any string literal as encoding/json
// does, and one without an escape too where its bytes are UTF-8. The seeds
// have runs longer than the 8 bytes that the scans test at once, with
// what ends a run (a quote, a backslash, a control character, a byte from
// 0x80) at each place of a word.
func FuzzStringEscapes(f *testing.F) {
	for _, s := range []string{`a\nb`, `\ud83d\ude00`, `\ud83d`, "\xff\\t", `\u12`} {
		f.Add(s)
	}
	for i := range 9 {
		for _, end := range []string{`"`, `\"`, `\\"`, "\x1f", "\n", "é", "\x7f", `\t`} {
			f.Add(strings.Repeat("abcdefgh", 2)[:8+i] + end + "tail")
		}
	}
	f.Fuzz(func(t *testing.T, body string) {
		checkStringDecoding(t, `"\n`+body+`"`)
		if utf8.ValidString(body) {
			checkStringDecoding(t, `"`+body+`"`)
		}
	})
}

// TestRepeatedStrings decodes objects whose strings with escapes repeat
// (an answer's reasoning under two names), after strings of the same
// length that differ, after a bad one: each must be what encoding/json
// decodes, the repeat taken from the string before it.
func TestRepeatedStrings(t *testing.T) {
	for _, doc := range []string{
		`{"a":"x\ny","b":"x\ny","c":"x\ny"}`,
		`{"a":"x\ny","b":"x\nz","c":"x\ny","d":"x\nz"}`,
		`{"a":"x\ny","b":"plain","c":"x\ny"}`,
		`{"a":["x\ny",{"b":"x\ny"}],"c":"x\\ny","d":"x\ny"}`,
		`{"a":"\u00e9\n","b":"\u00e9\n","c":"\u00E9\n"}`,
		`{"a":"x\ny","b":"x\qy"}`,
	} {
		var want any
		wantErr := json.Unmarshal([]byte(doc), &want)
		got, err := decodeJSON([]byte(doc))
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%s: error %v, encoding/json's %v", doc, err, wantErr)
		}
		if err != nil {
			continue
		}
		gotJSON, _ := toJSON(got, newJSONOptions())
		wantJSON, _ := json.Marshal(want)
		var g, w any
		_ = json.Unmarshal([]byte(gotJSON), &g)
		_ = json.Unmarshal(wantJSON, &w)
		if gs, ws := fmt.Sprint(g), fmt.Sprint(w); gs != ws {
			t.Fatalf("%s: decoded %s, encoding/json %s", doc, gs, ws)
		}
	}
}
