package chattemplate

// jinja2 decides at compile time where each name lives. A name assigned in
// a scope (template, loop body, macro, block) refers to that scope's
// variable everywhere inside it, also in nested blocks that run before the
// assignment. When the scope assigns the name before reading it and no
// enclosing scope mentions it, the variable starts out undefined and hides
// a template argument of the same name:
//
//	{% for m in messages %}{{ x }}{% endfor %}{% set x = 1 %}
//
// prints nothing for x even when x was passed in. analyzeScopes finds these
// names so that the evaluator can start such scopes with them undefined.

// scopeInfo is the symbol table of one scope during analysis.
type scopeInfo struct {
	parent *scopeInfo
	refs   map[string]bool // names this scope has its own variable for
	stores map[string]bool // names assigned in this scope
	undef  map[string]bool // names whose variable starts out undefined
	// children are nested scopes, analysed once this scope is complete,
	// as jinja2 does.
	children []func()
}

func newScopeInfo(parent *scopeInfo) *scopeInfo {
	return &scopeInfo{parent: parent, refs: map[string]bool{}, stores: map[string]bool{}, undef: map[string]bool{}}
}

func (s *scopeInfo) copy() *scopeInfo {
	c := newScopeInfo(s.parent)
	for k := range s.refs {
		c.refs[k] = true
	}
	for k := range s.stores {
		c.stores[k] = true
	}
	for k := range s.undef {
		c.undef[k] = true
	}
	return c
}

func (s *scopeInfo) findRef(name string) bool {
	for ; s != nil; s = s.parent {
		if s.refs[name] {
			return true
		}
	}
	return false
}

func (s *scopeInfo) load(name string) {
	if !s.findRef(name) {
		s.refs[name] = true // resolved from the template arguments
	}
}

func (s *scopeInfo) store(name string) {
	s.stores[name] = true
	if s.refs[name] {
		return
	}
	if !s.parent.findRef(name) {
		s.undef[name] = true
	}
	s.refs[name] = true
}

// declare adds a name that is always bound on entry (parameters, loop
// targets).
func (s *scopeInfo) declare(name string) {
	s.refs[name] = true
	s.stores[name] = true
}

func (s *scopeInfo) names() []string {
	var out []string
	for n := range s.undef {
		out = append(out, n)
	}
	return out
}

// analyzeScopes fills in the names that start undefined for the template
// body and every nested scope.
func analyzeScopes(body []stmt) []string {
	root := newScopeInfo(nil)
	root.body(body)
	root.finish()
	return root.names()
}

// finish analyses nested scopes, breadth first.
func (s *scopeInfo) finish() {
	for len(s.children) > 0 {
		next := s.children[0]
		s.children = s.children[1:]
		next()
	}
}

// child queues the analysis of a nested scope; setup declares its bound
// names, and done receives the names that start undefined.
func (s *scopeInfo) child(setup func(*scopeInfo), body []stmt, done func([]string)) {
	s.children = append(s.children, func() {
		c := newScopeInfo(s)
		if setup != nil {
			setup(c)
		}
		c.body(body)
		c.finish()
		done(c.names())
	})
}

func (s *scopeInfo) body(body []stmt) {
	for _, st := range body {
		s.stmt(st)
	}
}

func (s *scopeInfo) target(tg assignTarget) {
	if tg.attr != "" {
		s.load(tg.names[0])
		return
	}
	for _, n := range tg.names {
		s.store(n)
	}
}

func (s *scopeInfo) stmt(st stmt) {
	switch x := st.(type) {
	case *outputStmt:
		s.expr(x.x)
	case *ifStmt:
		s.ifChain(x.conds, x.bodies, x.otherwise)
	case *autoescapeStmt:
		s.expr(x.x)
		s.body(x.body)
	case *forStmt:
		s.expr(x.iter)
		s.child(func(c *scopeInfo) {
			for _, n := range x.target.names {
				c.declare(n)
			}
			c.declare("loop")
			if x.filter != nil {
				c.expr(x.filter)
			}
		}, x.body, func(names []string) { x.undef = names })
		s.child(nil, x.otherwise, func(names []string) { x.elseUndef = names })
	case *setStmt:
		s.expr(x.x)
		s.target(x.target)
	case *setBlockStmt:
		s.target(x.target)
		s.child(func(c *scopeInfo) {
			for _, fl := range x.filters {
				c.args(fl.args)
			}
		}, x.body, func(names []string) { x.undef = names })
	case *macroStmt:
		s.store(x.def.name)
		s.macro(x.def)
	case *callBlockStmt:
		s.expr(x.call)
		s.macro(x.caller)
	case *filterBlockStmt:
		for _, fl := range x.filters {
			s.args(fl.args)
		}
		s.child(nil, x.body, func(names []string) { x.undef = names })
	case *withStmt:
		for _, v := range x.values {
			s.expr(v)
		}
		s.child(func(c *scopeInfo) {
			for _, tg := range x.targets {
				for _, n := range tg.names {
					c.declare(n)
				}
			}
		}, x.body, func(names []string) { x.undef = names })
	}
}

func (s *scopeInfo) macro(def *macroDef) {
	s.child(func(c *scopeInfo) {
		for _, p := range def.params {
			c.declare(p)
		}
		for _, n := range []string{"varargs", "kwargs", "caller"} {
			c.declare(n)
		}
		for _, d := range def.defaults {
			c.expr(d)
		}
	}, def.body, func(names []string) { def.undef = names })
}

// ifChain mirrors jinja2's branch_update: a name assigned in only some of
// the branches (body, elif chain, else) is looked up from outside until
// assigned, so it never starts undefined.
func (s *scopeInfo) ifChain(conds []expr, bodies [][]stmt, otherwise []stmt) {
	s.expr(conds[0])
	branch := func(visit func(*scopeInfo)) *scopeInfo {
		c := s.copy()
		c.children = nil
		visit(c)
		s.children = append(s.children, c.children...)
		return c
	}
	body := branch(func(c *scopeInfo) { c.body(bodies[0]) })
	elifs := branch(func(c *scopeInfo) {
		for i := 1; i < len(conds); i++ {
			c.ifChain(conds[i:i+1], bodies[i:i+1], nil)
		}
	})
	els := branch(func(c *scopeInfo) { c.body(otherwise) })
	branches := []*scopeInfo{body, elifs, els}
	newStores := map[string]int{}
	for _, b := range branches {
		for n := range b.stores {
			if !s.stores[n] {
				newStores[n]++
			}
		}
	}
	for _, b := range branches {
		for n := range b.refs {
			s.refs[n] = true
		}
		for n := range b.stores {
			s.stores[n] = true
		}
	}
	for n, count := range newStores {
		if count == len(branches) && els.undef[n] {
			s.undef[n] = true
		} else {
			delete(s.undef, n)
		}
	}
}

func (s *scopeInfo) args(a callArgs) { a.each(s.expr) }

func (s *scopeInfo) expr(e expr) {
	if x, ok := e.(*nameExpr); ok {
		s.load(x.name)
		return
	}
	eachOperand(e, s.expr)
}

// markKeptScopes sets keepsScope on every loop and macro in body. A loop
// iteration's or a macro call's scope is given back for the next one
// (renderer.closeScope) unless it may outlive its body: a macro defined in
// it, or a {% call %} block's caller, keeps it as its closure, and a
// recursive loop's loop() as the frame it runs in, all of which may be
// kept past the body (assigned to a namespace's attribute).
func markKeptScopes(body []stmt) {
	eachBody(body, func(s stmt) {
		switch x := s.(type) {
		case *forStmt:
			x.keepsScope = keepsScope(x.body)
		case *macroStmt:
			x.def.keepsScope = keepsScope(x.def.body)
		case *callBlockStmt:
			x.caller.keepsScope = keepsScope(x.caller.body)
		}
	})
}

// keepsScope tells whether body may keep the scope it runs in past its
// end (see markKeptScopes).
func keepsScope(body []stmt) bool {
	kept := false
	eachBody(body, func(s stmt) {
		switch x := s.(type) {
		case *macroStmt, *callBlockStmt:
			kept = true
		case *forStmt:
			kept = kept || x.recursive
		case *textStmt, *outputStmt, *ifStmt, *setStmt, *setBlockStmt, *filterBlockStmt, *withStmt,
			*autoescapeStmt, *loopControlStmt:
		default: // a statement this file does not know
			kept = true
		}
	})
	return kept
}

// eachBody calls visit on every statement of body and of the bodies nested
// in them, macros' and call blocks' included.
func eachBody(body []stmt, visit func(stmt)) {
	for _, s := range body {
		visit(s)
		switch x := s.(type) {
		case *ifStmt:
			for _, b := range x.bodies {
				eachBody(b, visit)
			}
			eachBody(x.otherwise, visit)
		case *forStmt:
			eachBody(x.body, visit)
			eachBody(x.otherwise, visit)
		case *setBlockStmt:
			eachBody(x.body, visit)
		case *macroStmt:
			eachBody(x.def.body, visit)
		case *callBlockStmt:
			eachBody(x.caller.body, visit)
		case *filterBlockStmt:
			eachBody(x.body, visit)
		case *withStmt:
			eachBody(x.body, visit)
		case *autoescapeStmt:
			eachBody(x.body, visit)
		}
	}
}
