package jsonl

import (
	"unicode/utf16"
	"unicode/utf8"
)

// AppendUnquoted decodes the JSON string literal that starts lit (lit[0] is
// its opening quote), appends its text to dst and returns dst with the
// literal's length, quotes included. Record ids and the tools of a record
// are decoded by it, so that they read escapes alike.
//
// A surrogate escape that is not half of a pair ("\ud83d" alone) stands for
// nothing UTF-8 can hold: lone appends what the caller makes of it (U+FFFD,
// or WTF-8 where two such ids must stay two). Other bytes are copied as they
// are, UTF-8 unchecked. A literal that is not JSON gives a *SyntaxError whose
// Offset counts from lit[0], from 1.
func AppendUnquoted(dst, lit []byte, lone func(dst []byte, r rune) []byte) ([]byte, int, error) {
	fail := func(i int, msg string) ([]byte, int, error) {
		return dst, i, &SyntaxError{Offset: i + 1, Msg: msg}
	}
	for i := 1; ; {
		if i >= len(lit) {
			return fail(i, "unterminated string")
		}
		switch c := lit[i]; {
		case c == '"':
			return dst, i + 1, nil
		case c < 0x20:
			return fail(i, "control character in string")
		case c != '\\':
			j := i + 1
			for j < len(lit) && lit[j] != '"' && lit[j] != '\\' && lit[j] >= 0x20 {
				j++
			}
			dst = append(dst, lit[i:j]...)
			i = j
			continue
		}
		i++ // the backslash
		if i >= len(lit) {
			return fail(i, "unterminated string")
		}
		e := lit[i]
		i++
		switch e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(lit[i:])
			if !ok {
				return fail(i, `invalid \u escape`)
			}
			i += 4
			if !utf16.IsSurrogate(r) {
				dst = utf8.AppendRune(dst, r)
				continue
			}
			if r < 0xdc00 && i+6 <= len(lit) && lit[i] == '\\' && lit[i+1] == 'u' {
				if lo, ok := hex4(lit[i+2:]); ok && lo >= 0xdc00 && lo <= 0xdfff {
					dst = utf8.AppendRune(dst, utf16.DecodeRune(r, lo))
					i += 6
					continue
				}
			}
			dst = lone(dst, r)
		default:
			return fail(i, "invalid escape")
		}
	}
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			c = (c | 0x20) - 'a' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
