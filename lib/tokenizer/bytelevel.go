package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// byteLevelRune is GPT-2's bytes_to_unicode: printable Latin-1 bytes stand
// for themselves, the others are shifted to U+0100 and up so that every
// vocabulary entry of a byte-level tokenizer.json is printable text.
var byteLevelRune, byteLevelByte = buildByteLevelAlphabet()

func buildByteLevelAlphabet() ([256]rune, map[rune]byte) {
	var toRune [256]rune
	toByte := make(map[rune]byte, 256)
	next := rune(256)
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			toRune[b] = rune(b)
		} else {
			toRune[b] = next
			next++
		}
		toByte[toRune[b]] = byte(b)
	}
	return toRune, toByte
}

// fromByteLevel turns a vocabulary entry back into the bytes it stands for.
// ok is false when some rune is outside the alphabet (added tokens kept in
// the vocabulary as plain text).
func fromByteLevel(tok string) (raw string, ok bool) {
	var b strings.Builder
	b.Grow(len(tok))
	for _, r := range tok {
		c, in := byteLevelByte[r]
		if !in {
			return tok, false
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

// toByteLevel is the inverse of fromByteLevel.
func toByteLevel(raw string) string {
	var b strings.Builder
	b.Grow(2 * len(raw))
	for i := 0; i < len(raw); i++ {
		r := byteLevelRune[raw[i]]
		if r < utf8.RuneSelf {
			b.WriteByte(byte(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}
