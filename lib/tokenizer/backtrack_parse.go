package tokenizer

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// The backtracking matcher is the fallback for pre-tokenizer regexes that
// have no hand-written matcher. It understands the syntax tokenizer files
// use (Oniguruma and fancy-regex flavours): alternation, groups with
// (?i), lookahead, greedy, lazy and possessive quantifiers, classes with
// \p{..}, ranges, nesting and && intersection, and $. It is far slower
// than the hand-written matchers, and the tests use it as their oracle.

// reNode is one node of a parsed regex.
type reNode struct {
	kind     reKind
	subs     []*reNode       // alternation branches, sequence items, or the one repeated/looked-ahead node
	class    func(rune) bool // for reClass
	min, max int             // for reRepeat; max -1 is unbounded
	lazy     bool            // for reRepeat
	greedyNo bool            // possessive: no backtracking into the repetition
	negate   bool            // for reLookahead
}

type reKind int

const (
	reAlt reKind = iota
	reSeq
	reClass
	reRepeat
	reLookahead
	reEnd // $: the end of the text
)

type reParser struct {
	src  []rune
	pos  int
	fold bool // inside (?i)
}

func parseRegex(pattern string) (*reNode, error) {
	p := &reParser{src: []rune(pattern)}
	n, err := p.alternation()
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.src) {
		return nil, fmt.Errorf("regex %q: unexpected %q at %d", pattern, p.src[p.pos], p.pos)
	}
	return n, nil
}

func (p *reParser) more() bool { return p.pos < len(p.src) }

// indexFrom returns the index of the next c at or after pos, or -1.
func (p *reParser) indexFrom(c rune) int {
	for i := p.pos; i < len(p.src); i++ {
		if p.src[i] == c {
			return i
		}
	}
	return -1
}

// braced reads {body} at pos and returns body.
func (p *reParser) braced() (string, error) {
	end := p.indexFrom('}')
	if end < 0 {
		return "", p.errorf("unterminated {")
	}
	body := string(p.src[p.pos+1 : end])
	p.pos = end + 1
	return body, nil
}

func (p *reParser) peekIs(s string) bool {
	r := []rune(s)
	if p.pos+len(r) > len(p.src) {
		return false
	}
	for i, c := range r {
		if p.src[p.pos+i] != c {
			return false
		}
	}
	return true
}

func (p *reParser) errorf(format string, args ...any) error {
	return fmt.Errorf("regex %q: %s at %d", string(p.src), fmt.Sprintf(format, args...), p.pos)
}

func (p *reParser) alternation() (*reNode, error) {
	var branches []*reNode
	for {
		seq, err := p.sequence()
		if err != nil {
			return nil, err
		}
		branches = append(branches, seq)
		if !p.more() || p.src[p.pos] != '|' {
			break
		}
		p.pos++
	}
	if len(branches) == 1 {
		return branches[0], nil
	}
	return &reNode{kind: reAlt, subs: branches}, nil
}

func (p *reParser) sequence() (*reNode, error) {
	seq := &reNode{kind: reSeq}
	for p.more() && p.src[p.pos] != '|' && p.src[p.pos] != ')' {
		atom, err := p.atom()
		if err != nil {
			return nil, err
		}
		if atom == nil { // an inline flag group such as (?i)
			continue
		}
		if atom, err = p.quantified(atom); err != nil {
			return nil, err
		}
		seq.subs = append(seq.subs, atom)
	}
	return seq, nil
}

func (p *reParser) quantified(atom *reNode) (*reNode, error) {
	if !p.more() {
		return atom, nil
	}
	min, max := -1, -1
	switch p.src[p.pos] {
	case '?':
		min, max = 0, 1
	case '*':
		min, max = 0, -1
	case '+':
		min, max = 1, -1
	case '{':
		end := p.indexFrom('}')
		if end < 0 {
			return atom, nil
		}
		body := string(p.src[p.pos+1 : end])
		lo, hi, hasComma := strings.Cut(body, ",")
		var err error
		if min, err = strconv.Atoi(lo); err != nil {
			return atom, nil // a literal brace
		}
		max = min
		if hasComma {
			max = -1
			if hi != "" {
				if max, err = strconv.Atoi(hi); err != nil {
					return nil, p.errorf("bad repetition {%s}", body)
				}
			}
		}
		p.pos = end
	default:
		return atom, nil
	}
	p.pos++
	n := &reNode{kind: reRepeat, subs: []*reNode{atom}, min: min, max: max}
	if p.more() && p.src[p.pos] == '?' {
		n.lazy = true
		p.pos++
	} else if p.more() && p.src[p.pos] == '+' {
		n.greedyNo = true
		p.pos++
	}
	return n, nil
}

func (p *reParser) atom() (*reNode, error) {
	c := p.src[p.pos]
	switch c {
	case '(':
		return p.group()
	case '[':
		f, err := p.class()
		if err != nil {
			return nil, err
		}
		return &reNode{kind: reClass, class: f}, nil
	case '.':
		p.pos++
		return &reNode{kind: reClass, class: func(r rune) bool { return r != '\n' }}, nil
	case '$':
		p.pos++
		return &reNode{kind: reEnd}, nil
	case '\\':
		f, err := p.escape(false)
		if err != nil {
			return nil, err
		}
		return &reNode{kind: reClass, class: f}, nil
	case '*', '+', '?', ')':
		return nil, p.errorf("unexpected %q", c)
	}
	p.pos++
	return &reNode{kind: reClass, class: p.literal(c)}, nil
}

// literal matches r, or any rune of its case-folding orbit under (?i).
func (p *reParser) literal(r rune) func(rune) bool {
	if !p.fold {
		return func(x rune) bool { return x == r }
	}
	return func(x rune) bool { return equalFold(x, r) }
}

func equalFold(a, b rune) bool {
	if a == b {
		return true
	}
	for f := unicode.SimpleFold(b); f != b; f = unicode.SimpleFold(f) {
		if f == a {
			return true
		}
	}
	return false
}

func (p *reParser) group() (*reNode, error) {
	p.pos++ // (
	saved := p.fold
	defer func() { p.fold = saved }()
	var look *reNode
	switch {
	case p.peekIs("?:"):
		p.pos += 2
	case p.peekIs("?="), p.peekIs("?!"):
		look = &reNode{kind: reLookahead, negate: p.src[p.pos+1] == '!'}
		p.pos += 2
	case p.peekIs("?<=") || p.peekIs("?<!"):
		return nil, p.errorf("lookbehind is not supported")
	case p.peekIs("?"):
		// Inline flags: (?i) for the rest of the group, (?i:...) for a group.
		p.pos++
		on := true
		for p.more() && p.src[p.pos] != ':' && p.src[p.pos] != ')' {
			switch p.src[p.pos] {
			case 'i':
				p.fold = on
			case '-':
				on = false
			default:
				return nil, p.errorf("unsupported flag %q", p.src[p.pos])
			}
			p.pos++
		}
		if !p.more() {
			return nil, p.errorf("unterminated group")
		}
		if p.src[p.pos] == ')' {
			p.pos++
			saved = p.fold // the flag stays on for the enclosing group
			return nil, nil
		}
		p.pos++
	}
	body, err := p.alternation()
	if err != nil {
		return nil, err
	}
	if !p.more() || p.src[p.pos] != ')' {
		return nil, p.errorf("missing )")
	}
	p.pos++
	if look != nil {
		look.subs = []*reNode{body}
		return look, nil
	}
	return body, nil
}

// class parses [...] with negation, ranges, escapes, nested classes and
// && intersection.
func (p *reParser) class() (func(rune) bool, error) {
	p.pos++ // [
	negated := false
	if p.more() && p.src[p.pos] == '^' {
		negated = true
		p.pos++
	}
	var union []func(rune) bool
	var intersect []func(rune) bool
	first := true
	for {
		if !p.more() {
			return nil, p.errorf("unterminated class")
		}
		c := p.src[p.pos]
		if c == ']' && !first {
			p.pos++
			break
		}
		first = false
		if p.peekIs("&&") {
			p.pos += 2
			intersect = append(intersect, unionOf(union))
			union = nil
			continue
		}
		if c == '[' {
			f, err := p.class()
			if err != nil {
				return nil, err
			}
			union = append(union, f)
			continue
		}
		f, err := p.classItem(c)
		if err != nil {
			return nil, err
		}
		union = append(union, f)
	}
	return classSet(union, intersect, negated), nil
}

// classItem reads one item of a class: an escape, a single character or a
// range lo-hi.
func (p *reParser) classItem(c rune) (func(rune) bool, error) {
	var lo rune
	if c == '\\' {
		f, err := p.escape(true)
		if err != nil {
			return nil, err
		}
		r, single := escapedRune(p.src[p.pos-1])
		if !single || p.src[p.pos-2] != '\\' {
			return f, nil
		}
		lo = r
	} else {
		lo = c
		p.pos++
	}
	if !(p.more() && p.src[p.pos] == '-' && p.pos+1 < len(p.src) && p.src[p.pos+1] != ']') {
		return p.literal(lo), nil
	}
	p.pos++
	hi := p.src[p.pos]
	p.pos++
	if hi == '\\' {
		p.pos--
		if _, err := p.escape(true); err != nil {
			return nil, err
		}
		hi, _ = escapedRune(p.src[p.pos-1])
	}
	return runeRange(lo, hi, p.fold), nil
}

// runeRange matches lo..hi, and with fold any rune whose case folding
// falls in it.
func runeRange(lo, hi rune, fold bool) func(rune) bool {
	return func(r rune) bool {
		if r >= lo && r <= hi {
			return true
		}
		if fold {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				if f >= lo && f <= hi {
					return true
				}
			}
		}
		return false
	}
}

// classSet is the union of a class's items, intersected with the parts
// before each &&, and negated for [^...].
func classSet(union, intersect []func(rune) bool, negated bool) func(rune) bool {
	set := unionOf(union)
	if len(intersect) > 0 {
		parts := append(intersect, set)
		set = func(r rune) bool {
			for _, f := range parts {
				if !f(r) {
					return false
				}
			}
			return true
		}
	}
	if negated {
		inner := set
		set = func(r rune) bool { return !inner(r) }
	}
	return set
}

func unionOf(fs []func(rune) bool) func(rune) bool {
	return func(r rune) bool {
		for _, f := range fs {
			if f(r) {
				return true
			}
		}
		return false
	}
}

// propertyClasses maps the \p{..} names classOf answers for to its bits.
var propertyClasses = map[string]runeClass{
	"L": classLetter, "Lu": classLu, "Ll": classLl, "Lt": classLt, "Lm": classLm, "Lo": classLo,
	"M": classM, "N": classN, "P": classP, "S": classS, "Han": classHan,
}

// escapedRune gives the rune a single-character escape stands for.
func escapedRune(c rune) (rune, bool) {
	switch c {
	case 'r':
		return '\r', true
	case 'n':
		return '\n', true
	case 't':
		return '\t', true
	case 'f':
		return '\f', true
	case 'v':
		return '\v', true
	case 's', 'S', 'd', 'D', 'w', 'W', 'p', 'P', '}':
		return 0, false
	}
	return c, true
}

// escape parses a backslash sequence into a rune predicate.
func (p *reParser) escape(inClass bool) (func(rune) bool, error) {
	p.pos++ // backslash
	if !p.more() {
		return nil, p.errorf("trailing backslash")
	}
	c := p.src[p.pos]
	p.pos++
	switch c {
	case 's':
		return unicode.IsSpace, nil
	case 'S':
		return func(r rune) bool { return !unicode.IsSpace(r) }, nil
	case 'd':
		return unicode.IsDigit, nil
	case 'D':
		return func(r rune) bool { return !unicode.IsDigit(r) }, nil
	case 'w':
		return isWordRune, nil
	case 'W':
		return func(r rune) bool { return !isWordRune(r) }, nil
	case 'p', 'P':
		if !p.more() {
			return nil, p.errorf("bare \\%c", c)
		}
		name := string(p.src[p.pos : p.pos+1])
		if p.src[p.pos] == '{' {
			var err error
			if name, err = p.braced(); err != nil {
				return nil, err
			}
		} else {
			p.pos++
		}
		if bits, ok := propertyClasses[name]; ok {
			// The classes the pre-tokenizers use come from classOf, which
			// carries the Unicode version of the reference implementations.
			if c == 'P' {
				return func(r rune) bool { return classOf(r)&bits == 0 }, nil
			}
			return func(r rune) bool { return classOf(r)&bits != 0 }, nil
		}
		table := unicode.Categories[name]
		if table == nil {
			table = unicode.Scripts[name]
		}
		if table == nil {
			return nil, p.errorf("unknown property %q", name)
		}
		if c == 'P' {
			return func(r rune) bool { return !unicode.Is(table, r) }, nil
		}
		return func(r rune) bool { return unicode.Is(table, r) }, nil
	case 'x':
		return p.hexEscape(2)
	case 'u':
		return p.hexEscape(4)
	}
	if r, ok := escapedRune(c); ok {
		return p.literal(r), nil
	}
	return nil, p.errorf("unsupported escape \\%c", c)
}

func (p *reParser) hexEscape(digits int) (func(rune) bool, error) {
	var hex string
	if p.more() && p.src[p.pos] == '{' {
		var err error
		if hex, err = p.braced(); err != nil {
			return nil, err
		}
	} else {
		if p.pos+digits > len(p.src) {
			return nil, p.errorf("short hex escape")
		}
		hex = string(p.src[p.pos : p.pos+digits])
		p.pos += digits
	}
	v, err := strconv.ParseUint(hex, 16, 32)
	if err != nil {
		return nil, p.errorf("bad hex escape %q", hex)
	}
	return p.literal(rune(v)), nil
}
