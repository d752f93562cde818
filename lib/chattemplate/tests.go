package chattemplate

import "maps"

// testFunc implements one jinja2 test ("x is name(args)").
type testFunc func(r *renderer, v value, args []value) (bool, error)

var tests map[string]testFunc

// testParams names the one argument a test takes besides the value; tests
// not listed take none. jinja2 calls tests as Python functions, so
// arguments beyond these are a TypeError.
var testParams = map[string]string{
	"divisibleby": "num", "sameas": "other", "in": "seq",
	"==": "b", "eq": "b", "equalto": "b", "!=": "b", "ne": "b", "<": "b", "lt": "b", "lessthan": "b",
	"<=": "b", "le": "b", ">": "b", "gt": "b", "greaterthan": "b", ">=": "b", "ge": "b",
}

func init() {
	tests = typeTests()
	maps.Copy(tests, argumentTests())
	compareTest := func(op string) testFunc {
		return func(r *renderer, v value, args []value) (bool, error) {
			if len(args) == 0 {
				return false, typeError("test needs an argument")
			}
			return compare(op, v, args[0])
		}
	}
	for _, names := range [][]string{{"==", "eq", "equalto"}, {"!=", "ne"}, {"<", "lt", "lessthan"},
		{"<=", "le"}, {">", "gt", "greaterthan"}, {">=", "ge"}} {
		for _, n := range names {
			tests[n] = compareTest(names[0])
		}
	}
}

// typeTest is a test that looks at the value alone.
func typeTest(pred func(value) bool) testFunc {
	return func(r *renderer, v value, args []value) (bool, error) { return pred(v), nil }
}

// typeTests are the tests of what a value is.
func typeTests() map[string]testFunc {
	return map[string]testFunc{
		"defined":   typeTest(func(v value) bool { _, u := v.(*undefinedValue); return !u }),
		"undefined": typeTest(func(v value) bool { _, u := v.(*undefinedValue); return u }),
		"none":      typeTest(func(v value) bool { return v == nil }),
		"boolean":   typeTest(func(v value) bool { _, ok := v.(bool); return ok }),
		"true":      typeTest(func(v value) bool { b, ok := v.(bool); return ok && b }),
		"false":     typeTest(func(v value) bool { b, ok := v.(bool); return ok && !b }),
		"integer": typeTest(func(v value) bool {
			switch v.(type) {
			case int64, bigInt:
				return true
			}
			return false
		}),
		"float": typeTest(func(v value) bool { _, ok := v.(float64); return ok }),
		"number": typeTest(func(v value) bool {
			_, _, _, ok := toNumber(v)
			return ok
		}),
		"string":  typeTest(func(v value) bool { _, ok := v.(string); return ok }),
		"mapping": typeTest(func(v value) bool { _, ok := v.(*pyDict); return ok }),
		"iterable": typeTest(func(v value) bool {
			switch v.(type) {
			case string, *pyList, *pyDict, *undefinedValue, rangeValue, *iterValue, *loopState:
				return true
			}
			return false
		}),
		"sequence": typeTest(func(v value) bool {
			switch x := v.(type) {
			case *pyList:
				return x.view == ""
			case string, *pyDict, *undefinedValue, rangeValue:
				return true
			}
			return false
		}),
		"callable": typeTest(func(v value) bool {
			switch v.(type) {
			case *macroValue, *builtinFunc, *boundMethod:
				return true
			}
			return false
		}),
		"escaped": typeTest(func(v value) bool { return false }),
		"lower":   typeTest(func(v value) bool { return hasOnlyCase(pyStr(v), false) }),
		"upper":   typeTest(func(v value) bool { return hasOnlyCase(pyStr(v), true) }),
		"filter":  typeTest(func(v value) bool { s, ok := v.(string); return ok && filters[s] != nil }),
		"test":    typeTest(func(v value) bool { s, ok := v.(string); return ok && tests[s] != nil }),
	}
}

// argumentTests are the tests of a value against a number or another
// value.
func argumentTests() map[string]testFunc {
	return map[string]testFunc{
		"even": func(r *renderer, v value, args []value) (bool, error) {
			m, err := arith("%", v, int64(2))
			return err == nil && pyEqual(m, int64(0)), err
		},
		"odd": func(r *renderer, v value, args []value) (bool, error) {
			m, err := arith("%", v, int64(2))
			return err == nil && pyEqual(m, int64(1)), err
		},
		"divisibleby": func(r *renderer, v value, args []value) (bool, error) {
			if len(args) == 0 {
				return false, typeError("divisibleby needs an argument")
			}
			m, err := arith("%", v, args[0])
			return err == nil && pyEqual(m, int64(0)), err
		},
		"sameas": func(r *renderer, v value, args []value) (bool, error) {
			if len(args) == 0 {
				return false, typeError("sameas needs an argument")
			}
			switch v.(type) {
			case nil, bool:
				return v == args[0], nil
			case int64, float64, string:
				return pyEqual(v, args[0]) && typeName(v) == typeName(args[0]), nil
			}
			return v == args[0], nil
		},
		"in": func(r *renderer, v value, args []value) (bool, error) {
			if len(args) == 0 {
				return false, typeError("in needs an argument")
			}
			return contains(args[0], v)
		},
	}
}

func (r *renderer) evalTest(x *testExpr, f *frame) (value, error) {
	if n, ok := x.arg.(*nameExpr); ok && (x.name == "defined" || x.name == "undefined") && x.args.none() {
		// "name is defined", the common case, without the undefined
		// value eval would make for a name that is not.
		v, defined := resolveDefined(f, n.name)
		if _, u := v.(*undefinedValue); u {
			defined = false // bound to an undefined value
		}
		return defined == (x.name == "defined") != x.negate, nil
	}
	v, err := r.eval(x.arg, f)
	if err != nil {
		return nil, err
	}
	test, ok := tests[x.name]
	if !ok {
		return nil, &RenderError{Kind: "TemplateAssertionError", Msg: "No test named '" + x.name + "'."}
	}
	args, kw, err := r.evalArgs(x.args, f, false)
	if err != nil {
		return nil, err
	}
	// "x is defined" and the like, the common case, have nothing to check;
	// tests that need an argument report its absence themselves.
	if len(args) > 0 || kw != nil {
		if args, err = bindTestArgs(x.name, args, kw); err != nil {
			return nil, err
		}
	}
	ok, err = test(r, v, args)
	if err != nil {
		return nil, err
	}
	return ok != x.negate, nil
}

// bindTestArgs checks a test's arguments against its signature and returns
// them as positional arguments.
func bindTestArgs(name string, args []value, kw *kwargs) ([]value, error) {
	param, hasParam := testParams[name]
	want := 1
	if hasParam {
		want = 2
	}
	if len(args)+1 > want {
		return nil, typeError("test_%s() takes %d positional argument%s but %d were given", name, want, plural(want), len(args)+1)
	}
	if kw != nil {
		for i, n := range kw.names {
			if !hasParam || n != param {
				return nil, typeError("test_%s() got an unexpected keyword argument '%s'", name, n)
			}
			if len(args) > 0 {
				return nil, typeError("test_%s() got multiple values for argument '%s'", name, n)
			}
			args = []value{kw.vals[i]}
		}
	}
	if hasParam && len(args) == 0 {
		return nil, typeError("test_%s() missing 1 required positional argument: '%s'", name, param)
	}
	return args, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
