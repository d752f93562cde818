package tokenizer

import (
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestByteKinds checks what the ASCII fast paths assume of byteKinds: each
// kind stands for exactly the classes the patterns ask about.
func TestByteKinds(t *testing.T) {
	for _, m := range []o200kMatcher{{}, {leadingHan: true}} {
		for b := range utf8.RuneSelf {
			c, k := asciiClasses[b], byteKinds[b]
			if got, want := m.upper().has(c), k == kindUpper; got != want {
				t.Errorf("%#x (kind %d): in the upper class %v", b, k, got)
			}
			if got, want := m.lower().has(c), k == kindLower; got != want {
				t.Errorf("%#x (kind %d): in the lower class %v", b, k, got)
			}
			if got, want := letters.has(c), isASCIILetterKind(k); got != want {
				t.Errorf("%#x (kind %d): a letter %v", b, k, got)
			}
			if got, want := isNumber(c), k == kindDigit; got != want {
				t.Errorf("%#x (kind %d): a number %v", b, k, got)
			}
			if got, want := notSpaceLetterNumber.has(c), k == kindPunct; got != want {
				t.Errorf("%#x (kind %d): [^\\s\\p{L}\\p{N}] %v", b, k, got)
			}
			if got, want := isSpaceClass(c) && !isCRLF(rune(b)), k == kindSpace; got != want {
				t.Errorf("%#x (kind %d): \\s but not a line end %v", b, k, got)
			}
			if got, want := punctAndSymbols.has(c), isASCIIPunct(byte(b)); got != want {
				t.Errorf("%#x (kind %d): [\\p{P}\\p{S}] %v", b, k, got)
			}
		}
	}
	for b := utf8.RuneSelf; b < 256; b++ {
		if byteKinds[b] != kindNonASCII {
			t.Errorf("byte %#x has kind %d", b, byteKinds[b])
		}
	}
}

// boundaryAlphabet holds ASCII bytes of every kind and non-ASCII runes of
// every class the patterns tell apart, those that can continue an ASCII
// run (a lowercase letter, a mark, punctuation, a digit, whitespace) and
// those that cannot, and a byte of invalid UTF-8.
var boundaryAlphabet = []string{
	"a", "s", "Z", "0", " ", "\t", "\v", "\r", "\n", "'", "!", "/", "$", "\x1c", "\x7f",
	"é", "É", "ǅ", "ʰ", "ª", "中", "\u0301", "١", "½", "¡", "€", "\u00a0", "\u3000", "\u0085", "\u2028", "ſ", "\xff",
}

// TestMatchersAgreeAtASCIIBoundaries puts ASCII beside non-ASCII in every
// way three symbols of boundaryAlphabet can, and in random longer strings,
// and checks every matcher against the backtracking oracle there: the
// places where an ASCII fast path must hand over to the rune path.
func TestMatchersAgreeAtASCIIBoundaries(t *testing.T) {
	oracles := backtrackOracles(t)
	n := len(boundaryAlphabet)
	for a := range n {
		for b := range n {
			for c := range n {
				checkAgainstOracles(t, oracles, boundaryAlphabet[a]+boundaryAlphabet[b]+boundaryAlphabet[c])
			}
		}
	}
	r := rand.New(rand.NewSource(1))
	for range 3000 {
		var s strings.Builder
		for k := 4 + r.Intn(9); k > 0; k-- {
			s.WriteString(boundaryAlphabet[r.Intn(n)])
		}
		checkAgainstOracles(t, oracles, s.String())
	}
}
