package jsonl

import (
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendIntArray appends ids to dst as a JSON array: token ids are written
// this way by generate (output_ids) and to-train (input_ids), and both must
// agree byte for byte with what tokenize-prompts wrote. Writing the ids is
// a tenth of tokenize-prompts' time per record, so the common ids (below
// 10^8) are written straight into dst, two digits at a time, with room for
// them made once; others go through strconv.
func AppendIntArray(dst []byte, ids []int) []byte {
	dst = slices.Grow(dst, 2+len(ids)*maxFastDigits)
	dst = append(dst, '[')
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		if uint(id) < fastLimit {
			dst = appendSmallUint(dst, uint32(id))
		} else {
			dst = strconv.AppendInt(dst, int64(id), 10)
		}
	}
	return append(dst, ']')
}

const (
	maxFastDigits = 8
	fastLimit     = 100_000_000 // 10^maxFastDigits
)

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// appendSmallUint appends v (below fastLimit) in decimal, writing its
// digits from the last.
func appendSmallUint(dst []byte, v uint32) []byte {
	n := 1
	for t := uint32(10); n < maxFastDigits && v >= t; t *= 10 {
		n++
	}
	if cap(dst)-len(dst) < n {
		dst = slices.Grow(dst, n)
	}
	end := len(dst) + n
	dst = dst[:end]
	i := end
	for v >= 100 {
		q := v / 100
		r := 2 * (v - q*100)
		dst[i-1], dst[i-2] = digitPairs[r+1], digitPairs[r]
		i -= 2
		v = q
	}
	if v >= 10 {
		dst[i-1], dst[i-2] = digitPairs[2*v+1], digitPairs[2*v]
	} else {
		dst[i-1] = byte('0' + v)
	}
	return dst
}

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does, so that every line stays valid JSON.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"
