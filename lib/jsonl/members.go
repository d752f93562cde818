package jsonl

import (
	"bytes"
	"encoding/binary"
)

// EachMember calls visit with each top-level member of line, a JSON object
// that ScanObject (or record.Scan) has already accepted, in order, until
// visit returns false. It does not check the JSON again: it crosses values
// by their quotes and brackets alone, eight bytes at a time, so that a
// second look at a record (softfail's) costs a fraction of the first, whose
// validation it trusts. On a line that is not valid JSON it stops early or
// hands visit nonsense, but never reads past the line nor loops.
func EachMember(line []byte, visit func(Member) bool) {
	i := skipSpaceAt(line, 0)
	if i >= len(line) || line[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpaceAt(line, i)
		if i >= len(line) || line[i] != '"' {
			return
		}
		k := stringEnd(line, i)
		if k < 0 {
			return
		}
		key := line[i+1 : k-1]
		i = skipSpaceAt(line, k)
		if i >= len(line) || line[i] != ':' {
			return
		}
		i = skipSpaceAt(line, i+1)
		v := valueEnd(line, i)
		if v < 0 {
			return
		}
		if !visit(Member{Key: key, Value: line[i:v]}) {
			return
		}
		i = skipSpaceAt(line, v)
		if i >= len(line) || line[i] != ',' {
			return
		}
		i++
	}
}

func skipSpaceAt(b []byte, i int) int {
	for i < len(b) && class[b[i]] == clSpace {
		i++
	}
	return i
}

// stringEnd is the index just past the string literal that starts at b[i]
// (its opening quote), -1 when it does not end.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return -1
		}
		j += q
		// the quote ends the string unless an odd number of backslashes
		// escapes it
		n := 0
		for k := j - 1; k > i && b[k] == '\\'; k-- {
			n++
		}
		j++
		if n%2 == 0 {
			return j
		}
	}
	return -1
}

// valueEnd is the index just past the value that starts at b[i], -1 when
// it does not end in b.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '[':
		// An array of numbers (token ids) ends at the first ']' when no
		// string, array or object is in it: found by the library's
		// vectorized searches, far faster than any loop here.
		if j := bytes.IndexByte(b[i:], ']'); j > 0 {
			in := b[i+1 : i+j]
			if bytes.IndexByte(in, '[') < 0 && bytes.IndexByte(in, '{') < 0 && bytes.IndexByte(in, '"') < 0 {
				return i + j + 1
			}
		}
		return containerEnd(b, i)
	case '{':
		return containerEnd(b, i)
	}
	for j := i; j < len(b); j++ { // a number or a literal
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
	}
	return len(b)
}

// containerEnd is the index just past the array or object that opens at
// b[i], found by counting brackets outside strings: a run of eight bytes
// with no quote, bracket or brace (most of an array of token ids) is
// crossed at once.
func containerEnd(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			lower := w | loBits*0x20 // '[' -> '{', ']' -> '}'
			if byteMask(w, '"')|byteMask(lower, '{')|byteMask(lower, '}') != 0 {
				break
			}
			i += 8
		}
		if i >= len(b) {
			break
		}
		switch b[i] {
		case '[', '{':
			depth++
		case ']', '}':
			if depth--; depth == 0 {
				return i + 1
			}
		case '"':
			e := stringEnd(b, i)
			if e < 0 {
				return -1
			}
			i = e
			continue
		}
		i++
	}
	return -1
}
