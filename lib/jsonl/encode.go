package jsonl

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendIntArray appends ids to dst as a JSON array: token ids are written
// this way by tokenize-prompts (input_ids), generate (output_ids, and the
// input_ids of every SGLang request) and to-train, and all must agree byte
// for byte. Writing the ids is a tenth of tokenize-prompts' time per record
// and a sixth of generate's CPU on long prompts, so the common ids (below
// 10^8) are written four digits at a time from a table, each group by one
// 4-byte store into room made once; others go through strconv.
func AppendIntArray(dst []byte, ids []int) []byte {
	// A fast id takes at most 9 bytes with its comma, and the last group
	// stores 4 bytes however few it keeps.
	dst = slices.Grow(dst, 2+len(ids)*(maxFastDigits+1)+4)
	n := len(dst)
	buf := dst[:cap(dst)]
	buf[n] = '['
	n++
	for i, id := range ids {
		if i > 0 {
			buf[n] = ','
			n++
		}
		if uint(id) >= fastLimit {
			buf = strconv.AppendInt(buf[:n], int64(id), 10)
			n = len(buf)
			buf = slices.Grow(buf, (len(ids)-i)*(maxFastDigits+1)+5)
			buf = buf[:cap(buf)]
			continue
		}
		n = putFastUint(buf, n, uint32(id))
	}
	buf[n] = ']'
	return buf[:n+1]
}

const (
	maxFastDigits = 8
	fastLimit     = 100_000_000 // 10^maxFastDigits
)

// digitGroups[v] is v's four decimal digits, zero-padded, in the order a
// little-endian 4-byte store writes them; digitGroupLen[v] is how many of
// them are v's own (1 for 0).
var digitGroups, digitGroupLen = func() (groups [10000]uint32, lens [10000]uint8) {
	for v := range 10000 {
		d := [4]byte{byte('0' + v/1000), byte('0' + v/100%10), byte('0' + v/10%10), byte('0' + v%10)}
		groups[v] = binary.LittleEndian.Uint32(d[:])
		lens[v] = 1
		for t := 10; t <= v; t *= 10 {
			lens[v]++
		}
	}
	return groups, lens
}()

// putFastUint writes v (below fastLimit) in decimal at buf[n:], which has
// room for 8 digits and 4 bytes more, and returns where it ends.
func putFastUint(buf []byte, n int, v uint32) int {
	lead := v
	if v >= 10000 {
		lead = v / 10000
	}
	// The leading group without its padding zeros: shifting them out of
	// the store leaves its digits first.
	k := int(digitGroupLen[lead])
	binary.LittleEndian.PutUint32(buf[n:], digitGroups[lead]>>(8*(4-k)))
	n += k
	if v >= 10000 {
		binary.LittleEndian.PutUint32(buf[n:], digitGroups[v-lead*10000])
		n += 4
	}
	return n
}

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does, so that every line stays valid JSON. Every answer's
// text and reasoning is written by it, so the bytes that need a look (an
// escape, a byte past ASCII) are found eight bytes at a time, and the runs
// between them copied whole.
func AppendString(b []byte, s string) []byte {
	b = slices.Grow(b, len(s)+2)
	b = append(b, '"')
	start := 0 // s[start:i] is to be copied as it is
	for i := 0; ; {
		i = nextNotPlain(s, i)
		if i == len(s) {
			break
		}
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size > 1 {
				i += size
				continue
			}
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
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
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// nextNotPlain is the index of the first byte of s from i that a JSON
// string does not hold as it is (below 0x20, a quote, a backslash) or that
// is not ASCII; len(s) when there is none.
func nextNotPlain(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		_ = s[i+7]
		// One 8-byte load: the compiler merges these.
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if m := stringStopMask(w) | w&hiBits; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return i
		}
	}
	return i
}

const hexDigits = "0123456789abcdef"

// AppendFloat appends the finite f as encoding/json writes a float64: the
// shortest decimal, with an exponent below 1e-6 and from 1e21 on (e-7, not
// e-07). The caller keeps NaN and the infinities out: they are not JSON.
func AppendFloat(dst []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1]
		dst = dst[:n-1]
	}
	return dst
}
