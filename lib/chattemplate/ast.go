package chattemplate

// The syntax tree. Expressions and statements are separate interfaces so the
// parser cannot mix them up; the evaluator dispatches with type switches.

type expr interface{ exprLine() int }

type stmt interface{ stmtLine() int }

type pos struct{ line int }

func (p pos) exprLine() int { return p.line }
func (p pos) stmtLine() int { return p.line }

// Expressions.
type (
	constExpr struct {
		pos
		val value
	}
	nameExpr struct {
		pos
		name string
	}
	listExpr struct {
		pos
		items []expr
		tuple bool
	}
	dictExpr struct {
		pos
		keys, vals []expr
	}
	attrExpr struct {
		pos
		obj  expr
		name string
	}
	itemExpr struct {
		pos
		obj, key expr
	}
	sliceExpr struct {
		pos
		obj               expr
		start, stop, step expr // nil when omitted
	}
	callExpr struct {
		pos
		fn   expr
		args callArgs
	}
	filterExpr struct {
		pos
		arg  expr // nil inside {% filter %} blocks, where the body is the argument
		name string
		args callArgs
	}
	testExpr struct {
		pos
		arg    expr
		name   string
		args   callArgs
		negate bool
	}
	unaryExpr struct {
		pos
		op string // "-", "+", "not"
		x  expr
	}
	binaryExpr struct {
		pos
		op   string // arithmetic, "~", "and", "or"
		l, r expr
	}
	compareExpr struct {
		pos
		first expr
		ops   []string // "==", "!=", "<", "<=", ">", ">=", "in", "notin"
		rest  []expr
	}
	condExpr struct {
		pos
		cond, then, otherwise expr // otherwise may be nil (yields undefined)
	}
)

// callArgs are positional and keyword arguments of a call, filter or test.
type callArgs struct {
	pos    []expr
	names  []string
	kwargs []expr
	// dynArgs and dynKwargs are *iterable and **mapping, or nil.
	dynArgs, dynKwargs expr
}

// none tells whether there are no arguments at all.
func (a callArgs) none() bool {
	return len(a.pos) == 0 && len(a.kwargs) == 0 && a.dynArgs == nil && a.dynKwargs == nil
}

// each calls visit with each argument expression, in order.
func (a callArgs) each(visit func(expr)) {
	for _, e := range a.pos {
		visit(e)
	}
	for _, e := range a.kwargs {
		visit(e)
	}
	if a.dynArgs != nil {
		visit(a.dynArgs)
	}
	if a.dynKwargs != nil {
		visit(a.dynKwargs)
	}
}

// eachOperand calls visit with each expression x is made of, in order, and
// reports whether it knows x's kind (names and constants have none).
func eachOperand(x expr, visit func(expr)) bool {
	switch x := x.(type) {
	case *nameExpr, *constExpr:
	case *listExpr:
		for _, it := range x.items {
			visit(it)
		}
	case *dictExpr:
		for i := range x.keys {
			visit(x.keys[i])
			visit(x.vals[i])
		}
	case *attrExpr:
		visit(x.obj)
	case *itemExpr:
		visit(x.obj)
		visit(x.key)
	case *sliceExpr:
		for _, b := range []expr{x.obj, x.start, x.stop, x.step} {
			if b != nil {
				visit(b)
			}
		}
	case *callExpr:
		visit(x.fn)
		x.args.each(visit)
	case *filterExpr:
		if x.arg != nil {
			visit(x.arg)
		}
		x.args.each(visit)
	case *testExpr:
		visit(x.arg)
		x.args.each(visit)
	case *unaryExpr:
		visit(x.x)
	case *binaryExpr:
		visit(x.l)
		visit(x.r)
	case *compareExpr:
		visit(x.first)
		for _, r := range x.rest {
			visit(r)
		}
	case *condExpr:
		visit(x.cond)
		visit(x.then)
		if x.otherwise != nil {
			visit(x.otherwise)
		}
	default:
		return false
	}
	return true
}

// Statements.
type (
	textStmt struct {
		pos
		text string
	}
	outputStmt struct {
		pos
		x expr
	}
	ifStmt struct {
		pos
		conds     []expr
		bodies    [][]stmt
		otherwise []stmt
	}
	forStmt struct {
		pos
		undef     []string // names that start undefined in the loop body (see scope.go)
		elseUndef []string // the same for the else block, which has its own scope
		target    assignTarget
		iter      expr
		filter    expr // the "if" clause, or nil
		body      []stmt
		otherwise []stmt
		recursive bool
		plan      memoPlan // whether and how an iteration may be replayed (loopmemo.go)
		// keepsScope: the body may keep an iteration's scope past its end
		// (keepsScope in scope.go); otherwise the scope is reused.
		keepsScope bool
	}
	setStmt struct {
		pos
		target assignTarget
		x      expr
	}
	setBlockStmt struct {
		pos
		undef   []string
		target  assignTarget
		filters []*filterExpr
		body    []stmt
	}
	macroStmt struct {
		pos
		def *macroDef
	}
	callBlockStmt struct {
		pos
		call   *callExpr
		caller *macroDef
	}
	filterBlockStmt struct {
		pos
		undef   []string
		filters []*filterExpr
		body    []stmt
	}
	withStmt struct {
		pos
		undef   []string
		targets []assignTarget
		values  []expr
		body    []stmt
	}
	// autoescapeStmt is {% autoescape x %}: the body prints with HTML
	// escaping while x is true. It opens no scope.
	autoescapeStmt struct {
		pos
		x    expr
		body []stmt
	}
	loopControlStmt struct {
		pos
		isBreak bool
	}
)

// assignTarget is the left side of set/for/with: a name, an unpacking
// tuple of targets (which may be tuples again), or a namespace attribute
// (ns.attr).
type assignTarget struct {
	names []string // the one name, or every name a tuple binds
	tuple bool
	items []assignTarget // a tuple's targets
	attr  string         // when set, names[0] is the namespace and attr its attribute
}

type macroDef struct {
	name     string
	params   []string
	defaults []expr // aligned with the last len(defaults) params
	body     []stmt
	line     int
	// The body mentions varargs, kwargs or caller: jinja2 then accepts
	// extra positional arguments, extra keyword arguments or a caller.
	catchVarargs, catchKwargs, catchCaller bool
	anonymous                              bool     // a {% call %} block's caller: its name is None
	undef                                  []string // names that start undefined in the body
	plan                                   memoPlan // what a replayed loop compares of it (loopmemo.go)
	keepsScope                             bool     // the body may keep a call's scope past its end (scope.go)
}
