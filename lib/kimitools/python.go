package kimitools

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/synthpipe/synthpipe/lib/chattemplate/pyfmt"
)

// This file writes values as the Python expressions the reference uses
// write them: str() (f-strings, enum members, constraints), repr() (inside
// lists and dicts) and json.dumps(ensure_ascii=False) (defaults).

// pyFloat is float(literal), as json.loads reads a number with a fraction or
// an exponent: correctly rounded, overflowing to ±inf and underflowing to 0.
func pyFloat(lit string) float64 {
	f, _ := strconv.ParseFloat(lit, 64) // the parser checked the syntax; a range error still gives ±Inf or 0
	return f
}

// pyInt is str(int(literal)): Python ints have no size limit, and -0 is 0.
func pyInt(lit string) string {
	if len(lit) < 19 {
		n, _ := strconv.ParseInt(lit, 10, 64)
		return strconv.FormatInt(n, 10)
	}
	var n big.Int
	n.SetString(lit, 10)
	return n.String()
}

// pyStr is str(v).
func pyStr(v *value) string {
	if v.kind == kindString {
		return v.s
	}
	return string(appendRepr(nil, v))
}

// appendRepr appends repr(v).
func appendRepr(b []byte, v *value) []byte {
	switch v.kind {
	case kindNull:
		return append(b, "None"...)
	case kindBool:
		if v.b {
			return append(b, "True"...)
		}
		return append(b, "False"...)
	case kindInt:
		return append(b, pyInt(v.s)...)
	case kindFloat:
		return append(b, pyfmt.FloatRepr(pyFloat(v.s))...)
	case kindString:
		return appendStrRepr(b, v.s)
	default:
		return appendCompound(b, v, appendStrRepr, appendRepr)
	}
}

// appendStrRepr appends repr(s): single quotes unless s holds a single
// quote and no double one; backslash escapes for the quote, backslash, tab,
// newline, carriage return and characters str.isprintable() rejects.
// Printable is judged by Go's Unicode 15.0 tables, as Python 3.12 does;
// Python 3.11 (Unicode 14.0) escapes the characters 15.0 added (CJK
// extension H among them). Only enum members and constraints that are lists
// or objects print a repr.
func appendStrRepr(b []byte, s string) []byte {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	b = append(b, quote)
	for _, r := range s {
		switch {
		case r == rune(quote) || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\t':
			b = append(b, `\t`...)
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r < 0x20 || r == 0x7f:
			b = appendHexEscape(b, 'x', r, 2)
		case r < 0x7f:
			b = append(b, byte(r))
		case unicode.IsPrint(r): // Python's isprintable: not C*, not Z* but the space
			b = utf8.AppendRune(b, r)
		case r <= 0xff:
			b = appendHexEscape(b, 'x', r, 2)
		case r <= 0xffff:
			b = appendHexEscape(b, 'u', r, 4)
		default:
			b = appendHexEscape(b, 'U', r, 8)
		}
	}
	return append(b, quote)
}

func appendHexEscape(b []byte, letter byte, r rune, width int) []byte {
	b = append(b, '\\', letter)
	h := strconv.FormatInt(int64(r), 16)
	for range width - len(h) {
		b = append(b, '0')
	}
	return append(b, h...)
}

// appendPyJSON appends json.dumps(v, ensure_ascii=False) with its default
// separators (", " and ": "); floats as repr, infinities as Infinity.
func appendPyJSON(b []byte, v *value) []byte {
	switch v.kind {
	case kindNull:
		return append(b, "null"...)
	case kindBool:
		return strconv.AppendBool(b, v.b)
	case kindInt:
		return append(b, pyInt(v.s)...)
	case kindFloat:
		f := pyFloat(v.s)
		switch {
		case math.IsInf(f, 1):
			return append(b, "Infinity"...)
		case math.IsInf(f, -1):
			return append(b, "-Infinity"...)
		}
		return append(b, pyfmt.FloatRepr(f)...)
	case kindString:
		return appendJSONString(b, v.s)
	default:
		return appendCompound(b, v, appendJSONString, appendPyJSON)
	}
}

// appendCompound appends a list or dict the way both repr() and
// json.dumps' default separators lay them out, "[a, b]" and "{k: v}",
// with key writing a dict's keys and elem every value.
func appendCompound(b []byte, v *value, key func([]byte, string) []byte, elem func([]byte, *value) []byte) []byte {
	if v.kind == kindList {
		b = append(b, '[')
		for i, e := range v.list {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = elem(b, e)
		}
		return append(b, ']')
	}
	b = append(b, '{')
	for i, m := range v.dict {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = key(b, m.key)
		b = append(b, ": "...)
		b = elem(b, m.val)
	}
	return append(b, '}')
}
