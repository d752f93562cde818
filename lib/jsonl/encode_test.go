package jsonl

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendIntArray(t *testing.T) {
	for _, tc := range []struct {
		name string
		dst  string
		ids  []int
		want string
	}{
		{"empty", "", nil, "[]"},
		{"one", "", []int{7}, "[7]"},
		{"several", "", []int{151644, 0, -1}, "[151644,0,-1]"},
		{"appends", `{"ids":`, []int{1, 2}, `{"ids":[1,2]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(AppendIntArray([]byte(tc.dst), tc.ids)); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestAppendIntArrayDigits checks every length of id, the edges between
// them and ids past the fast path against strconv.
func TestAppendIntArrayDigits(t *testing.T) {
	ids := []int{0, -1, -100, 1<<31 - 1, 1 << 40, -(1 << 40)}
	for p := 1; p <= 1e12; p *= 10 {
		ids = append(ids, p-1, p, p+1, 3*p+7, -p)
	}
	for i := range 100_000 {
		ids = append(ids, i*7919%1_000_000)
	}
	want := []byte{'['}
	for i, id := range ids {
		if i > 0 {
			want = append(want, ',')
		}
		want = strconv.AppendInt(want, int64(id), 10)
	}
	want = append(want, ']')
	if got := AppendIntArray([]byte("x"), ids); string(got) != "x"+string(want) {
		t.Fatalf("AppendIntArray differs from strconv.AppendInt")
	}
}

// TestAppendStringEscapes: what AppendString writes for each kind of byte,
// at every place in an 8-byte word and across words, against a plain byte
// loop (appendStringByBytes) that does the same job one byte at a time.
func TestAppendStringEscapes(t *testing.T) {
	kinds := []string{"a", "Z", " ", "~", "\x7f", "\"", "\\", "\n", "\r", "\t", "\x00", "\x1f", "\x20",
		"é", "日", "😀", "\xff", "\xe6\x97", "\xc3", "\u2028"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20_000 {
		var s strings.Builder
		for n := rng.IntN(40); n > 0; n-- {
			if rng.IntN(3) == 0 {
				s.WriteString(kinds[rng.IntN(len(kinds))])
			} else {
				s.WriteByte(byte('a' + rng.IntN(26)))
			}
		}
		in := s.String()
		got, want := AppendString([]byte("x"), in), appendStringByBytes([]byte("x"), in)
		if string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", in, got[1:], want[1:])
		}
		if utf8.ValidString(in) {
			var back string
			if err := json.Unmarshal(got[1:], &back); err != nil || back != in {
				t.Fatalf("AppendString(%q) = %s, which reads back as %q (%v)", in, got[1:], back, err)
			}
		}
	}
}

// appendStringByBytes is AppendString without its eight-byte steps.
func appendStringByBytes(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\r':
			b = append(b, `\r`...)
		case c == '\t':
			b = append(b, `\t`...)
		case c < 0x20:
			b = append(b, fmt.Sprintf(`\u%04x`, c)...)
		case c < utf8.RuneSelf:
			b = append(b, c)
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		i++
	}
	return append(b, '"')
}

// TestAppendFloat: finite floats as encoding/json writes them, at the
// edges where it switches to an exponent.
func TestAppendFloat(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 0.7, 1e-6, 9.99e-7, 1e-7, -1e-7, 1e20, 1e21, 1.5e300, math.SmallestNonzeroFloat64, math.MaxFloat64} {
		want, _ := json.Marshal(f)
		if got := AppendFloat([]byte("x"), f); string(got) != "x"+string(want) {
			t.Errorf("%v: got %s, want %s", f, got[1:], want)
		}
	}
}
