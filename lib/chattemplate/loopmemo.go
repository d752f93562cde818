package chattemplate

import (
	"slices"
	"strings"
)

// Replaying loop iterations. generate --turns all renders a conversation
// whole at every turn, so a template's loop over the messages renders
// message i again at every turn after it: O(n^2) over the turns. When a
// render goes through a MessageCache, an iteration of a loop may instead
// write again the text it wrote in an earlier render, without running its
// body, provided that the body's text is a function of the things this
// file compares, so that running it again would write the same text:
//
//   - the body cannot see the other iterations: it does not read the loop
//     variable (loop.index, loop.last, loop.previtem, ...), break or
//     continue, or assign a namespace attribute (the one assignment that
//     outlives an iteration), defines no macro and has no call block, and
//     the loop is not recursive. This is decided once per loop, from the
//     syntax tree (analyzeMemo);
//   - the item is the same message: a dict decoded from JSON, which holds
//     JSON values only and never changes (no template can change what it is
//     given), at the same address (MessageCache hands a conversation's
//     unchanged messages to the next render as they were);
//   - every name the body reads (whether it is bound in the body or not,
//     but for those bound before it runs: the loop's target, a macro's
//     parameters, the names its scope starts undefined)
//     looks up to the same value outside the loop as when the text was
//     written: scalars and undefined values compared by value, JSON dicts
//     by address, builtins by identity, macros by their definition and,
//     recursively, the names their own bodies read where they were defined.
//     Nothing else is compared: a value of any other kind (a namespace, a
//     list, a joiner) disables replay for that loop's run, as does
//     strftime_now, whose value is the clock's. No frame outside the
//     iteration changes while the loop runs (a {% set %} in the body
//     assigns in the iteration's scope), so names are looked up once,
//     when the loop starts;
//   - the render is in the same state where it matters: autoescape and the
//     macro call depth as the loop starts (the recursion limit).
//
// A replayed iteration charges the steps, output and memory the first run
// charged; when that would pass a limit the body runs instead, and fails
// where the first run would have. Only iterations that succeeded are kept.

// memoPlan is what analyzeMemo finds out about a loop or macro body.
type memoPlan struct {
	// replayable: nothing in the body ties its text to other iterations
	// (for a loop body) or changes anything outside the call (for a
	// macro's).
	replayable bool
	// names are every name the body reads, bound in it or not (but for
	// those bound before it runs, see planBody), and
	// globals what each stands for where no scope binds it (a global
	// function, or nil: undefined), found once here rather than at every
	// run of the loop.
	names   []string
	globals []value
}

// analyzeMemo plans every loop and macro in body.
func analyzeMemo(body []stmt) {
	for _, s := range body {
		switch x := s.(type) {
		case *ifStmt:
			for _, b := range x.bodies {
				analyzeMemo(b)
			}
			analyzeMemo(x.otherwise)
		case *forStmt:
			var bound []string
			if x.target.attr == "" {
				bound = x.target.names
			}
			x.plan = planBody(x.body, true, bound, x.undef)
			x.plan.replayable = x.plan.replayable && !x.recursive
			analyzeMemo(x.body)
			analyzeMemo(x.otherwise)
		case *setBlockStmt:
			analyzeMemo(x.body)
		case *macroStmt:
			planMacro(x.def)
		case *callBlockStmt:
			planMacro(x.caller)
		case *filterBlockStmt:
			analyzeMemo(x.body)
		case *withStmt:
			analyzeMemo(x.body)
		case *autoescapeStmt:
			analyzeMemo(x.body)
		}
	}
}

func planMacro(def *macroDef) {
	def.plan = planBody(def.body, false, def.params, def.undef)
	// A default is evaluated before the parameters after it are bound:
	// there, they may look up outside.
	w := planWalker{plan: &def.plan, seen: map[string]bool{}}
	for _, n := range def.plan.names {
		w.seen[n] = true
	}
	for _, d := range def.defaults {
		w.expr(d, 0)
	}
	analyzeMemo(def.body)
}

// planBody plans a loop body (loop) or a macro body. The names in bound
// and undef are bound in the body's scope before it runs (the loop's
// target or the macro's parameters, and the names the scope starts
// undefined, see scope.go): reading them never looks up outside the body,
// so they are not among its names.
func planBody(body []stmt, loop bool, bound, undef []string) memoPlan {
	plan := memoPlan{replayable: true}
	w := planWalker{plan: &plan, loop: loop, seen: map[string]bool{}}
	for _, n := range bound {
		w.seen[n] = true
	}
	for _, n := range undef {
		w.seen[n] = true
	}
	w.stmts(body, 0)
	return plan
}

// planWalker collects a body's names; depth counts the for loops nested in
// the body around the node, in which loop, break and continue are theirs.
type planWalker struct {
	plan *memoPlan
	loop bool
	seen map[string]bool
}

func (w *planWalker) stmts(body []stmt, depth int) {
	for _, s := range body {
		w.stmt(s, depth)
	}
}

func (w *planWalker) stmt(s stmt, depth int) {
	switch x := s.(type) {
	case *outputStmt:
		w.expr(x.x, depth)
	case *ifStmt:
		for i, c := range x.conds {
			w.expr(c, depth)
			w.stmts(x.bodies[i], depth)
		}
		w.stmts(x.otherwise, depth)
	case *forStmt:
		// The if clause and the else block do not see the nested loop's
		// variable: there, loop is this body's.
		w.expr(x.iter, depth)
		if x.filter != nil {
			w.expr(x.filter, depth)
		}
		w.stmts(x.body, depth+1)
		w.stmts(x.otherwise, depth)
	case *setStmt:
		w.target(x.target)
		w.expr(x.x, depth)
	case *setBlockStmt:
		w.target(x.target)
		w.filters(x.filters, depth)
		w.stmts(x.body, depth)
	case *filterBlockStmt:
		w.filters(x.filters, depth)
		w.stmts(x.body, depth)
	case *withStmt:
		for _, v := range x.values {
			w.expr(v, depth)
		}
		w.stmts(x.body, depth)
	case *autoescapeStmt:
		w.expr(x.x, depth)
		w.stmts(x.body, depth)
	case *loopControlStmt:
		if depth == 0 && w.loop {
			w.plan.replayable = false
		}
	case *textStmt:
	default: // a macro, a call block, or a statement this file does not know
		w.plan.replayable = false
	}
}

// target refuses namespace attribute assignments, whose effect outlives
// the iteration or call.
func (w *planWalker) target(tg assignTarget) {
	if tg.attr != "" {
		w.plan.replayable = false
	}
	for _, sub := range tg.items {
		w.target(sub)
	}
}

func (w *planWalker) filters(fls []*filterExpr, depth int) {
	for _, fl := range fls {
		w.args(fl.args, depth)
	}
}

func (w *planWalker) args(a callArgs, depth int) {
	a.each(func(e expr) { w.expr(e, depth) })
}

func (w *planWalker) name(name string, depth int) {
	if name == "loop" && depth == 0 && w.loop {
		w.plan.replayable = false
	}
	if !w.seen[name] {
		w.seen[name] = true
		w.plan.names = append(w.plan.names, name)
		w.plan.globals = append(w.plan.globals, globals[name])
	}
}

func (w *planWalker) expr(e expr, depth int) {
	if x, ok := e.(*nameExpr); ok {
		w.name(x.name, depth)
	}
	if !eachOperand(e, func(e expr) { w.expr(e, depth) }) {
		w.plan.replayable = false // an expression this file does not know
	}
}

// loopMemo is what one loop wrote for each message, kept by a
// MessageCache from one render to the next.
type loopMemo struct {
	deps  []value // what the body's names looked up to (depsWalker)
	iters map[*pyDict]*iterMemo
	// epoch counts the times deps changed and iters were cleared: a run
	// of the loop that began before (a run nested in its own body, through
	// a macro) neither replays nor records from then on.
	epoch int
	// written is how many of iters render gen wrote: when it wrote them
	// all, MessageCache.prune has nothing to forget.
	written, gen int
}

// wrote marks e written by render gen.
func (m *loopMemo) wrote(e *iterMemo, gen int) {
	if m.gen != gen {
		m.gen, m.written = gen, 0
	}
	if e.gen != gen {
		e.gen = gen
		m.written++
	}
}

// iterMemo is the text of one iteration and what it charged.
type iterMemo struct {
	text                 string
	at                   int // where it begins in the text of render gen, -1: not in the text (textWriter.place)
	steps, output, alloc int
	calledMacro          bool
	gen                  int // the last render that wrote it
}

// loopRun is one run of a loop through its memo; the zero value neither
// replays nor records.
type loopRun struct {
	m     *loopMemo
	epoch int
}

// Markers in a list of dependencies.
type (
	undefinedDep struct{}        // a name that is not defined: resolve's undefined value
	expandedDep  struct{}        // a macro met first: its names' values follow
	seenDep      struct{ i int } // a macro met before: the i-th expanded
)

// loopMemo starts a run of the loop s in f.
func (r *renderer) loopMemo(s *forStmt, f *frame) loopRun {
	c := r.cache
	if c == nil || !s.plan.replayable {
		return loopRun{}
	}
	// The dependencies are compared with the memo's as they are looked
	// up, and only written out from where they part: most runs find the
	// memo's, and write nothing.
	m := c.loops[s]
	d := depsWalker{seen: c.seen[:0], out: c.deps[:0]}
	if m != nil {
		d.old = m.deps
	}
	d.add(r.callDepth)
	d.add(r.autoescape)
	ok := d.names(&s.plan, f)
	c.seen = d.seen
	if d.parted || !ok {
		c.deps = d.out // the room, kept for the next loop that parts
	}
	if !ok {
		return loopRun{}
	}
	if m == nil {
		if c.loops == nil {
			c.loops = map[*forStmt]*loopMemo{}
		}
		m = &loopMemo{iters: map[*pyDict]*iterMemo{}}
		c.loops[s] = m
	}
	if d.changed() {
		m.deps = append(m.deps[:0], d.out...)
		clear(m.iters)
		m.written = 0
		m.epoch++
	}
	return loopRun{m, m.epoch}
}

// depsWalker lists what a loop body's names look up to (see the top of
// this file) and compares the list with old, the list of the memo, as it
// goes: while the two agree it only counts (at), and once they part it
// writes the list out (out, old's first at values then the rest).
type depsWalker struct {
	old    []value
	at     int
	parted bool
	out    []value
	seen   []*macroValue // the macros met, for seenDep
}

func (d *depsWalker) add(v value) {
	if !d.parted && d.at < len(d.old) && d.old[d.at] == v {
		d.at++
		return
	}
	d.part()
	d.out = append(d.out, v)
}

// changed tells whether the list differs from old; if so, out holds it
// whole.
func (d *depsWalker) changed() bool {
	if !d.parted && d.at == len(d.old) {
		return false
	}
	d.part()
	return true
}

// part starts writing the list out, if it has not yet.
func (d *depsWalker) part() {
	if !d.parted {
		d.parted = true
		d.out = append(d.out, d.old[:d.at]...)
	}
}

// names adds what the names of plan look up to in f, and tells whether
// each is of a kind compared here (see the top of this file).
func (d *depsWalker) names(plan *memoPlan, f *frame) bool {
	for i, n := range plan.names {
		// resolveDefined, with the global found when planned
		v, defined := plan.globals[i], plan.globals[i] != nil
		if b := f.find(n); b != nil {
			v, defined = b.val, b.val != missing
		}
		if !defined {
			d.add(undefinedDep{})
			continue
		}
		switch x := v.(type) {
		case nil, bool, int64, float64, string, bigInt:
			d.add(x)
		case *undefinedValue:
			d.add(*x)
		case *pyDict:
			if !x.json {
				return false
			}
			d.add(x)
		case *builtinFunc:
			// The globals themselves: a joiner is a builtinFunc with
			// state, and strftime_now reads the clock.
			if globals[x.name] != x || x.name == "strftime_now" {
				return false
			}
			d.add(x)
		case *macroValue:
			d.add(x.def)
			if i := slices.Index(d.seen, x); i >= 0 {
				d.add(seenDep{i})
				continue
			}
			if !x.def.plan.replayable {
				return false
			}
			d.seen = append(d.seen, x)
			d.add(expandedDep{})
			if !d.names(&x.def.plan, x.closure) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func (run loopRun) live() bool { return run.m != nil && run.m.epoch == run.epoch }

// replay writes what the iteration over item wrote before, if it can.
func (run loopRun) replay(r *renderer, item value, w *textWriter) bool {
	d, ok := item.(*pyDict)
	if !ok || !d.json || !run.live() {
		return false
	}
	e := run.m.iters[d]
	if e == nil {
		return false
	}
	l := r.limits
	if r.steps+e.steps > l.steps || r.outLen+e.output > l.output || r.allocated+e.alloc > l.alloc {
		return false // the body runs, and fails where it would
	}
	r.steps += e.steps
	r.outLen += e.output
	r.allocated += e.alloc
	r.calledMacro = e.calledMacro
	c := r.cache
	// The text the last render wrote here lies in the writer's array
	// already when that render wrote this iteration at this place.
	if at := w.place(); at >= 0 && at == e.at && e.gen == c.textGen && w.skip(e.text) {
		c.skipped++
	} else {
		w.WriteString(e.text)
		e.at = at
	}
	run.m.wrote(e, c.gen)
	r.cache.Replayed++
	return true
}

// iterMark is the render's state as an iteration starts.
type iterMark struct{ steps, output, alloc, text, place int }

func (r *renderer) mark(w *textWriter) iterMark {
	return iterMark{r.steps, r.outLen, r.allocated, w.Len(), w.place()}
}

// record keeps what the iteration over item, begun at at, wrote.
func (run loopRun) record(r *renderer, item value, at iterMark, w *textWriter) {
	d, ok := item.(*pyDict)
	if !ok || !d.json || !run.live() {
		return
	}
	e := &iterMemo{
		text:  strings.Clone(w.String()[at.text:]), // not the builder's buffer, which holds the whole render
		steps: r.steps - at.steps, output: r.outLen - at.output, alloc: r.allocated - at.alloc,
		calledMacro: r.calledMacro,
		at:          at.place,
	}
	if old := run.m.iters[d]; old != nil && old.gen == r.cache.gen {
		e.gen = old.gen // counted as written already
	}
	run.m.iters[d] = e
	run.m.wrote(e, r.cache.gen)
}
