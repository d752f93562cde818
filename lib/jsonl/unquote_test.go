package jsonl

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

func appendFFFD(b []byte, _ rune) []byte { return utf8.AppendRune(b, utf8.RuneError) }

func appendMark(b []byte, r rune) []byte { return append(b, '<', byte(r>>8), byte(r), '>') }

func TestAppendUnquoted(t *testing.T) {
	for _, tc := range []struct {
		name, lit, want string
		n               int    // the literal's length; 0: all of lit
		wantErr         string // with the offset, from 1
	}{
		{name: "plain", lit: `"abc"`, want: "abc"},
		{name: "empty", lit: `""`, want: ""},
		{name: "stops at its quote", lit: `"a","b"`, want: "a", n: 3},
		{name: "escapes", lit: `"\"\\\/\b\f\n\r\t"`, want: "\"\\/\b\f\n\r\t"},
		{name: "u escape", lit: `"\u0041\u00e9\u4E2D"`, want: "Aé中"},
		{name: "pair", lit: `"\ud83d\ude00"`, want: "😀"},
		{name: "lone high", lit: `"x\ud83d"`, want: "x<\xd8\x3d>"},
		{name: "lone low", lit: `"\ude00y"`, want: "<\xde\x00>y"},
		{name: "high then not low", lit: `"\ud83d\u0041"`, want: "<\xd8\x3d>A"},
		{name: "two highs", lit: `"\ud83d\ud83d\ude00"`, want: "<\xd8\x3d>😀"},
		{name: "bytes as they are", lit: "\"\xff\"", want: "\xff"},
		{name: "unterminated", lit: `"abc`, wantErr: "invalid JSON at byte 5: unterminated string"},
		{name: "backslash at the end", lit: `"a\`, wantErr: "invalid JSON at byte 4: unterminated string"},
		{name: "control character", lit: "\"a\nb\"", wantErr: "invalid JSON at byte 3: control character in string"},
		{name: "bad hex", lit: `"\u12g4"`, wantErr: `invalid JSON at byte 4: invalid \u escape`},
		{name: "short hex", lit: `"\u12`, wantErr: `invalid JSON at byte 4: invalid \u escape`},
		{name: "bad hex after a high", lit: `"\ud83d\uzzzz"`, wantErr: `invalid JSON at byte 10: invalid \u escape`},
		{name: "unknown escape", lit: `"\x41"`, wantErr: "invalid JSON at byte 4: invalid escape"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := AppendUnquoted([]byte("pre:"), []byte(tc.lit), appendMark)
			if tc.wantErr != "" {
				var se *SyntaxError
				if !errors.As(err, &se) || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %s", err, tc.wantErr)
				}
				return
			}
			want := tc.n
			if want == 0 {
				want = len(tc.lit)
			}
			if err != nil || string(got) != "pre:"+tc.want || n != want {
				t.Fatalf("got %q, %d, %v; want %q, %d", got, n, err, "pre:"+tc.want, want)
			}
		})
	}
}

// FuzzAppendUnquoted: a literal encoding/json takes (valid UTF-8, a lone
// surrogate read as U+FFFD) decodes to the same text; any other input gives
// a SyntaxError or a length within the input, never a panic.
func FuzzAppendUnquoted(f *testing.F) {
	for _, s := range []string{`"abc"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\u00e9\n"`, `"a\`, `"\x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, lit []byte) {
		if len(lit) == 0 || lit[0] != '"' {
			return
		}
		got, n, err := AppendUnquoted(nil, lit, appendFFFD)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 1 || se.Offset > len(lit)+1 {
				t.Fatalf("%q: error %v", lit, err)
			}
			return
		}
		if n < 2 || n > len(lit) || lit[n-1] != '"' {
			t.Fatalf("%q: length %d", lit, n)
		}
		var want string
		if utf8.Valid(lit[:n]) && json.Unmarshal(lit[:n], &want) == nil && string(got) != want {
			t.Fatalf("%q: %q, encoding/json %q", lit[:n], got, want)
		}
	})
}
