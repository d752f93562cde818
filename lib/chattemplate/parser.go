package chattemplate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxParseDepth bounds nesting so hostile templates cannot exhaust the stack.
const maxParseDepth = 200

type parser struct {
	name  string
	toks  []token
	pos   int
	depth int
	// macros are the macro definitions being parsed, innermost last.
	macros []*macroDef
	// loops counts the for loops around the current position within the
	// innermost macro or call block; break/continue need one.
	loops int
}

func (p *parser) cur() token  { return p.toks[p.pos] }
func (p *parser) peek() token { return p.toks[min(p.pos+1, len(p.toks)-1)] }
func (p *parser) next() token {
	t := p.toks[p.pos]
	if p.pos < len(p.toks)-1 {
		p.pos++
	}
	return t
}

func (p *parser) fail(format string, args ...any) error {
	return &SyntaxError{Template: p.name, Line: p.cur().line, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) isOp(op string) bool {
	t := p.cur()
	return t.kind == tokOp && t.val == op
}

func (p *parser) isName(name string) bool {
	t := p.cur()
	return t.kind == tokName && t.val == name
}

func (p *parser) expectOp(op string) error {
	if !p.isOp(op) {
		return p.fail("expected '%s', got %s", op, describeToken(p.cur()))
	}
	p.next()
	return nil
}

func (p *parser) expectName() (string, error) {
	if p.cur().kind != tokName {
		return "", p.fail("expected a name, got %s", describeToken(p.cur()))
	}
	return p.next().val, nil
}

func (p *parser) expectBlockEnd() error {
	if p.cur().kind != tokBlockEnd {
		return p.fail("expected end of statement block, got %s", describeToken(p.cur()))
	}
	p.next()
	return nil
}

func describeToken(t token) string {
	switch t.kind {
	case tokEOF:
		return "end of template"
	case tokBlockEnd:
		return "'end of statement block'"
	case tokVarEnd:
		return "'end of print statement'"
	case tokData:
		return "template data"
	}
	return "'" + t.val + "'"
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxParseDepth {
		return p.fail("template nested too deeply")
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// parseBody parses statements until one of the end tags (a block whose
// first name is in ends) and returns that tag name, leaving the parser
// positioned just after the tag name.
func (p *parser) parseBody(ends ...string) ([]stmt, string, error) {
	if err := p.enter(); err != nil {
		return nil, "", err
	}
	defer p.leave()
	var body []stmt
	for {
		t := p.cur()
		switch t.kind {
		case tokEOF:
			if len(ends) > 0 {
				return nil, "", p.fail("unexpected end of template, expected '%s'", strings.Join(ends, "' or '"))
			}
			return body, "", nil
		case tokData:
			p.next()
			body = append(body, &textStmt{pos{t.line}, t.val})
		case tokVarBegin:
			p.next()
			x, err := p.parseTuple(false, false) // jinja2 rejects an empty {{ }}
			if err != nil {
				return nil, "", err
			}
			if p.cur().kind != tokVarEnd {
				return nil, "", p.fail("expected end of print statement, got %s", describeToken(p.cur()))
			}
			p.next()
			body = append(body, &outputStmt{pos{t.line}, x})
		case tokBlockBegin:
			p.next()
			if p.cur().kind != tokName {
				return nil, "", p.fail("tag name expected")
			}
			name := p.cur().val
			for _, e := range ends {
				if name == e {
					p.next()
					return body, name, nil
				}
			}
			s, err := p.parseStatement()
			if err != nil {
				return nil, "", err
			}
			body = append(body, s...)
		default:
			return nil, "", p.fail("unexpected %s", describeToken(t))
		}
	}
}

// parseStatement parses a block tag after "{%".
func (p *parser) parseStatement() ([]stmt, error) {
	t := p.next()
	line := pos{t.line}
	var s stmt
	var err error
	switch t.val {
	case "if":
		s, err = p.parseIf(line)
	case "for":
		s, err = p.parseFor(line)
	case "set":
		s, err = p.parseSet(line)
	case "macro":
		s, err = p.parseMacro(line)
	case "call":
		s, err = p.parseCallBlock(line)
	case "filter":
		s, err = p.parseFilterBlock(line)
	case "with":
		s, err = p.parseWith(line)
	case "autoescape":
		s, err = p.parseAutoescape(line)
	case "break", "continue":
		if p.loops == 0 {
			return nil, &SyntaxError{Template: p.name, Line: t.line, Msg: fmt.Sprintf("'%s' outside loop", t.val)}
		}
		s = &loopControlStmt{line, t.val == "break"}
		err = p.expectBlockEnd()
	case "generation":
		// transformers' AssistantTracker extension renders the body through
		// a call block, so it gets its own scope like {% with %}.
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		body, _, err := p.parseBody("endgeneration")
		if err != nil {
			return nil, err
		}
		return []stmt{&withStmt{pos: line, body: body}}, p.expectBlockEnd()
	default:
		return nil, &SyntaxError{Template: p.name, Line: t.line, Msg: fmt.Sprintf("encountered unknown tag '%s'", t.val)}
	}
	if err != nil {
		return nil, err
	}
	return []stmt{s}, nil
}

func (p *parser) parseIf(line pos) (stmt, error) {
	s := &ifStmt{pos: line}
	for {
		cond, err := p.parseTuple(false, false)
		if err != nil {
			return nil, err
		}
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		body, end, err := p.parseBody("elif", "else", "endif")
		if err != nil {
			return nil, err
		}
		s.conds = append(s.conds, cond)
		s.bodies = append(s.bodies, body)
		switch end {
		case "elif":
			continue
		case "else":
			if err := p.expectBlockEnd(); err != nil {
				return nil, err
			}
			s.otherwise, _, err = p.parseBody("endif")
			if err != nil {
				return nil, err
			}
		}
		return s, p.expectBlockEnd()
	}
}

// parseAssignTarget parses the left side of for, set and with as jinja2
// does: a name, a tuple of targets, nested in parentheses as deep as the
// value ("op, (a, b)"), or (when allowAttr) "ns.attr". A tuple ends at a
// name in ends ("in" for loops).
func (p *parser) parseAssignTarget(allowAttr bool, ends ...string) (assignTarget, error) {
	if allowAttr && p.cur().kind == tokName && p.peek().kind == tokOp && p.peek().val == "." {
		name := p.next().val
		p.next()
		attr, err := p.expectName()
		if err != nil {
			return assignTarget{}, err
		}
		return assignTarget{names: []string{name}, attr: attr}, nil
	}
	items, isTuple, err := commaList(p, ends, p.parseTargetItem)
	if err != nil {
		return assignTarget{}, err
	}
	if len(items) == 0 {
		return assignTarget{}, p.fail("expected an assignment target, got %s", describeToken(p.cur()))
	}
	if !isTuple {
		return items[0], nil
	}
	return tupleTarget(items), nil
}

// parseTargetItem parses one name or a parenthesised target.
func (p *parser) parseTargetItem() (assignTarget, error) {
	if !p.isOp("(") {
		t := p.cur()
		if t.kind != tokName {
			return assignTarget{}, p.fail("expected a name, got %s", describeToken(t))
		}
		switch t.val {
		case "true", "True", "false", "False", "none", "None":
			return assignTarget{}, p.fail("can't assign to %s", t.val)
		}
		p.next()
		return assignTarget{names: []string{t.val}}, nil
	}
	if err := p.enter(); err != nil {
		return assignTarget{}, err
	}
	defer p.leave()
	p.next()
	var items []assignTarget
	isTuple := false
	for !p.isOp(")") {
		if len(items) > 0 {
			if err := p.expectOp(","); err != nil {
				return assignTarget{}, err
			}
			isTuple = true
			if p.isOp(")") {
				break
			}
		}
		item, err := p.parseTargetItem()
		if err != nil {
			return assignTarget{}, err
		}
		items = append(items, item)
	}
	p.next()
	if len(items) == 1 && !isTuple {
		return items[0], nil
	}
	return tupleTarget(items), nil
}

// tupleTarget unpacks into items; names lists every name bound, nested ones
// included, for the scope analysis.
func tupleTarget(items []assignTarget) assignTarget {
	tg := assignTarget{tuple: true, items: items}
	for _, it := range items {
		tg.names = append(tg.names, it.names...)
	}
	return tg
}

func (p *parser) parseFor(line pos) (stmt, error) {
	s := &forStmt{pos: line}
	var err error
	if s.target, err = p.parseAssignTarget(false, "in"); err != nil {
		return nil, err
	}
	if !p.isName("in") {
		return nil, p.fail("expected 'in'")
	}
	p.next()
	if s.iter, err = p.parseTuple(false, true, "recursive"); err != nil {
		return nil, err
	}
	if p.isName("if") {
		p.next()
		if s.filter, err = p.parseExpression(true); err != nil {
			return nil, err
		}
	}
	if p.isName("recursive") {
		p.next()
		s.recursive = true
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	p.loops++
	body, end, err := p.parseBody("endfor", "else")
	p.loops--
	if err != nil {
		return nil, err
	}
	s.body = body
	if end == "else" {
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		if s.otherwise, _, err = p.parseBody("endfor"); err != nil {
			return nil, err
		}
	}
	return s, p.expectBlockEnd()
}

func (p *parser) parseSet(line pos) (stmt, error) {
	target, err := p.parseAssignTarget(true)
	if err != nil {
		return nil, err
	}
	if p.isOp("=") {
		p.next()
		x, err := p.parseTuple(false, false)
		if err != nil {
			return nil, err
		}
		return &setStmt{line, target, x}, p.expectBlockEnd()
	}
	s := &setBlockStmt{pos: line, target: target}
	if s.filters, err = p.parseFilterChain(); err != nil {
		return nil, err
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	if s.body, _, err = p.parseBody("endset"); err != nil {
		return nil, err
	}
	return s, p.expectBlockEnd()
}

// parseFilterChain parses "| f | g(x)" as used by block set, or "f | g" as
// used by filter blocks (the first pipe is optional there).
func (p *parser) parseFilterChain() ([]*filterExpr, error) {
	var out []*filterExpr
	for p.isOp("|") || (len(out) == 0 && p.cur().kind == tokName) {
		if p.isOp("|") {
			p.next()
		}
		f, err := p.parseFilter(nil)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func (p *parser) parseMacroSignature(name string, line int) (*macroDef, error) {
	def := &macroDef{name: name, line: line}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	for !p.isOp(")") {
		if len(def.params) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp(")") {
				break
			}
		}
		param, err := p.expectName()
		if err != nil {
			return nil, err
		}
		def.params = append(def.params, param)
		if p.isOp("=") {
			p.next()
			d, err := p.parseExpression(true)
			if err != nil {
				return nil, err
			}
			def.defaults = append(def.defaults, d)
		} else if len(def.defaults) > 0 {
			return nil, p.fail("non-default argument follows default argument")
		}
	}
	p.next()
	return def, nil
}

func (p *parser) parseMacro(line pos) (stmt, error) {
	name, err := p.expectName()
	if err != nil {
		return nil, err
	}
	def, err := p.parseMacroSignature(name, line.line)
	if err != nil {
		return nil, err
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	p.macros = append(p.macros, def)
	outerLoops := p.loops
	p.loops = 0
	def.body, _, err = p.parseBody("endmacro")
	p.loops = outerLoops
	p.macros = p.macros[:len(p.macros)-1]
	if err != nil {
		return nil, err
	}
	if p.cur().kind == tokName {
		p.next() // "{% endmacro name %}" is allowed
	}
	return &macroStmt{line, def}, p.expectBlockEnd()
}

func (p *parser) parseCallBlock(line pos) (stmt, error) {
	caller := &macroDef{name: "caller", line: line.line, anonymous: true}
	if p.isOp("(") {
		var err error
		if caller, err = p.parseMacroSignature("caller", line.line); err != nil {
			return nil, err
		}
		caller.anonymous = true
	}
	x, err := p.parseExpression(true)
	if err != nil {
		return nil, err
	}
	call, ok := x.(*callExpr)
	if !ok {
		return nil, p.fail("expected call")
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	p.macros = append(p.macros, caller)
	outerLoops := p.loops
	p.loops = 0
	caller.body, _, err = p.parseBody("endcall")
	p.loops = outerLoops
	p.macros = p.macros[:len(p.macros)-1]
	if err != nil {
		return nil, err
	}
	return &callBlockStmt{line, call, caller}, p.expectBlockEnd()
}

func (p *parser) parseFilterBlock(line pos) (stmt, error) {
	filters, err := p.parseFilterChain()
	if err != nil {
		return nil, err
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	body, _, err := p.parseBody("endfilter")
	if err != nil {
		return nil, err
	}
	return &filterBlockStmt{pos: line, filters: filters, body: body}, p.expectBlockEnd()
}

func (p *parser) parseWith(line pos) (stmt, error) {
	s := &withStmt{pos: line}
	for p.cur().kind != tokBlockEnd {
		if len(s.targets) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		tg, err := p.parseAssignTarget(false)
		if err != nil {
			return nil, err
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		x, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		s.targets = append(s.targets, tg)
		s.values = append(s.values, x)
	}
	p.next()
	var err error
	if s.body, _, err = p.parseBody("endwith"); err != nil {
		return nil, err
	}
	return s, p.expectBlockEnd()
}

func (p *parser) parseAutoescape(line pos) (stmt, error) {
	x, err := p.parseExpression(true)
	if err != nil {
		return nil, err
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	body, _, err := p.parseBody("endautoescape")
	if err != nil {
		return nil, err
	}
	return &autoescapeStmt{line, x, body}, p.expectBlockEnd()
}

// parseTuple parses a comma separated expression list; a single element
// without a trailing comma is returned as is. simplified (for iterables)
// disables the ternary so that "for x in y if z" works. Besides the end of
// the tag and ")", a name in ends closes the list: jinja2 ends a loop's
// iterable at "recursive", and otherwise lets "if" or "in" be names.
func (p *parser) parseTuple(allowEmpty, simplified bool, ends ...string) (expr, error) {
	line := pos{p.cur().line}
	items, isTuple, err := commaList(p, ends, func() (expr, error) {
		if simplified {
			return p.parseOr()
		}
		return p.parseExpression(true)
	})
	if err != nil {
		return nil, err
	}
	if !isTuple {
		if len(items) == 0 {
			if !allowEmpty {
				return nil, p.fail("expected an expression, got %s", describeToken(p.cur()))
			}
			return &listExpr{line, nil, true}, nil
		}
		return items[0], nil
	}
	return &listExpr{line, items, true}, nil
}

// commaList parses what item parses, separated by commas, until the end of
// a tuple (see tupleEnds): the loop of jinja2's parse_tuple, which reads
// both the targets of an assignment and a tuple of values. isTuple reports
// a comma, so that "a," is a tuple of one.
func commaList[T any](p *parser, ends []string, item func() (T, error)) (items []T, isTuple bool, err error) {
	for {
		if len(items) > 0 {
			if !p.isOp(",") {
				return items, isTuple, nil
			}
			p.next()
			isTuple = true
		}
		if p.tupleEnds(ends) {
			return items, isTuple, nil
		}
		x, err := item()
		if err != nil {
			return nil, false, err
		}
		items = append(items, x)
	}
}

func (p *parser) tupleEnds(ends []string) bool {
	t := p.cur()
	switch t.kind {
	case tokVarEnd, tokBlockEnd, tokEOF:
		return true
	case tokOp:
		return t.val == ")"
	case tokName:
		return containsString(ends, t.val)
	}
	return false
}

func (p *parser) parseExpression(withCondExpr bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	if !withCondExpr {
		return p.parseOr()
	}
	x, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	for p.isName("if") {
		line := pos{p.next().line}
		cond, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		var otherwise expr
		if p.isName("else") {
			p.next()
			if otherwise, err = p.parseExpression(true); err != nil {
				return nil, err
			}
		}
		x = &condExpr{line, cond, x, otherwise}
	}
	return x, nil
}

func (p *parser) parseOr() (expr, error) {
	x, err := p.parseAnd()
	for err == nil && p.isName("or") {
		line := pos{p.next().line}
		var r expr
		if r, err = p.parseAnd(); err == nil {
			x = &binaryExpr{line, "or", x, r}
		}
	}
	return x, err
}

func (p *parser) parseAnd() (expr, error) {
	x, err := p.parseNot()
	for err == nil && p.isName("and") {
		line := pos{p.next().line}
		var r expr
		if r, err = p.parseNot(); err == nil {
			x = &binaryExpr{line, "and", x, r}
		}
	}
	return x, err
}

func (p *parser) parseNot() (expr, error) {
	if p.isName("not") {
		line := pos{p.next().line}
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return &unaryExpr{line, "not", x}, nil
	}
	return p.parseCompare()
}

func (p *parser) parseCompare() (expr, error) {
	line := pos{p.cur().line}
	first, err := p.parseMath1()
	if err != nil {
		return nil, err
	}
	c := &compareExpr{pos: line, first: first}
	for {
		t := p.cur()
		var op string
		switch {
		case t.kind == tokOp && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == "<=" || t.val == ">" || t.val == ">="):
			op = t.val
			p.next()
		case p.isName("in"):
			op = "in"
			p.next()
		case p.isName("not") && p.peek().kind == tokName && p.peek().val == "in":
			op = "notin"
			p.next()
			p.next()
		}
		if op == "" {
			break
		}
		r, err := p.parseMath1()
		if err != nil {
			return nil, err
		}
		c.ops = append(c.ops, op)
		c.rest = append(c.rest, r)
	}
	if len(c.ops) == 0 {
		return first, nil
	}
	return c, nil
}

// binaryLevel parses left-associative operators ops over operands from next.
func (p *parser) binaryLevel(next func() (expr, error), ops ...string) (expr, error) {
	x, err := next()
	if err != nil {
		return nil, err
	}
	for {
		t := p.cur()
		if t.kind != tokOp || !containsString(ops, t.val) {
			return x, nil
		}
		p.next()
		r, err := next()
		if err != nil {
			return nil, err
		}
		x = &binaryExpr{pos{t.line}, t.val, x, r}
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *parser) parseMath1() (expr, error)  { return p.binaryLevel(p.parseConcat, "+", "-") }
func (p *parser) parseConcat() (expr, error) { return p.binaryLevel(p.parseMath2, "~") }
func (p *parser) parseMath2() (expr, error)  { return p.binaryLevel(p.parsePow, "*", "/", "//", "%") }
func (p *parser) parsePow() (expr, error) {
	return p.binaryLevel(func() (expr, error) { return p.parseUnary(true) }, "**")
}

func (p *parser) parseUnary(withFilter bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.cur()
	var x expr
	var err error
	if t.kind == tokOp && (t.val == "-" || t.val == "+") {
		p.next()
		inner, err := p.parseUnary(false)
		if err != nil {
			return nil, err
		}
		x = foldSign(&unaryExpr{pos{t.line}, t.val, inner})
	} else if x, err = p.parsePrimary(); err != nil {
		return nil, err
	}
	if x, err = p.parsePostfix(x); err != nil {
		return nil, err
	}
	if withFilter {
		return p.parseFilterExpr(x)
	}
	return x, nil
}

// foldSign is x, a sign before a number, as the constant it makes (as
// jinja2 folds it): a number boxed once, not at every evaluation.
func foldSign(x *unaryExpr) expr {
	c, ok := x.x.(*constExpr)
	if !ok {
		return x
	}
	switch v := c.val.(type) {
	case int64:
		if v == math.MinInt64 {
			return x
		}
	case float64:
	default:
		return x
	}
	var v value
	var err error
	if x.op == "-" {
		v, err = negate(c.val)
	} else {
		v, err = positive(c.val)
	}
	if err != nil {
		return x
	}
	return &constExpr{pos: x.pos, val: v}
}

func (p *parser) parsePrimary() (expr, error) {
	t := p.cur()
	line := pos{t.line}
	switch t.kind {
	case tokName:
		p.next()
		return p.nameOrConstant(t.val, line), nil
	case tokString:
		p.next()
		s := t.val
		for p.cur().kind == tokString { // adjacent literals concatenate
			s += p.next().val
		}
		return &constExpr{line, s}, nil
	case tokInt:
		p.next()
		return p.intLiteral(t.val, line)
	case tokFloat:
		p.next()
		f, err := strconv.ParseFloat(t.val, 64)
		if err != nil && !math.IsInf(f, 0) {
			return nil, p.fail("invalid float %q", t.val)
		}
		return &constExpr{line, f}, nil
	case tokOp:
		switch t.val {
		case "(":
			p.next()
			x, err := p.parseTuple(true, false)
			if err != nil {
				return nil, err
			}
			return x, p.expectOp(")")
		case "[":
			p.next()
			items, err := p.parseList("]")
			if err != nil {
				return nil, err
			}
			return &listExpr{line, items, false}, nil
		case "{":
			p.next()
			return p.parseDict(line)
		}
	}
	return nil, p.fail("unexpected %s", describeToken(t))
}

// nameOrConstant is a bare name: true, false and none (either case) are
// constants; varargs, kwargs and caller, read inside a macro, make the macro
// collect them.
func (p *parser) nameOrConstant(name string, line pos) expr {
	switch name {
	case "true", "True":
		return &constExpr{line, true}
	case "false", "False":
		return &constExpr{line, false}
	case "none", "None":
		return &constExpr{line, nil}
	}
	for _, m := range p.macros {
		switch name {
		case "varargs":
			m.catchVarargs = true
		case "kwargs":
			m.catchKwargs = true
		case "caller":
			m.catchCaller = true
		}
	}
	return &nameExpr{line, name}
}

// intLiteral is an integer constant; one beyond int64 becomes a big integer.
func (p *parser) intLiteral(text string, line pos) (expr, error) {
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		big, err := parseBigLiteral(text)
		if err != nil {
			return nil, p.fail("%v", err)
		}
		return &constExpr{line, big}, nil
	}
	return &constExpr{line, n}, nil
}

// parseDict reads a dict literal's pairs up to its closing brace, the
// opening one already read; a trailing comma is allowed.
func (p *parser) parseDict(line pos) (expr, error) {
	d := &dictExpr{pos: line}
	for !p.isOp("}") {
		if len(d.keys) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp("}") {
				break
			}
		}
		k, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(":"); err != nil {
			return nil, err
		}
		v, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		d.keys = append(d.keys, k)
		d.vals = append(d.vals, v)
	}
	p.next()
	return d, nil
}

func (p *parser) parseList(closing string) ([]expr, error) {
	var items []expr
	for !p.isOp(closing) {
		if len(items) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp(closing) {
				break
			}
		}
		x, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		items = append(items, x)
	}
	p.next()
	return items, nil
}

func (p *parser) parsePostfix(x expr) (expr, error) {
	for {
		t := p.cur()
		if t.kind != tokOp {
			return x, nil
		}
		var err error
		switch t.val {
		case ".":
			p.next()
			a := p.next()
			switch a.kind {
			case tokName:
				x = &attrExpr{pos{t.line}, x, a.val}
			case tokInt:
				n, _ := strconv.ParseInt(a.val, 10, 64)
				x = &itemExpr{pos{t.line}, x, &constExpr{pos{a.line}, n}}
			default:
				return nil, p.fail("expected name or number after '.'")
			}
		case "[":
			p.next()
			if x, err = p.parseSubscript(x, t.line); err != nil {
				return nil, err
			}
		case "(":
			if x, err = p.parseCall(x); err != nil {
				return nil, err
			}
		default:
			return x, nil
		}
	}
}

func (p *parser) parseSubscript(obj expr, line int) (expr, error) {
	var parts [3]expr
	n := 0
	isSlice := false
	for {
		if p.isOp(":") {
			isSlice = true
			n++
			if n > 2 {
				return nil, p.fail("too many ':' in subscript")
			}
			p.next()
			continue
		}
		if p.isOp("]") {
			p.next()
			break
		}
		if parts[n] != nil {
			return nil, p.fail("expected ']'")
		}
		x, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		if !isSlice && p.isOp(",") { // x[a, b] indexes with a tuple
			p.next()
			rest, err := p.parseList("]")
			if err != nil {
				return nil, err
			}
			return &itemExpr{pos{line}, obj, &listExpr{pos{line}, append([]expr{x}, rest...), true}}, nil
		}
		parts[n] = x
	}
	if !isSlice {
		if parts[0] == nil {
			return nil, p.fail("expected subscript expression")
		}
		return &itemExpr{pos{line}, obj, parts[0]}, nil
	}
	return &sliceExpr{pos{line}, obj, parts[0], parts[1], parts[2]}, nil
}

func (p *parser) parseCallArgs() (callArgs, error) {
	var a callArgs
	if err := p.expectOp("("); err != nil {
		return a, err
	}
	// As in jinja2: positional arguments, then keywords, with *iterable
	// after the positional ones and **mapping last.
	invalid := func() error { return p.fail("invalid syntax for function call expression") }
	first := true
	for !p.isOp(")") {
		if !first {
			if err := p.expectOp(","); err != nil {
				return a, err
			}
			if p.isOp(")") {
				break
			}
		}
		first = false
		switch {
		case p.isOp("*"):
			if a.dynArgs != nil || a.dynKwargs != nil {
				return a, invalid()
			}
			p.next()
			x, err := p.parseExpression(true)
			if err != nil {
				return a, err
			}
			a.dynArgs = x
		case p.isOp("**"):
			if a.dynKwargs != nil {
				return a, invalid()
			}
			p.next()
			x, err := p.parseExpression(true)
			if err != nil {
				return a, err
			}
			a.dynKwargs = x
		case p.cur().kind == tokName && p.peek().kind == tokOp && p.peek().val == "=":
			if a.dynKwargs != nil {
				return a, invalid()
			}
			name := p.next().val
			p.next()
			x, err := p.parseExpression(true)
			if err != nil {
				return a, err
			}
			a.names = append(a.names, name)
			a.kwargs = append(a.kwargs, x)
		default:
			if a.dynArgs != nil || a.dynKwargs != nil || len(a.names) > 0 {
				return a, invalid()
			}
			x, err := p.parseExpression(true)
			if err != nil {
				return a, err
			}
			a.pos = append(a.pos, x)
		}
	}
	p.next()
	return a, nil
}

func (p *parser) parseCall(fn expr) (expr, error) {
	line := pos{p.cur().line}
	args, err := p.parseCallArgs()
	if err != nil {
		return nil, err
	}
	return &callExpr{line, fn, args}, nil
}

func (p *parser) parseDottedName() (string, error) {
	name, err := p.expectName()
	for err == nil && p.isOp(".") {
		p.next()
		var part string
		part, err = p.expectName()
		name += "." + part
	}
	return name, err
}

// parseFilter parses "name" or "name(args)" after a pipe.
func (p *parser) parseFilter(arg expr) (*filterExpr, error) {
	line := pos{p.cur().line}
	name, err := p.parseDottedName()
	if err != nil {
		return nil, err
	}
	f := &filterExpr{pos: line, arg: arg, name: name}
	if p.isOp("(") {
		if f.args, err = p.parseCallArgs(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (p *parser) parseFilterExpr(x expr) (expr, error) {
	for {
		switch {
		case p.isOp("|"):
			p.next()
			f, err := p.parseFilter(x)
			if err != nil {
				return nil, err
			}
			x = f
		case p.isName("is"):
			t, err := p.parseTest(x)
			if err != nil {
				return nil, err
			}
			x = t
		case p.isOp("("):
			c, err := p.parseCall(x)
			if err != nil {
				return nil, err
			}
			x = c
		default:
			return x, nil
		}
	}
}

func (p *parser) parseTest(x expr) (expr, error) {
	line := pos{p.next().line}
	t := &testExpr{pos: line, arg: x}
	if p.isName("not") {
		p.next()
		t.negate = true
	}
	name, err := p.parseDottedName()
	if err != nil {
		return nil, err
	}
	t.name = name
	cur := p.cur()
	switch {
	case p.isOp("("):
		if t.args, err = p.parseCallArgs(); err != nil {
			return nil, err
		}
	case cur.kind == tokString || cur.kind == tokInt || cur.kind == tokFloat ||
		(cur.kind == tokOp && (cur.val == "[" || cur.val == "{")) ||
		(cur.kind == tokName && cur.val != "else" && cur.val != "or" && cur.val != "and"):
		if p.isName("is") {
			return nil, p.fail("You cannot chain multiple tests with 'is'")
		}
		arg, err := p.parsePrimary()
		if err != nil {
			return nil, err
		}
		if arg, err = p.parsePostfix(arg); err != nil {
			return nil, err
		}
		t.args.pos = []expr{arg}
	}
	return t, nil
}

// Parse compiles template source. The returned Template is immutable and
// may be rendered concurrently.
func Parse(name, src string) (*Template, error) {
	toks, err := tokenize(name, src)
	if err != nil {
		return nil, err
	}
	p := &parser{name: name, toks: toks}
	body, _, err := p.parseBody()
	if err != nil {
		return nil, err
	}
	undef := analyzeScopes(body)
	analyzeMemo(body)
	markKeptScopes(body)
	return &Template{name: name, body: body, undef: undef, limits: defaultLimits}, nil
}
