package kimitools

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// kind is the type of a JSON value as Python's json.loads sees it.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindInt   // a literal without fraction or exponent: Python int
	kindFloat // a literal with either: Python float
	kindString
	kindList
	kindDict
)

// value is one decoded JSON value. Objects hold their members sorted by key
// with duplicates resolved as json.loads does (the last one wins): that is
// deep_sort_dict's result, which is all the encoder ever sees.
type value struct {
	kind kind
	b    bool
	s    string   // a string's text, or a number's literal as written
	list []*value // kindList
	dict []member // kindDict, sorted by key
}

type member struct {
	key string
	val *value
}

// get returns the member named key, or nil (Python's dict.get).
func (v *value) get(key string) *value {
	i, ok := slices.BinarySearchFunc(v.dict, key, func(m member, k string) int { return strings.Compare(m.key, k) })
	if !ok {
		return nil
	}
	return v.dict[i].val
}

// has reports whether the dict v has the key (Python's `key in d`).
func (v *value) has(key string) bool {
	_, ok := slices.BinarySearchFunc(v.dict, key, func(m member, k string) int { return strings.Compare(m.key, k) })
	return ok
}

// truthy is Python's bool(v).
func (v *value) truthy() bool {
	switch v.kind {
	case kindNull:
		return false
	case kindBool:
		return v.b
	case kindInt:
		return strings.Trim(v.s, "-0") != ""
	case kindFloat:
		return pyFloat(v.s) != 0
	case kindString:
		return v.s != ""
	case kindList:
		return len(v.list) > 0
	default:
		return len(v.dict) > 0
	}
}

// isString reports whether v is the Python str s.
func (v *value) isString(s string) bool { return v != nil && v.kind == kindString && v.s == s }

// maxDepth bounds nesting, as json.loads does with its recursion limit.
const maxDepth = 1000

// errSyntax marks tools that are not JSON at all (not a schema the
// reference refuses: the caller reports these as bad records).
var errSyntax = errors.New("invalid JSON")

// parse decodes a JSON document.
func parse(data []byte) (*value, error) {
	p := &parser{data: data}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.data) {
		return nil, p.errorf("unexpected data after the value")
	}
	return v, nil
}

type parser struct {
	data []byte
	pos  int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at byte %d: %s", errSyntax, p.pos, fmt.Sprintf(format, args...))
}

func (p *parser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (*value, error) {
	if depth > maxDepth {
		return nil, p.errorf("nested too deep")
	}
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		p.pos++
		v := &value{kind: kindList, list: []*value{}}
		p.space()
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			p.pos++
			return v, nil
		}
		for {
			p.space()
			e, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			v.list = append(v.list, e)
			p.space()
			if p.pos >= len(p.data) {
				return nil, p.errorf("unexpected end in array")
			}
			if p.data[p.pos] == ']' {
				p.pos++
				return v, nil
			}
			if p.data[p.pos] != ',' {
				return nil, p.errorf("expected ',' or ']'")
			}
			p.pos++
		}
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &value{kind: kindString, s: s}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		for _, lit := range []struct {
			text string
			v    value
		}{{"true", value{kind: kindBool, b: true}}, {"false", value{kind: kindBool}}, {"null", value{kind: kindNull}}} {
			if strings.HasPrefix(string(p.data[p.pos:min(len(p.data), p.pos+5)]), lit.text) {
				p.pos += len(lit.text)
				v := lit.v
				return &v, nil
			}
		}
		return nil, p.errorf("unexpected character %q", c)
	}
}

func (p *parser) object(depth int) (*value, error) {
	p.pos++
	v := &value{kind: kindDict, dict: []member{}}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf("expected a key")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("expected ':'")
		}
		p.pos++
		p.space()
		e, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		v.dict = append(v.dict, member{k, e})
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end in object")
		}
		if p.data[p.pos] == '}' {
			p.pos++
			break
		}
		if p.data[p.pos] != ',' {
			return nil, p.errorf("expected ',' or '}'")
		}
		p.pos++
	}
	// deep_sort_dict: sorted(d.items()) orders keys by code point, which
	// is the byte order of their UTF-8. A repeated key keeps the value
	// written last, as json.loads does.
	slices.SortStableFunc(v.dict, func(a, b member) int { return strings.Compare(a.key, b.key) })
	out := v.dict[:0]
	for i, m := range v.dict {
		if i+1 < len(v.dict) && v.dict[i+1].key == m.key {
			continue
		}
		out = append(out, m)
	}
	v.dict = out
	return v, nil
}

func (p *parser) number() (*value, error) {
	start := p.pos
	isFloat := false
	if p.data[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	intStart := p.pos
	if n := digits(); n == 0 || (n > 1 && p.data[intStart] == '0') {
		return nil, p.errorf("invalid number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		isFloat = true
		p.pos++
		if digits() == 0 {
			return nil, p.errorf("invalid number")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		isFloat = true
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.errorf("invalid number")
		}
	}
	k := kindInt
	if isFloat {
		k = kindFloat
	}
	return &value{kind: k, s: string(p.data[start:p.pos])}, nil
}

// str decodes a string literal. A lone surrogate escape becomes U+FFFD
// (Python would keep it, but no UTF-8 text, and so no prompt, can hold one).
func (p *parser) str() (string, error) {
	b, n, err := jsonl.AppendUnquoted(nil, p.data[p.pos:], appendReplacement)
	if se := (*jsonl.SyntaxError)(nil); errors.As(err, &se) {
		p.pos += se.Offset - 1
		return "", p.errorf("%s", se.Msg)
	}
	p.pos += n
	return string(b), nil
}

func appendReplacement(b []byte, _ rune) []byte { return utf8.AppendRune(b, utf8.RuneError) }

// appendSorted writes v as compact JSON: keys sorted, numbers as written,
// strings escaped minimally. It is deep_sort_dict's result, for the
// template's tools.
func appendSorted(b []byte, v *value) []byte {
	switch v.kind {
	case kindNull:
		return append(b, "null"...)
	case kindBool:
		return strconv.AppendBool(b, v.b)
	case kindInt, kindFloat:
		return append(b, v.s...)
	case kindString:
		return appendJSONString(b, v.s)
	case kindList:
		b = append(b, '[')
		for i, e := range v.list {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendSorted(b, e)
		}
		return append(b, ']')
	default:
		b = append(b, '{')
		for i, m := range v.dict {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, m.key)
			b = append(b, ':')
			b = appendSorted(b, m.val)
		}
		return append(b, '}')
	}
}

// appendJSONString escapes s as Python's json.dumps does with
// ensure_ascii=False: quote, backslash and control characters only.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c < 0x20:
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
