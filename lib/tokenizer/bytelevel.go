package tokenizer

import "strings"

// byteLevelByte inverts GPT-2's bytes_to_unicode: printable Latin-1 bytes stand
// for themselves, the others are shifted to U+0100 and up so that every
// vocabulary entry of a byte-level tokenizer.json is printable text.
var byteLevelByte = buildByteLevelAlphabet()

func buildByteLevelAlphabet() map[rune]byte {
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
	return toByte
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
