package chattemplate

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokData
	tokBlockBegin
	tokBlockEnd
	tokVarBegin
	tokVarEnd
	tokName
	tokString
	tokInt
	tokFloat
	tokOp
)

type token struct {
	kind tokenKind
	val  string // operator text, name, decoded string literal, data text, number text
	line int
}

// SyntaxError is returned by Parse for malformed templates.
type SyntaxError struct {
	Template string
	Line     int
	Msg      string
}

// Error implements error.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s:%d: syntax error: %s", e.Template, e.Line, e.Msg)
}

// lexer splits a template into tokens following jinja2's lexer with
// trim_blocks=True, lstrip_blocks=True and keep_trailing_newline=False.
type lexer struct {
	name   string
	src    string
	pos    int
	line   int
	tokens []token
}

// normalizeSource does what jinja2 does before lexing: newlines become "\n"
// and a single trailing newline is dropped.
func normalizeSource(src string) string {
	if strings.IndexByte(src, '\r') >= 0 {
		src = strings.ReplaceAll(src, "\r\n", "\n")
		src = strings.ReplaceAll(src, "\r", "\n")
	}
	return strings.TrimSuffix(src, "\n")
}

// isPySpace is Python's str.isspace for one character.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

func pyRStripSpace(s string) string {
	return strings.TrimRightFunc(s, isPySpace)
}

func tokenize(name, src string) ([]token, error) {
	lx := &lexer{name: name, src: normalizeSource(src), line: 1}
	if err := lx.run(); err != nil {
		return nil, err
	}
	return lx.tokens, nil
}

func (lx *lexer) errorf(format string, args ...any) error {
	return &SyntaxError{Template: lx.name, Line: lx.line, Msg: fmt.Sprintf(format, args...)}
}

func (lx *lexer) emit(kind tokenKind, val string) {
	lx.tokens = append(lx.tokens, token{kind: kind, val: val, line: lx.line})
}

// advance moves past n bytes of source, counting lines.
func (lx *lexer) advance(n int) {
	lx.line += strings.Count(lx.src[lx.pos:lx.pos+n], "\n")
	lx.pos += n
}

// findTagStart returns the offset of the next "{{", "{%" or "{#".
func findTagStart(s string) int {
	off := 0
	for {
		i := strings.IndexByte(s[off:], '{')
		if i < 0 || off+i+1 >= len(s) {
			return -1
		}
		c := s[off+i+1]
		if c == '{' || c == '%' || c == '#' {
			return off + i
		}
		off += i + 1
	}
}

// stripForTag applies "-" (strip all whitespace before the tag) and
// lstrip_blocks (strip spaces between line start and a block or comment tag).
func stripForTag(text string, sign byte, isVar, lineStarting bool) string {
	if sign == '-' {
		return pyRStripSpace(text)
	}
	if sign == '+' || isVar {
		return text
	}
	lpos := strings.LastIndexByte(text, '\n') + 1
	if lpos == 0 && !lineStarting {
		return text
	}
	rest := text[lpos:]
	if rest == "" {
		return text
	}
	for _, r := range rest {
		if !isPySpace(r) {
			return text
		}
	}
	return text[:lpos]
}

func (lx *lexer) run() error {
	lineStarting := true
	for lx.pos < len(lx.src) {
		rest := lx.src[lx.pos:]
		i := findTagStart(rest)
		if i < 0 {
			lx.emit(tokData, rest)
			lx.advance(len(rest))
			break
		}
		kind := rest[i+1]
		var sign byte
		if i+2 < len(rest) && (rest[i+2] == '-' || rest[i+2] == '+') {
			sign = rest[i+2]
		}
		text := stripForTag(rest[:i], sign, kind == '{', lineStarting)
		if text != "" {
			lx.emit(tokData, text)
		}
		lx.advance(i)
		head := 2
		if sign != 0 {
			head = 3
		}
		var err error
		switch kind {
		case '#':
			lineStarting, err = lx.comment(head)
		case '{':
			lx.emit(tokVarBegin, "")
			lx.advance(head)
			lineStarting, err = lx.inside(tokVarEnd)
		case '%':
			if n, ok := lx.rawBegin(head); ok {
				lx.advance(n)
				lineStarting, err = lx.rawBody()
			} else {
				lx.emit(tokBlockBegin, "")
				lx.advance(head)
				lineStarting, err = lx.inside(tokBlockEnd)
			}
		}
		if err != nil {
			return err
		}
	}
	lx.emit(tokEOF, "")
	return nil
}

// tagEnd measures a block/comment end marker at s (s starts with "-", "+"
// or the marker): "-%}" eats following whitespace, "+%}" nothing, and a
// plain "%}" one newline (trim_blocks).
func tagEnd(s, marker string, trim bool) (int, bool) {
	switch {
	case strings.HasPrefix(s, "-"+marker):
		n := len(marker) + 1
		return n + len(s[n:]) - len(strings.TrimLeftFunc(s[n:], isPySpace)), true
	case strings.HasPrefix(s, "+"+marker):
		return len(marker) + 1, true
	case strings.HasPrefix(s, marker):
		n := len(marker)
		if trim && strings.HasPrefix(s[n:], "\n") {
			n++
		}
		return n, true
	}
	return 0, false
}

func (lx *lexer) comment(head int) (bool, error) {
	startLine := lx.line
	body := lx.src[lx.pos+head:]
	end := strings.Index(body, "#}")
	if end < 0 {
		lx.line = startLine
		return false, lx.errorf("missing end of comment tag")
	}
	if end > 0 && (body[end-1] == '-' || body[end-1] == '+') {
		end--
	}
	n, _ := tagEnd(body[end:], "#}", true)
	total := head + end + n
	consumed := lx.src[lx.pos : lx.pos+total]
	lx.advance(total)
	return strings.HasSuffix(consumed, "\n"), nil
}

// rawBegin recognises "{% raw %}" (with optional whitespace control).
func (lx *lexer) rawBegin(head int) (int, bool) {
	s := lx.src[lx.pos+head:]
	t := strings.TrimLeftFunc(s, isPySpace)
	if !strings.HasPrefix(t, "raw") {
		return 0, false
	}
	t = t[3:]
	if t != "" && (isIdentByte(t[0])) {
		return 0, false
	}
	t = strings.TrimLeftFunc(t, isPySpace)
	consumed := len(lx.src) - lx.pos - len(t)
	switch {
	case strings.HasPrefix(t, "-%}"):
		rest := t[3:]
		return consumed + 3 + len(rest) - len(strings.TrimLeftFunc(rest, isPySpace)), true
	case strings.HasPrefix(t, "%}"):
		return consumed + 2, true
	}
	return 0, false
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func (lx *lexer) rawBody() (bool, error) {
	s := lx.src[lx.pos:]
	for off := 0; ; {
		j := strings.Index(s[off:], "{%")
		if j < 0 {
			return false, lx.errorf("missing end of raw directive")
		}
		at := off + j
		k := at + 2
		var sign byte
		if k < len(s) && (s[k] == '-' || s[k] == '+') {
			sign = s[k]
			k++
		}
		t := strings.TrimLeftFunc(s[k:], isPySpace)
		if strings.HasPrefix(t, "endraw") {
			t2 := strings.TrimLeftFunc(t[6:], isPySpace)
			if n, ok := tagEnd(t2, "%}", true); ok {
				text := stripForTag(s[:at], sign, false, false)
				if text != "" {
					lx.emit(tokData, text)
				}
				total := len(s) - len(t2) + n
				consumed := s[:total]
				lx.advance(total)
				return strings.HasSuffix(consumed, "\n"), nil
			}
		}
		off = at + 2
	}
}

var operators = []string{"**", "//", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"}

// inside tokenizes the expression part of a {{ }} or {% %} tag.
func (lx *lexer) inside(end tokenKind) (bool, error) {
	marker := "}}"
	if end == tokBlockEnd {
		marker = "%}"
	}
	// closers holds the brackets still open, innermost last. As in
	// jinja2, the end marker only ends the tag when they are balanced,
	// so "{{ {'a': {'b': 1}}['a'] }}" is one expression.
	var closers []byte
	for {
		rest := lx.src[lx.pos:]
		if rest == "" {
			return false, lx.errorf("unexpected end of template, expected '%s'", marker)
		}
		if n, ok := tagEnd(rest, marker, end == tokBlockEnd); ok && len(closers) == 0 {
			consumed := rest[:n]
			lx.emit(end, "")
			lx.advance(n)
			return strings.HasSuffix(consumed, "\n"), nil
		}
		r, size := utf8.DecodeRuneInString(rest)
		switch {
		case isPySpace(r):
			lx.advance(size)
		case r >= '0' && r <= '9':
			lx.number(rest)
		case r == '_' || unicode.IsLetter(r):
			lx.identifier(rest)
		case r == '\'' || r == '"':
			n, ok := scanString(rest)
			if !ok {
				return false, lx.errorf("unexpected char %q", r)
			}
			lx.emit(tokString, decodeStringLiteral(rest[1:n-1]))
			lx.advance(n)
		default:
			var err error
			if closers, err = lx.operator(rest, r, closers); err != nil {
				return false, err
			}
		}
	}
}

// number emits an integer or float token.
func (lx *lexer) number(rest string) {
	// After a dot, digits are an index ("matrix.0.1"), never
	// a float: jinja2's float pattern has a lookbehind for it.
	afterDot := lx.pos > 0 && lx.src[lx.pos-1] == '.'
	n, isFloat := scanNumber(rest, !afterDot)
	text := strings.ReplaceAll(rest[:n], "_", "")
	if isFloat {
		lx.emit(tokFloat, text)
	} else {
		lx.emit(tokInt, text)
	}
	lx.advance(n)
}

// identifier emits a name token: letters, digits and underscores.
func (lx *lexer) identifier(rest string) {
	n := 0
	for n < len(rest) {
		c, sz := utf8.DecodeRuneInString(rest[n:])
		if c != '_' && !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			break
		}
		n += sz
	}
	lx.emit(tokName, rest[:n])
	lx.advance(n)
}

// operator emits the longest operator rest starts with and keeps the
// brackets open in closers balanced.
func (lx *lexer) operator(rest string, r rune, closers []byte) ([]byte, error) {
	op := ""
	for _, o := range operators {
		if strings.HasPrefix(rest, o) {
			op = o
			break
		}
	}
	if op == "" {
		return closers, lx.errorf("unexpected char %q", r)
	}
	switch op {
	case "(":
		closers = append(closers, ')')
	case "[":
		closers = append(closers, ']')
	case "{":
		closers = append(closers, '}')
	case ")", "]", "}":
		if len(closers) == 0 {
			return closers, lx.errorf("unexpected '%s'", op)
		}
		if want := closers[len(closers)-1]; want != op[0] {
			return closers, lx.errorf("unexpected '%s', expected '%c'", op, want)
		}
		closers = closers[:len(closers)-1]
	}
	lx.emit(tokOp, op)
	lx.advance(len(op))
	return closers, nil
}

// scanNumber matches jinja2's integer and float patterns (digits with
// optional underscores, a fraction and/or an exponent); with float false
// it only takes the integer.
func scanNumber(s string, float bool) (int, bool) {
	digits := func(i int) int {
		start := i
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '_' && i > start && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9') {
			i++
		}
		return i
	}
	i := digits(0)
	isFloat := false
	if !float {
		return i, false
	}
	if i+1 < len(s) && s[i] == '.' && s[i+1] >= '0' && s[i+1] <= '9' {
		i = digits(i + 1)
		isFloat = true
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' {
			i = digits(j)
			isFloat = true
		}
	}
	return i, isFloat
}

func scanString(s string) (int, bool) {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q:
			return i + 1, true
		}
	}
	return 0, false
}

// decodeStringLiteral applies Python's "unicode-escape" decoding the way
// jinja2 does for string literals: known escapes are decoded, unknown ones
// are kept verbatim.
func decodeStringLiteral(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case 'x', 'u', 'U':
			n := 2
			if e == 'u' {
				n = 4
			} else if e == 'U' {
				n = 8
			}
			if i+1+n <= len(s) {
				if v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32); err == nil {
					b.WriteRune(rune(v))
					i += n
					continue
				}
			}
			b.WriteByte('\\')
			b.WriteByte(e)
		default:
			if e >= '0' && e <= '7' {
				j := i
				for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
					j++
				}
				v, _ := strconv.ParseUint(s[i:j], 8, 32)
				b.WriteRune(rune(v))
				i = j - 1
				continue
			}
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String()
}
