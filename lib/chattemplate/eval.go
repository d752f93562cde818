package chattemplate

import (
	"errors"
	"slices"
	"time"
)

// Limits that keep hostile or buggy templates from hanging or exhausting
// memory. Real chat templates stay far below them.
const (
	maxStringLen  = 16 << 20 // bytes in one computed string
	maxListLen    = 1 << 20  // items in one computed list
	maxRangeItems = 100_000  // jinja2's sandbox MAX_RANGE
)

// limits bound the work of one Render call.
type limits struct {
	steps     int // loop iterations and macro calls
	callDepth int // nested macro calls and recursive loops
	output    int // bytes written, captured blocks and macro bodies included
	alloc     int // bytes of strings and lists computed by expressions
}

var defaultLimits = limits{steps: 2_000_000, callDepth: 250, output: 256 << 20, alloc: 1 << 30}

// RenderError is a failure while rendering, named like the Python exception
// transformers would raise (TypeError, UndefinedError, SecurityError, ...).
type RenderError struct {
	Template string
	Line     int
	Kind     string
	Msg      string
}

// Error implements error.
func (e *RenderError) Error() string {
	if e.Template == "" {
		return e.Kind + ": " + e.Msg
	}
	return e.Template + ":" + itoa(e.Line) + ": " + e.Kind + ": " + e.Msg
}

// TemplateError is what a template's raise_exception(...) call produces; its
// message is exactly the text the template passed.
type TemplateError struct {
	Message string
}

// Error implements error.
func (e *TemplateError) Error() string { return e.Message }

func typeError(format string, args ...any) error {
	return &RenderError{Kind: "TypeError", Msg: sprintf(format, args...)}
}

func valueError(format string, args ...any) error {
	return &RenderError{Kind: "ValueError", Msg: sprintf(format, args...)}
}

// errBreak and errContinue unwind loop bodies; they never escape a loop
// because the parser only accepts break/continue... anywhere, and jinja2
// rejects them outside loops at compile time, which we check at run time.
var (
	errBreak    = errors.New("break outside loop")
	errContinue = errors.New("continue outside loop")
)

// binding is one variable in a frame.
type binding struct {
	name string
	val  value
}

// frame is one variable scope. Scopes are tiny, so a slice beats a map.
type frame struct {
	vars   []binding
	parent *frame
	// firstVars backs vars until it outgrows them: a loop body opens a
	// scope per iteration with a few variables (loop, the target, names
	// the body sets), which then cost no allocation of their own.
	firstVars [frameInlineVars]binding
}

const frameInlineVars = 4

func newFrame(parent *frame) *frame {
	f := &frame{parent: parent}
	f.vars = f.firstVars[:0]
	return f
}

// missingValue marks a scope variable that exists but is not assigned yet.
type missingValue struct{}

var missing value = missingValue{}

// newScope opens a scope whose listed names start out undefined.
func newScope(parent *frame, undef []string) *frame {
	f := newFrame(parent)
	f.bindUndef(undef)
	return f
}

// bindUndef adds the names, undefined, to f.
func (f *frame) bindUndef(undef []string) {
	if len(undef) > frameInlineVars/2 && cap(f.vars)-len(f.vars) < len(undef)+frameInlineVars {
		// Room for the loop variables or macro arguments bound next, so
		// that the scope grows once rather than by doublings.
		f.vars = make([]binding, 0, len(undef)+frameInlineVars)
	}
	for _, n := range undef {
		f.vars = append(f.vars, binding{n, missing})
	}
}

// openScope is newScope, in a frame a scope closed before gave back when
// there is one.
func (r *renderer) openScope(parent *frame, undef []string) *frame {
	n := len(r.freeFrames)
	if n == 0 {
		return newScope(parent, undef)
	}
	f := r.freeFrames[n-1]
	r.freeFrames = r.freeFrames[:n-1]
	f.parent = parent
	f.bindUndef(undef)
	return f
}

// closeScope gives back the frame of a loop iteration or a macro call that
// is over, for openScope. Only a body that cannot keep its scope (see
// keepsScope) gives it back: then no frame or value refers to it any more.
func (r *renderer) closeScope(f *frame) {
	clear(f.vars) // the values it held are not kept alive by the frame
	f.vars, f.parent = f.vars[:0], nil
	r.freeFrames = append(r.freeFrames, f)
}

func (f *frame) lookup(name string) (value, bool) {
	b := f.find(name)
	if b == nil {
		return nil, false
	}
	if b.val == missing {
		return &undefinedValue{name: name}, true
	}
	return b.val, true
}

// find is the variable name, in the nearest scope that has it, or nil.
func (f *frame) find(name string) *binding {
	for ; f != nil; f = f.parent {
		for i := len(f.vars) - 1; i >= 0; i-- {
			if f.vars[i].name == name {
				return &f.vars[i]
			}
		}
	}
	return nil
}

// set assigns in this scope only, like jinja2's {% set %}.
func (f *frame) set(name string, v value) {
	for i := range f.vars {
		if f.vars[i].name == name {
			f.vars[i].val = v
			return
		}
	}
	f.vars = append(f.vars, binding{name, v})
}

// renderer holds the mutable state of one Render call.
type renderer struct {
	tmpl *Template
	now  func() time.Time // Options.Now
	// autoescape is set inside {% autoescape true %} blocks; calledMacro
	// tells whether the last call made was to a macro.
	autoescape, calledMacro bool
	limits                  *limits // the template's
	steps                   int
	callDepth               int
	outLen                  int
	allocated               int
	cache                   *MessageCache // nil: no loop replays an iteration
	// argSlots hold the positional arguments of the calls under way whose
	// callee keeps none of them (a macro binds them into its scope, a
	// dict's methods read them), rather than an array per call: taken by
	// evalArgs, given back by freeArgs once the call returns.
	argSlots []value
	// freeFrames are scopes closed during the render (closeScope).
	freeFrames []*frame
}

// freeArgs gives back the argument slots taken since there were mark.
func (r *renderer) freeArgs(mark int) {
	clear(r.argSlots[mark:]) // no value outlives its call through them
	r.argSlots = r.argSlots[:mark]
}

// account charges computed strings and lists against the allocation
// budget, so loops that keep building large values terminate.
func (r *renderer) account(v value) error {
	switch x := v.(type) {
	case string:
		r.allocated += len(x)
	case *pyList:
		r.allocated += 16 * len(x.Items)
	default:
		return nil
	}
	if r.allocated > r.limits.alloc {
		return &RenderError{Kind: "MemoryError", Msg: "template allocated too much memory"}
	}
	return nil
}

func (r *renderer) spend() error {
	r.steps++
	if r.steps > r.limits.steps {
		return &RenderError{Kind: "RuntimeError", Msg: "template exceeded the step limit"}
	}
	return nil
}

// withLine attaches template position to errors that lack one.
func (r *renderer) withLine(err error, line int) error {
	if err == nil {
		return nil
	}
	var re *RenderError
	if errors.As(err, &re) && re.Template == "" {
		re.Template = r.tmpl.name
		re.Line = line
	}
	return err
}

func (r *renderer) execBody(body []stmt, f *frame, w *textWriter) error {
	for _, s := range body {
		if err := r.exec(s, f, w); err != nil {
			return err
		}
	}
	return nil
}

func (r *renderer) write(w *textWriter, s string) error {
	if err := r.countOutput(len(s)); err != nil {
		return err
	}
	w.WriteString(s)
	return nil
}

// countOutput charges n bytes of output against the output limit.
func (r *renderer) countOutput(n int) error {
	r.outLen += n
	if r.outLen > r.limits.output {
		return &RenderError{Kind: "RuntimeError", Msg: "rendered output too large"}
	}
	return nil
}

func (r *renderer) exec(s stmt, f *frame, w *textWriter) error {
	switch s := s.(type) {
	case *textStmt:
		return r.write(w, s.text)
	case *outputStmt:
		if c, ok := s.x.(*callExpr); ok && !r.autoescape {
			return r.outputCall(c, s.line, f, w)
		}
		v, err := r.eval(s.x, f)
		if err != nil {
			return r.withLine(err, s.line)
		}
		if r.autoescape && !r.markupExpr(s.x) {
			return r.write(w, htmlEscaper.Replace(pyStr(v)))
		}
		return r.write(w, pyStr(v))
	case *autoescapeStmt:
		return r.execAutoescape(s, f, w)
	case *ifStmt:
		return r.execIf(s, f, w)
	case *forStmt:
		return r.execFor(s, f, w)
	case *setStmt:
		v, err := r.eval(s.x, f)
		if err != nil {
			return r.withLine(err, s.line)
		}
		return r.withLine(r.assign(s.target, v, f), s.line)
	case *setBlockStmt:
		v, err := r.capture(s.body, newScope(f, s.undef), s.filters)
		if err != nil {
			return r.withLine(err, s.line)
		}
		return r.withLine(r.assign(s.target, v, f), s.line)
	case *macroStmt:
		f.set(s.def.name, &macroValue{def: s.def, closure: f})
		return nil
	case *callBlockStmt:
		caller := &macroValue{def: s.caller, closure: f}
		v, err := r.evalCall(s.call, f, caller)
		if err != nil {
			return r.withLine(err, s.line)
		}
		return r.write(w, pyStr(v))
	case *filterBlockStmt:
		v, err := r.capture(s.body, newScope(f, s.undef), s.filters)
		if err != nil {
			return r.withLine(err, s.line)
		}
		return r.write(w, pyStr(v))
	case *withStmt:
		return r.execWith(s, f, w)
	case *loopControlStmt:
		if s.isBreak {
			return errBreak
		}
		return errContinue
	}
	return nil
}

// execAutoescape runs a body with autoescape set by its expression, then
// restores the outer setting.
func (r *renderer) execAutoescape(s *autoescapeStmt, f *frame, w *textWriter) error {
	v, err := r.eval(s.x, f)
	if err != nil {
		return r.withLine(err, s.line)
	}
	outer := r.autoescape
	r.autoescape = truthy(v)
	err = r.execBody(s.body, f, w)
	r.autoescape = outer
	return err
}

// execIf runs the body of the first true condition, or the else body.
func (r *renderer) execIf(s *ifStmt, f *frame, w *textWriter) error {
	for i, c := range s.conds {
		v, err := r.eval(c, f)
		if err != nil {
			return r.withLine(err, c.exprLine())
		}
		if truthy(v) {
			return r.execBody(s.bodies[i], f, w)
		}
	}
	return r.execBody(s.otherwise, f, w)
}

// execWith runs a with block's body in a scope of its own, its targets
// evaluated in the outer one.
func (r *renderer) execWith(s *withStmt, f *frame, w *textWriter) error {
	inner := newScope(f, s.undef)
	for i, tg := range s.targets {
		v, err := r.eval(s.values[i], f)
		if err != nil {
			return r.withLine(err, s.line)
		}
		if err := r.assign(tg, v, inner); err != nil {
			return r.withLine(err, s.line)
		}
	}
	return r.execBody(s.body, inner, w)
}

// markupExpr tells whether jinja2 would print the value x just gave
// unescaped under autoescape because it is a Markup object: the result of
// safe, escape, forceescape or tojson, or what a macro returns. Values are
// plain strings here, so this looks at how the value was made.
func (r *renderer) markupExpr(x expr) bool {
	switch x := x.(type) {
	case *filterExpr:
		switch x.name {
		case "safe", "e", "escape", "forceescape", "tojson":
			return true
		}
	case *callExpr:
		return r.calledMacro
	}
	return false
}

// capture renders body in scope f and applies block filters to the text.
func (r *renderer) capture(body []stmt, f *frame, filters []*filterExpr) (value, error) {
	var b textWriter
	if err := r.execBody(body, f, &b); err != nil {
		return nil, err
	}
	var v value = b.String()
	for _, fl := range filters {
		var err error
		if v, err = r.applyFilter(fl, v, f); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// assign binds a set/for target in frame f.
func (r *renderer) assign(tg assignTarget, v value, f *frame) error {
	if tg.attr != "" {
		obj, _ := f.lookup(tg.names[0])
		ns, ok := obj.(*namespaceValue)
		if !ok {
			return &RenderError{Kind: "TemplateRuntimeError", Msg: "cannot assign attribute on non-namespace object"}
		}
		ns.attrs.set(tg.attr, v)
		return nil
	}
	if !tg.tuple {
		f.set(tg.names[0], v)
		return nil
	}
	items, err := r.iterate(v)
	if err != nil {
		return err
	}
	if len(items) != len(tg.items) {
		if len(items) > len(tg.items) {
			return valueError("too many values to unpack (expected %d)", len(tg.items))
		}
		return valueError("not enough values to unpack (expected %d, got %d)", len(tg.items), len(items))
	}
	for i, sub := range tg.items {
		if err := r.assign(sub, items[i], f); err != nil {
			return err
		}
	}
	return nil
}

// iterate lists the items Python's iter() would produce, charging new
// lists (characters of a string, a range) to the allocation budget.
func (r *renderer) iterate(v value) ([]value, error) {
	items, err := iterValues(v)
	if err != nil {
		return nil, err
	}
	switch v.(type) {
	case string, rangeValue:
		if err := r.account(&pyList{Items: items}); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// iterValues lists the items Python's iter() would produce.
func iterValues(v value) ([]value, error) {
	switch x := v.(type) {
	case *pyList:
		return x.Items, nil
	case *pyDict:
		return append([]value(nil), x.keys...), nil
	case string:
		out := make([]value, 0, len(x))
		for _, c := range x {
			out = append(out, string(c))
		}
		return out, nil
	case rangeValue:
		n := x.len()
		if n > maxListLen {
			return nil, &RenderError{Kind: "RuntimeError", Msg: "range too large"}
		}
		out := make([]value, 0, n)
		for i := int64(0); i < n; i++ {
			out = append(out, x.start+i*x.step)
		}
		return out, nil
	case *undefinedValue:
		if x.kind != "" {
			return nil, x.fail()
		}
		return nil, nil
	case *iterValue:
		return x.consume()
	case *loopState:
		// A LoopContext is its own iterator: iterating it takes the
		// rest of the loop's items, each paired with the loop, and the
		// for loop then ends after the current pass.
		rest := x.items[min(x.index+1, len(x.items)):]
		out := make([]value, len(rest))
		for i, item := range rest {
			out[i] = &pyList{Items: []value{item, x}, Tuple: true}
		}
		x.index = max(len(x.items)-1, x.index)
		return out, nil
	}
	return nil, typeError("'%s' object is not iterable", typeName(v))
}

func (r *renderer) execFor(s *forStmt, f *frame, w *textWriter) error {
	it, err := r.eval(s.iter, f)
	if err != nil {
		return r.withLine(err, s.line)
	}
	return r.runLoop(s, it, f, w, 0)
}

func (r *renderer) runLoop(s *forStmt, it value, f *frame, w *textWriter, depth int) error {
	items, err := r.iterate(it)
	if err != nil {
		return r.withLine(err, s.line)
	}
	if s.filter != nil {
		if items, err = r.filterItems(s, items, f); err != nil {
			return err
		}
	}
	loop := &loopState{items: items, depth: depth}
	if s.recursive {
		loop.recurse = func(next value) (value, error) {
			r.callDepth++
			defer func() { r.callDepth-- }()
			if r.callDepth > r.limits.callDepth {
				return nil, &RenderError{Kind: "RecursionError", Msg: "maximum recursion depth exceeded"}
			}
			var b textWriter
			if err := r.runLoop(s, next, f, &b, depth+1); err != nil {
				return nil, err
			}
			return b.String(), nil
		}
	}
	// jinja2 clears its "run the else block" flag at the end of the body, so
	// the else block also runs when every iteration ended in break/continue.
	completed := false
	memo := r.loopMemo(s, f)
	for i := 0; i < len(items); i++ {
		item := items[i]
		if err := r.spend(); err != nil {
			return r.withLine(err, s.line)
		}
		loop.index = i
		if memo.replay(r, item, w) {
			completed = true
			continue
		}
		at := r.mark(w)
		scope := r.openScope(f, s.undef)
		scope.set("loop", loop)
		if err := r.assign(s.target, item, scope); err != nil {
			return r.withLine(err, s.line)
		}
		err := r.execBody(s.body, scope, w)
		i = loop.index // the body may have consumed the loop by iterating it
		if !s.keepsScope && (err == nil || err == errBreak || err == errContinue) {
			r.closeScope(scope)
		}
		if err == errBreak {
			break
		}
		if err == nil {
			completed = true
			memo.record(r, item, at, w)
		} else if err != errContinue {
			return err
		}
	}
	if !completed {
		return r.execBody(s.otherwise, newScope(f, s.elseUndef), w)
	}
	return nil
}

// filterItems keeps the items that pass the loop's if clause.
func (r *renderer) filterItems(s *forStmt, items []value, f *frame) ([]value, error) {
	kept := make([]value, 0, len(items))
	for _, item := range items {
		if err := r.spend(); err != nil {
			return nil, err
		}
		scope := newFrame(f)
		if err := r.assign(s.target, item, scope); err != nil {
			return nil, r.withLine(err, s.line)
		}
		ok, err := r.eval(s.filter, scope)
		if err != nil {
			return nil, r.withLine(err, s.line)
		}
		if truthy(ok) {
			kept = append(kept, item)
		}
	}
	return kept, nil
}

func (r *renderer) eval(x expr, f *frame) (value, error) {
	switch x := x.(type) {
	case *constExpr:
		return x.val, nil
	case *nameExpr:
		return resolve(f, x.name), nil
	case *attrExpr:
		obj, err := r.eval(x.obj, f)
		if err != nil {
			return nil, err
		}
		return getAttr(obj, x.name)
	case *itemExpr:
		obj, err := r.eval(x.obj, f)
		if err != nil {
			return nil, err
		}
		key, err := r.eval(x.key, f)
		if err != nil {
			return nil, err
		}
		return getItem(obj, key)
	case *sliceExpr:
		return r.evalSlice(x, f)
	case *listExpr:
		return r.evalList(x, f)
	case *dictExpr:
		return r.evalDict(x, f)
	case *callExpr:
		return r.evalCall(x, f, nil)
	case *filterExpr:
		arg, err := r.eval(x.arg, f)
		if err != nil {
			return nil, err
		}
		return r.applyFilter(x, arg, f)
	case *testExpr:
		return r.evalTest(x, f)
	case *unaryExpr:
		return r.evalUnary(x, f)
	case *binaryExpr:
		return r.evalBinary(x, f)
	case *compareExpr:
		return r.evalCompare(x, f)
	case *condExpr:
		return r.evalCond(x, f)
	}
	return nil, &RenderError{Kind: "RuntimeError", Msg: "unknown expression"}
}

// resolve is what the name stands for in f: a variable, a global, or
// undefined.
func resolve(f *frame, name string) value {
	if v, ok := resolveDefined(f, name); ok {
		return v
	}
	return &undefinedValue{name: name}
}

// resolveDefined is resolve without the undefined value it makes for a
// name that is unbound, or bound but not assigned yet: ok is false then.
func resolveDefined(f *frame, name string) (v value, ok bool) {
	if b := f.find(name); b != nil {
		return b.val, b.val != missing
	}
	g, ok := globals[name]
	return g, ok
}

func (r *renderer) evalList(x *listExpr, f *frame) (value, error) {
	items := make([]value, len(x.items))
	for i, e := range x.items {
		v, err := r.eval(e, f)
		if err != nil {
			return nil, err
		}
		items[i] = v
	}
	return &pyList{Items: items, Tuple: x.tuple}, nil
}

func (r *renderer) evalDict(x *dictExpr, f *frame) (value, error) {
	d := newDict(len(x.keys))
	for i := range x.keys {
		k, err := r.eval(x.keys[i], f)
		if err != nil {
			return nil, err
		}
		if !isHashable(k) {
			return nil, typeError("unhashable type: '%s'", typeName(k))
		}
		v, err := r.eval(x.vals[i], f)
		if err != nil {
			return nil, err
		}
		d.set(k, v)
	}
	return d, nil
}

func (r *renderer) evalUnary(x *unaryExpr, f *frame) (value, error) {
	v, err := r.eval(x.x, f)
	if err != nil {
		return nil, err
	}
	switch x.op {
	case "not":
		return !truthy(v), nil
	case "-":
		return negate(v)
	default:
		return positive(v)
	}
}

// evalCond is the inline if-expression; without an else it yields an
// undefined value that says why, as jinja2 does.
func (r *renderer) evalCond(x *condExpr, f *frame) (value, error) {
	c, err := r.eval(x.cond, f)
	if err != nil {
		return nil, err
	}
	if truthy(c) {
		return r.eval(x.then, f)
	}
	if x.otherwise == nil {
		return &undefinedValue{hint: "the inline if-expression evaluated to false and no else section was defined."}, nil
	}
	return r.eval(x.otherwise, f)
}

func (r *renderer) evalBinary(x *binaryExpr, f *frame) (value, error) {
	l, err := r.eval(x.l, f)
	if err != nil {
		return nil, err
	}
	switch x.op {
	case "and":
		if !truthy(l) {
			return l, nil
		}
		return r.eval(x.r, f)
	case "or":
		if truthy(l) {
			return l, nil
		}
		return r.eval(x.r, f)
	}
	rv, err := r.eval(x.r, f)
	if err != nil {
		return nil, err
	}
	var out value
	if x.op == "~" {
		ls, rs := pyStr(l), pyStr(rv)
		if len(ls)+len(rs) > maxStringLen {
			return nil, errTooLarge()
		}
		out = ls + rs
	} else if out, err = arith(x.op, l, rv); err != nil {
		return nil, err
	}
	return out, r.account(out)
}

func (r *renderer) evalCompare(x *compareExpr, f *frame) (value, error) {
	l, err := r.eval(x.first, f)
	if err != nil {
		return nil, err
	}
	for i, op := range x.ops {
		rv, err := r.eval(x.rest[i], f)
		if err != nil {
			return nil, err
		}
		ok, err := compare(op, l, rv)
		if err != nil {
			return nil, err
		}
		if !ok {
			return false, nil
		}
		l = rv
	}
	return true, nil
}

func (r *renderer) evalSlice(x *sliceExpr, f *frame) (value, error) {
	obj, err := r.eval(x.obj, f)
	if err != nil {
		return nil, err
	}
	var bounds [3]value
	for i, e := range []expr{x.start, x.stop, x.step} {
		if e == nil {
			continue
		}
		if bounds[i], err = r.eval(e, f); err != nil {
			return nil, err
		}
	}
	if u, ok := obj.(*undefinedValue); ok {
		return nil, u.fail()
	}
	out, err := sliceValue(obj, bounds[0], bounds[1], bounds[2])
	if err != nil {
		return nil, err
	}
	return out, r.account(out)
}

// evalArgs evaluates call arguments, unpacking *iterable and **mapping;
// inSlots: the positional ones go in argSlots (the caller frees them).
func (r *renderer) evalArgs(a callArgs, f *frame, inSlots bool) ([]value, *kwargs, error) {
	var args []value
	if n := len(a.pos); n > 0 && inSlots {
		// A call evaluated among these arguments takes the slots past
		// these, and may move argSlots: args keeps the array it was cut
		// from.
		base := len(r.argSlots)
		r.argSlots = slices.Grow(r.argSlots, n)[:base+n]
		args = r.argSlots[base : base+n : base+n]
	} else if n > 0 {
		args = make([]value, n)
	}
	if len(a.pos) > 0 {
		for i, e := range a.pos {
			v, err := r.eval(e, f)
			if err != nil {
				return nil, nil, err
			}
			args[i] = v
		}
	}
	var kw *kwargs
	if len(a.names) > 0 {
		// Clipped: a {% call %} appends "caller", which must not write
		// into the syntax tree that concurrent renders share.
		kw = &kwargs{names: a.names[:len(a.names):len(a.names)], vals: make([]value, len(a.kwargs))}
		for i, e := range a.kwargs {
			v, err := r.eval(e, f)
			if err != nil {
				return nil, nil, err
			}
			kw.vals[i] = v
		}
	}
	if a.dynArgs == nil && a.dynKwargs == nil {
		return args, kw, nil
	}
	return r.unpackArgs(a, f, args, kw)
}

// unpackArgs adds the items of *iterable and the entries of **mapping to
// evaluated arguments.
func (r *renderer) unpackArgs(a callArgs, f *frame, args []value, kw *kwargs) ([]value, *kwargs, error) {
	if a.dynArgs != nil {
		v, err := r.eval(a.dynArgs, f)
		if err != nil {
			return nil, nil, err
		}
		items, err := r.iterate(v)
		if err != nil {
			return nil, nil, err
		}
		args = append(args[:len(args):len(args)], items...)
	}
	if a.dynKwargs != nil {
		v, err := r.eval(a.dynKwargs, f)
		if err != nil {
			return nil, nil, err
		}
		d, ok := v.(*pyDict)
		if !ok {
			return nil, nil, typeError("argument after ** must be a mapping, not %s", typeName(v))
		}
		merged := &kwargs{}
		if kw != nil {
			merged.names = append(merged.names, kw.names...)
			merged.vals = append(merged.vals, kw.vals...)
		}
		for i, k := range d.keys {
			name, ok := k.(string)
			if !ok {
				return nil, nil, typeError("keywords must be strings")
			}
			if indexOf(merged.names, name) >= 0 {
				return nil, nil, typeError("got multiple values for keyword argument '%s'", name)
			}
			merged.names = append(merged.names, name)
			merged.vals = append(merged.vals, d.vals[i])
		}
		kw = merged
	}
	return args, kw, nil
}

// evalCall calls functions, macros and methods; caller is set for
// {% call %} blocks.
func (r *renderer) evalCall(x *callExpr, f *frame, caller *macroValue) (value, error) {
	defer r.freeArgs(len(r.argSlots))
	c, args, kw, err := r.evalCallParts(x, f, caller)
	if err != nil {
		return nil, err
	}
	return r.callCallee(c, args, kw)
}

// callee is what a call calls: fn, or for a call of a dict's method
// (message.get('content')) the dict and the method's name, called without
// the bound method that getAttr would make for it.
type callee struct {
	fn   value
	dict *pyDict
	name string
}

// evalCallParts evaluates what the call x calls and its arguments.
func (r *renderer) evalCallParts(x *callExpr, f *frame, caller *macroValue) (c callee, args []value, kw *kwargs, err error) {
	if a, ok := x.fn.(*attrExpr); ok {
		obj, err := r.eval(a.obj, f)
		if err != nil {
			return callee{}, nil, nil, err
		}
		if d, ok := obj.(*pyDict); ok && dictMethods[a.name] {
			c = callee{dict: d, name: a.name} // what getAttr gives, bound
		} else if c.fn, err = getAttr(obj, a.name); err != nil {
			return callee{}, nil, nil, err
		}
	} else if c.fn, err = r.eval(x.fn, f); err != nil {
		return callee{}, nil, nil, err
	}
	_, macro := c.fn.(*macroValue)
	args, kw, err = r.evalArgs(x.args, f, macro || c.dict != nil)
	if err != nil {
		return callee{}, nil, nil, err
	}
	if caller != nil {
		if kw == nil {
			kw = &kwargs{}
		}
		kw.names = append(kw.names, "caller")
		kw.vals = append(kw.vals, caller)
	}
	return c, args, kw, nil
}

// callCallee calls c as call calls c.fn, or the bound method of c.dict.
func (r *renderer) callCallee(c callee, args []value, kw *kwargs) (value, error) {
	if c.dict == nil {
		return r.call(c.fn, args, kw)
	}
	v, err := callMethod(r, c.dict, c.name, args, kw)
	if err == nil {
		err = checkSize(v)
	}
	r.calledMacro = false
	if err != nil {
		return nil, err
	}
	return v, r.account(v)
}

// outputCall prints the call x on line, as {{ x }} does outside
// autoescape. A macro writes its output straight into w rather than into a
// string of its own that is then printed (a copy and an allocation per
// call), charged against the limits as that string and its printing would
// be; errors name the line as they would.
func (r *renderer) outputCall(x *callExpr, line int, f *frame, w *textWriter) error {
	defer r.freeArgs(len(r.argSlots))
	c, args, kw, err := r.evalCallParts(x, f, nil)
	if err != nil {
		return r.withLine(err, line)
	}
	m, ok := c.fn.(*macroValue)
	if !ok {
		v, err := r.callCallee(c, args, kw)
		if err != nil {
			return r.withLine(err, line)
		}
		return r.write(w, pyStr(v))
	}
	start := w.Len()
	err = r.callMacroTo(m, args, kw, w)
	r.calledMacro = true // as call does
	if err == nil {
		err = r.account(w.String()[start:]) // the string the macro returns
	}
	if err != nil {
		return r.withLine(err, line)
	}
	return r.countOutput(w.Len() - start) // as printing the string does
}

func (r *renderer) call(fn value, args []value, kw *kwargs) (value, error) {
	out, err := r.dispatchCall(fn, args, kw)
	_, r.calledMacro = fn.(*macroValue)
	if err != nil {
		return nil, err
	}
	return out, r.account(out)
}

func (r *renderer) dispatchCall(fn value, args []value, kw *kwargs) (value, error) {
	switch fn := fn.(type) {
	case *macroValue:
		return r.callMacro(fn, args, kw)
	case *builtinFunc:
		return fn.fn(r, args, kw)
	case *boundMethod:
		v, err := callMethod(r, fn.recv, fn.name, args, kw)
		if err != nil {
			return nil, err
		}
		return v, checkSize(v)
	case *loopState:
		if fn.recurse == nil {
			return nil, typeError("Tried to call non recursive loop.  Maybe you forgot the 'recursive' modifier.")
		}
		if len(args) != 1 {
			return nil, typeError("loop() takes exactly one argument")
		}
		return fn.recurse(args[0])
	case *undefinedValue:
		return nil, fn.fail()
	}
	return nil, typeError("'%s' object is not callable", typeName(fn))
}

// macroValue is a template macro; calling it renders its body to a string.
type macroValue struct {
	def     *macroDef
	closure *frame
}

// attr gives the public attributes of jinja2's Macro object.
func (m *macroValue) attr(name string) (value, bool) {
	def := m.def
	switch name {
	case "name":
		if def.anonymous {
			return nil, true
		}
		return def.name, true
	case "arguments":
		args := make([]value, len(def.params))
		for i, p := range def.params {
			args[i] = p
		}
		return &pyList{Items: args, Tuple: true}, true
	case "catch_kwargs":
		return def.catchKwargs, true
	case "catch_varargs":
		return def.catchVarargs, true
	case "caller":
		return def.catchCaller, true
	}
	return nil, false
}

func (r *renderer) callMacro(m *macroValue, args []value, kw *kwargs) (value, error) {
	var b textWriter
	if err := r.callMacroTo(m, args, kw, &b); err != nil {
		return nil, err
	}
	return b.String(), nil
}

// callMacroTo runs the macro m, writing its output into w.
func (r *renderer) callMacroTo(m *macroValue, args []value, kw *kwargs, w *textWriter) error {
	if err := r.spend(); err != nil {
		return err
	}
	r.callDepth++
	defer func() { r.callDepth-- }()
	if r.callDepth > r.limits.callDepth {
		return &RenderError{Kind: "RecursionError", Msg: "maximum recursion depth exceeded"}
	}
	def := m.def
	scope := r.openScope(m.closure, def.undef)
	if len(args) > len(def.params) && !def.catchVarargs {
		return typeError("macro '%s' takes not more than %d argument(s)", def.name, len(def.params))
	}
	var varargs []value
	for i, a := range args {
		if i < len(def.params) {
			scope.set(def.params[i], a)
		} else {
			varargs = append(varargs, a)
		}
	}
	var extra *pyDict // **kwargs, for a macro that reads kwargs
	if def.catchKwargs {
		extra = newDict(0)
	}
	var caller value
	if kw != nil {
		for i, name := range kw.names {
			idx := indexOf(def.params, name)
			switch {
			case idx >= 0 && idx < len(args):
				return typeError("macro '%s' got multiple values for argument '%s'", def.name, name)
			case idx >= 0:
				scope.set(name, kw.vals[i])
			case name == "caller" && def.catchCaller:
				caller = kw.vals[i]
			case def.catchKwargs:
				extra.set(name, kw.vals[i])
			case name == "caller":
				return typeError("macro '%s' was invoked with two values for the special caller argument. This is most likely a bug.", def.name)
			default:
				return typeError("macro '%s' takes no keyword argument '%s'", def.name, name)
			}
		}
	}
	if err := r.bindDefaults(def, scope); err != nil {
		return err
	}
	if def.catchCaller {
		if caller == nil {
			caller = &undefinedValue{hint: "No caller defined", name: "caller"}
		}
		scope.set("caller", caller)
	}
	if def.catchVarargs {
		scope.set("varargs", &pyList{Items: varargs, Tuple: true})
	}
	if def.catchKwargs {
		scope.set("kwargs", extra)
	}
	if err := r.execBody(def.body, scope, w); err != nil {
		if err == errBreak || err == errContinue {
			return &RenderError{Kind: "TemplateSyntaxError", Msg: "loop control outside of a loop"}
		}
		return err
	}
	if !def.keepsScope {
		r.closeScope(scope)
	}
	return nil
}

// bindDefaults gives the macro's parameters that the call left unset
// their defaults, or an undefined value naming them.
func (r *renderer) bindDefaults(def *macroDef, scope *frame) error {
	firstDefault := len(def.params) - len(def.defaults)
	for i, p := range def.params {
		if _, ok := scope.lookupLocal(p); ok {
			continue
		}
		if i >= firstDefault {
			v, err := r.eval(def.defaults[i-firstDefault], scope)
			if err != nil {
				return err
			}
			scope.set(p, v)
		} else {
			scope.set(p, &undefinedValue{hint: "parameter '" + p + "' was not provided", name: p})
		}
	}
	return nil
}

func (f *frame) lookupLocal(name string) (value, bool) {
	for _, b := range f.vars {
		if b.name == name {
			return b.val, true
		}
	}
	return nil, false
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// kwargs are keyword arguments in call order.
type kwargs struct {
	names []string
	vals  []value
}

func (k *kwargs) get(name string) (value, bool) {
	if k == nil {
		return nil, false
	}
	for i, n := range k.names {
		if n == name {
			return k.vals[i], true
		}
	}
	return nil, false
}

// loopState is the "loop" variable inside for loops.
type loopState struct {
	items   []value
	index   int
	depth   int
	last    value // for loop.changed
	hasLast bool
	recurse func(value) (value, error)
}

func (l *loopState) attr(name string) (value, bool) {
	n := len(l.items)
	switch name {
	case "index":
		return int64(l.index + 1), true
	case "index0":
		return int64(l.index), true
	case "revindex":
		return int64(n - l.index), true
	case "revindex0":
		return int64(n - l.index - 1), true
	case "first":
		return l.index == 0, true
	case "last":
		return l.index == n-1, true
	case "length":
		return int64(n), true
	case "depth":
		return int64(l.depth + 1), true
	case "depth0":
		return int64(l.depth), true
	case "previtem":
		if l.index == 0 {
			return &undefinedValue{hint: "there is no previous item", name: "previtem"}, true
		}
		return l.items[l.index-1], true
	case "nextitem":
		if l.index >= n-1 {
			return &undefinedValue{hint: "there is no next item", name: "nextitem"}, true
		}
		return l.items[l.index+1], true
	case "cycle", "changed":
		return &boundMethod{recv: l, name: name}, true
	}
	return nil, false
}

// errTooLarge reports a computed value beyond the size limits.
func errTooLarge() error { return &RenderError{Kind: "MemoryError", Msg: "value too large"} }

func checkSize(v value) error {
	switch x := v.(type) {
	case string:
		if len(x) > maxStringLen {
			return errTooLarge()
		}
	case *pyList:
		if len(x.Items) > maxListLen {
			return errTooLarge()
		}
	}
	return nil
}
