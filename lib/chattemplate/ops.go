package chattemplate

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func itoa(n int) string { return strconv.Itoa(n) }

// toNumber converts bool/int/float operands the way Python's numeric tower
// does; ok is false for non-numbers.
func toNumber(v value) (i int64, f float64, isFloat, ok bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, 1, false, true
		}
		return 0, 0, false, true
	case int64:
		return x, float64(x), false, true
	case float64:
		return 0, x, true, true
	case bigInt:
		return 0, x.f, true, true
	}
	return 0, 0, false, false
}

func unsupported(op string, l, r value) error {
	if op == "**" {
		op = "** or pow()"
	}
	return typeError("unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(l), typeName(r))
}

func isSequence(v value) bool {
	switch x := v.(type) {
	case string:
		return true
	case *pyList:
		return x.view == ""
	}
	return false
}

// arith implements Python's binary arithmetic operators.
func arith(op string, l, r value) (value, error) {
	if u, ok := l.(*undefinedValue); ok {
		return nil, u.fail()
	}
	if u, ok := r.(*undefinedValue); ok {
		// The left operand's method runs first: str % x formats (Undefined
		// counts as a mapping there) and list + x rejects non-lists itself.
		switch lv := l.(type) {
		case string:
			if op == "%" {
				return percentFormat(lv, r)
			}
		case *pyList:
			if op == "+" {
				return nil, typeError("can only concatenate %s (not \"Undefined\") to %s", typeName(l), typeName(l))
			}
		}
		return nil, u.fail()
	}
	li, lf, lFloat, lNum := toNumber(l)
	ri, rf, rFloat, rNum := toNumber(r)
	if lNum && rNum {
		_, lBig := l.(bigInt)
		_, rBig := r.(bigInt)
		if lBig || rBig {
			return mixedBigArith(op, l, r)
		}
		if lFloat || rFloat {
			return floatArith(op, lf, rf)
		}
		if op == "/" {
			if ri == 0 {
				return nil, &RenderError{Kind: "ZeroDivisionError", Msg: "division by zero"}
			}
			return float64(li) / float64(ri), nil
		}
		return intArith(op, li, ri)
	}
	switch op {
	case "+":
		if v, ok, err := concat(l, r); ok {
			return v, err
		}
	case "*":
		if lNum && !lFloat && isSequence(r) {
			return repeat(r, li)
		}
		if rNum && !rFloat && isSequence(l) {
			return repeat(l, ri)
		}
		if isSequence(l) {
			return nil, typeError("can't multiply sequence by non-int of type '%s'", typeName(r))
		}
		if isSequence(r) {
			return nil, typeError("can't multiply sequence by non-int of type '%s'", typeName(l))
		}
	case "%":
		if s, ok := l.(string); ok {
			return percentFormat(s, r)
		}
	}
	return nil, unsupported(op, l, r)
}

// concat is + on strings, lists and tuples; ok is false when neither
// operand is a sequence + applies to, and the caller reports the operand types.
func concat(l, r value) (value, bool, error) {
	switch x := l.(type) {
	case string:
		if y, ok := r.(string); ok {
			if len(x)+len(y) > maxStringLen {
				return nil, true, errTooLarge()
			}
			return x + y, true, nil
		}
		return nil, true, typeError("can only concatenate str (not \"%s\") to str", typeName(r))
	case *pyList:
		if x.view != "" {
			break
		}
		if y, ok := r.(*pyList); ok && y.Tuple == x.Tuple && y.view == "" {
			if len(x.Items)+len(y.Items) > maxListLen {
				return nil, true, errTooLarge()
			}
			items := make([]value, 0, len(x.Items)+len(y.Items))
			items = append(append(items, x.Items...), y.Items...)
			return &pyList{Items: items, Tuple: x.Tuple}, true, nil
		}
		if x.Tuple {
			return nil, true, typeError("can only concatenate tuple (not \"%s\") to tuple", typeName(r))
		}
		return nil, true, typeError("can only concatenate list (not \"%s\") to list", typeName(r))
	}
	return nil, false, nil
}

// repeat is sequence * int.
func repeat(seq value, n int64) (value, error) {
	if n < 0 {
		n = 0
	}
	switch x := seq.(type) {
	case string:
		if n > 0 && int64(len(x)) > maxStringLen/n {
			return nil, errTooLarge()
		}
		return strings.Repeat(x, int(n)), nil
	case *pyList:
		if n > 0 && int64(len(x.Items)) > maxListLen/n {
			return nil, errTooLarge()
		}
		items := make([]value, 0, len(x.Items)*int(n))
		for i := int64(0); i < n; i++ {
			items = append(items, x.Items...)
		}
		return &pyList{Items: items, Tuple: x.Tuple}, nil
	}
	return nil, typeError("can't multiply sequence by non-int of type '%s'", typeName(seq))
}

func floatArith(op string, a, b float64) (value, error) {
	switch op {
	case "+":
		return a + b, nil
	case "-":
		return a - b, nil
	case "*":
		return a * b, nil
	case "/":
		if b == 0 {
			return nil, &RenderError{Kind: "ZeroDivisionError", Msg: "float division by zero"}
		}
		return a / b, nil
	case "//":
		if b == 0 {
			return nil, &RenderError{Kind: "ZeroDivisionError", Msg: "float floor division by zero"}
		}
		return math.Floor(a / b), nil
	case "%":
		if b == 0 {
			return nil, &RenderError{Kind: "ZeroDivisionError", Msg: "float modulo"}
		}
		m := math.Mod(a, b)
		if m != 0 && (m < 0) != (b < 0) {
			m += b
		}
		return m, nil
	case "**":
		return floatPow(a, b)
	}
	return nil, typeError("unsupported operator %s", op)
}

// floatPow is Python's float.__pow__. Integral exponents are computed
// exactly and rounded once, as C's pow does, where math.Pow can be an ulp
// off.
func floatPow(a, b float64) (value, error) {
	if a == 0 && b < 0 {
		return nil, &RenderError{Kind: "ZeroDivisionError", Msg: "0.0 cannot be raised to a negative power"}
	}
	if b != math.Trunc(b) || math.Abs(b) > 64 || a == 0 || math.IsInf(a, 0) || math.IsNaN(a) {
		if a < 0 && b != math.Trunc(b) {
			return nil, valueError("negative number raised to a fractional power gives a complex number, which is not supported")
		}
		return math.Pow(a, b), nil
	}
	n := int64(math.Abs(b))
	base := new(big.Float).SetPrec(4096).SetFloat64(a)
	result := new(big.Float).SetPrec(4096).SetFloat64(1)
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			result.Mul(result, base)
		}
		base.Mul(base, base)
	}
	if b < 0 {
		result.Quo(new(big.Float).SetPrec(4096).SetFloat64(1), result)
	}
	f, _ := result.Float64()
	return f, nil
}

// mixedBigArith handles arithmetic where an operand is a bigInt: with a
// float the int converts to float first, as in Python.
func mixedBigArith(op string, l, r value) (value, error) {
	lb, lInt := toBig(l)
	rb, rInt := toBig(r)
	if lInt && rInt {
		return bigArith(op, lb, rb)
	}
	lf, rf := l, r
	for _, p := range []*value{&lf, &rf} {
		if b, ok := (*p).(bigInt); ok {
			f, err := bigToFloat(b)
			if err != nil {
				return nil, err
			}
			*p = f
		}
	}
	_, x, _, _ := toNumber(lf)
	_, y, _, _ := toNumber(rf)
	return floatArith(op, x, y)
}

// intArith is int64 arithmetic; results that overflow go to bigArith.
func intArith(op string, a, b int64) (value, error) {
	switch op {
	case "+":
		if s := a + b; (s > a) == (b > 0) {
			return s, nil
		}
		return bigArith(op, big.NewInt(a), big.NewInt(b))
	case "-":
		if s := a - b; (s < a) == (b > 0) {
			return s, nil
		}
		return bigArith(op, big.NewInt(a), big.NewInt(b))
	case "*":
		if a == 0 || b == 0 {
			return int64(0), nil
		}
		if p := a * b; p/b == a && !(a == -1 && b == math.MinInt64) && !(b == -1 && a == math.MinInt64) {
			return p, nil
		}
		return bigArith(op, big.NewInt(a), big.NewInt(b))
	case "//":
		if b == 0 {
			return nil, &RenderError{Kind: "ZeroDivisionError", Msg: "integer division or modulo by zero"}
		}
		if a == math.MinInt64 && b == -1 {
			return bigArith(op, big.NewInt(a), big.NewInt(b))
		}
		q := a / b
		if (a%b != 0) && ((a < 0) != (b < 0)) {
			q--
		}
		return q, nil
	case "%":
		if b == 0 {
			return nil, &RenderError{Kind: "ZeroDivisionError", Msg: "integer modulo by zero"}
		}
		m := a % b
		if m != 0 && (m < 0) != (b < 0) {
			m += b
		}
		return m, nil
	case "**":
		if b < 0 {
			return floatPow(float64(a), float64(b))
		}
		result := int64(1)
		for i := int64(0); i < b; i++ {
			next := result * a
			if a != 0 && (next/a != result || a == -1 && result == math.MinInt64) {
				return bigArith(op, big.NewInt(a), big.NewInt(b))
			}
			result = next
			if result == 0 || result == 1 && a == 1 {
				break
			}
		}
		return result, nil
	}
	return nil, typeError("unsupported operator %s", op)
}

func negate(v value) (value, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return int64(-1), nil
		}
		return int64(0), nil
	case int64:
		if x == math.MinInt64 {
			return newBigInt(new(big.Int).Neg(big.NewInt(x)))
		}
		return -x, nil
	case float64:
		return -x, nil
	case bigInt:
		return normBig(new(big.Int).Neg(x.big()))
	case *undefinedValue:
		return nil, x.fail()
	}
	return nil, typeError("bad operand type for unary -: '%s'", typeName(v))
}

func positive(v value) (value, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return int64(1), nil
		}
		return int64(0), nil
	case int64, float64, bigInt:
		return x, nil
	case *undefinedValue:
		return nil, x.fail()
	}
	return nil, typeError("bad operand type for unary +: '%s'", typeName(v))
}

// pyEqual is Python's ==, including 1 == 1.0 == True and jinja2's rule
// that Undefined equals only Undefined.
func pyEqual(a, b value) bool {
	ai, af, aFloat, aNum := toNumber(a)
	bi, bf, bFloat, bNum := toNumber(b)
	if aNum && bNum {
		if c, ok := compareBig(a, b); ok {
			return c == 0
		}
		if aFloat || bFloat {
			return af == bf
		}
		return ai == bi
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case *pyList:
		y, ok := b.(*pyList)
		if !ok || x.Tuple != y.Tuple || x.view != y.view || len(x.Items) != len(y.Items) {
			return false
		}
		for i := range x.Items {
			if !pyEqual(x.Items[i], y.Items[i]) {
				return false
			}
		}
		return true
	case *pyDict:
		y, ok := b.(*pyDict)
		if !ok || x.len() != y.len() {
			return false
		}
		for i, k := range x.keys {
			v, ok := y.get(k)
			if !ok || !pyEqual(x.vals[i], v) {
				return false
			}
		}
		return true
	case *undefinedValue:
		_, ok := b.(*undefinedValue)
		return ok
	case rangeValue:
		y, ok := b.(rangeValue)
		return ok && x == y
	}
	return a == b
}

// pyLess is Python's <; it returns a TypeError for unorderable types.
func pyLess(a, b value) (bool, error) {
	return pyOrder("<", a, b, func(c int) bool { return c < 0 })
}

// pyCompareValues orders a and b, failing for unorderable types.
func pyCompareValues(op string, a, b value) (int, error) {
	_, af, _, aNum := toNumber(a)
	_, bf, _, bNum := toNumber(b)
	if aNum && bNum {
		if c, ok := compareBig(a, b); ok {
			return c, nil
		}
		ai, _, aFloat, _ := toNumber(a)
		bi, _, bFloat, _ := toNumber(b)
		if !aFloat && !bFloat {
			return cmpInt(ai, bi), nil
		}
		switch {
		case af < bf:
			return -1, nil
		case af > bf:
			return 1, nil
		}
		return 0, nil
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), nil
		}
	case *pyList:
		if y, ok := b.(*pyList); ok && x.Tuple == y.Tuple && x.view == "" && y.view == "" {
			for i := 0; i < len(x.Items) && i < len(y.Items); i++ {
				if pyEqual(x.Items[i], y.Items[i]) {
					continue
				}
				return pyCompareValues(op, x.Items[i], y.Items[i])
			}
			return cmpInt(int64(len(x.Items)), int64(len(y.Items))), nil
		}
	case *undefinedValue:
		return 0, x.fail()
	}
	if u, ok := b.(*undefinedValue); ok {
		return 0, u.fail()
	}
	return 0, typeError("'%s' not supported between instances of '%s' and '%s'", op, typeName(a), typeName(b))
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func pyOrder(op string, a, b value, pred func(int) bool) (bool, error) {
	c, err := pyCompareValues(op, a, b)
	if err != nil {
		return false, err
	}
	return pred(c), nil
}

func compare(op string, a, b value) (bool, error) {
	switch op {
	case "==":
		return pyEqual(a, b), nil
	case "!=":
		return !pyEqual(a, b), nil
	case "<":
		return pyOrder(op, a, b, func(c int) bool { return c < 0 })
	case "<=":
		return pyOrder(op, a, b, func(c int) bool { return c <= 0 })
	case ">":
		return pyOrder(op, a, b, func(c int) bool { return c > 0 })
	case ">=":
		return pyOrder(op, a, b, func(c int) bool { return c >= 0 })
	case "in":
		return contains(b, a)
	case "notin":
		ok, err := contains(b, a)
		return !ok, err
	}
	return false, typeError("unknown comparison %s", op)
}

// contains is Python's "item in container".
func contains(container, item value) (bool, error) {
	switch c := container.(type) {
	case string:
		s, ok := item.(string)
		if !ok {
			return false, typeError("'in <string>' requires string as left operand, not %s", typeName(item))
		}
		return strings.Contains(c, s), nil
	case *pyList:
		for _, x := range c.Items {
			if pyEqual(x, item) {
				return true, nil
			}
		}
		return false, nil
	case *pyDict:
		if !isHashable(item) {
			if _, isU := item.(*undefinedValue); isU {
				return false, nil
			}
			return false, typeError("unhashable type: '%s'", typeName(item))
		}
		_, ok := c.get(item)
		return ok, nil
	case *iterValue:
		// Python takes items until it finds one: the rest stay.
		if c.err != nil {
			_, err := c.consume()
			return false, err
		}
		for c.pos < len(c.items) {
			c.pos++
			if pyEqual(c.items[c.pos-1], item) {
				return true, nil
			}
		}
		return false, nil
	case *namespaceValue:
		return false, typeError("argument of type 'Namespace' is not iterable")
	case rangeValue:
		i, _, isFloat, ok := toNumber(item)
		if !ok || isFloat {
			return false, nil
		}
		for _, x := range mustIterRange(c) {
			if x == i {
				return true, nil
			}
		}
		return false, nil
	case *undefinedValue:
		return false, nil
	}
	return false, typeError("argument of type '%s' is not iterable", typeName(container))
}

func mustIterRange(r rangeValue) []int64 {
	n := min(r.len(), maxListLen)
	out := make([]int64, n)
	for i := range out {
		out[i] = r.start + int64(i)*r.step
	}
	return out
}

// isASCII reports whether s has only single-byte characters, which lets
// string indexing skip rune decoding.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// getAttr is jinja2's sandboxed environment.getattr: Python attributes
// (methods) first, then items.
func getAttr(obj value, name string) (value, error) {
	switch x := obj.(type) {
	case *undefinedValue:
		return nil, x.fail()
	case *pyDict:
		if m, ok := methodFor(obj, name); ok {
			return m, nil
		}
		if v, ok := x.getString(name); ok {
			return v, nil
		}
	case *namespaceValue:
		if v, ok := x.attrs.get(name); ok {
			return v, nil
		}
	case *loopState:
		if v, ok := x.attr(name); ok {
			return v, nil
		}
	case *macroValue:
		if v, ok := x.attr(name); ok {
			return v, nil
		}
	case *pyList:
		if i := indexOf(x.fields, name); i >= 0 {
			return x.Items[i], nil
		}
		if m, ok := methodFor(obj, name); ok {
			return m, nil
		}
	case string:
		if m, ok := methodFor(obj, name); ok {
			return m, nil
		}
	}
	return undefinedAttr(obj, name), nil
}

// getItem is jinja2's environment.getitem: items first, then attributes.
func getItem(obj, key value) (value, error) {
	switch x := obj.(type) {
	case *undefinedValue:
		return nil, x.fail()
	case *pyDict:
		if s, ok := key.(string); ok {
			if v, ok := x.getString(s); ok {
				return v, nil
			}
			break
		}
		if !isHashable(key) {
			return nil, typeError("unhashable type: '%s'", typeName(key))
		}
		if v, ok := x.get(key); ok {
			return v, nil
		}
	case *pyList:
		if i, ok := indexKey(key); ok && x.view == "" {
			if i < 0 {
				i += int64(len(x.Items))
			}
			if i >= 0 && i < int64(len(x.Items)) {
				return x.Items[i], nil
			}
			return undefinedItem(obj, key), nil
		}
	case string:
		if i, ok := indexKey(key); ok {
			if isASCII(x) {
				if i < 0 {
					i += int64(len(x))
				}
				if i >= 0 && i < int64(len(x)) {
					return x[i : i+1], nil
				}
			} else {
				runes := []rune(x)
				if i < 0 {
					i += int64(len(runes))
				}
				if i >= 0 && i < int64(len(runes)) {
					return string(runes[i]), nil
				}
			}
			return undefinedItem(obj, key), nil
		}
	case rangeValue:
		if i, ok := indexKey(key); ok {
			n := x.len()
			if i < 0 {
				i += n
			}
			if i >= 0 && i < n {
				return x.start + i*x.step, nil
			}
			return undefinedItem(obj, key), nil
		}
	}
	if s, ok := key.(string); ok {
		return getAttr(obj, s)
	}
	return undefinedItem(obj, key), nil
}

func indexKey(k value) (int64, bool) {
	switch x := k.(type) {
	case int64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// sliceIndices is Python's slice.indices(length).
func sliceIndices(start, stop, step value, length int64) (int64, int64, int64, error) {
	st := int64(1)
	if step != nil {
		s, ok := indexKey(step)
		if !ok {
			return 0, 0, 0, typeError("slice indices must be integers or None or have an __index__ method")
		}
		if s == 0 {
			return 0, 0, 0, valueError("slice step cannot be zero")
		}
		st = s
	}
	bound := func(v value, def int64) (int64, error) {
		if v == nil {
			return def, nil
		}
		i, ok := indexKey(v)
		if !ok {
			return 0, typeError("slice indices must be integers or None or have an __index__ method")
		}
		if i < 0 {
			i += length
			if i < 0 {
				if st < 0 {
					i = -1
				} else {
					i = 0
				}
			}
		} else if i >= length {
			if st < 0 {
				i = length - 1
			} else {
				i = length
			}
		}
		return i, nil
	}
	var defStart, defStop int64 = 0, length
	if st < 0 {
		defStart, defStop = length-1, -1
	}
	a, err := bound(start, defStart)
	if err != nil {
		return 0, 0, 0, err
	}
	b, err := bound(stop, defStop)
	if err != nil {
		return 0, 0, 0, err
	}
	return a, b, st, nil
}

func sliceRange(a, b, st int64, each func(int64)) {
	if st > 0 {
		for i := a; i < b; i += st {
			each(i)
		}
	} else {
		for i := a; i > b; i += st {
			each(i)
		}
	}
}

func sliceValue(obj, start, stop, step value) (value, error) {
	switch x := obj.(type) {
	case *pyList:
		if x.view != "" {
			return nil, typeError("'%s' object is not subscriptable", x.view)
		}
		a, b, st, err := sliceIndices(start, stop, step, int64(len(x.Items)))
		if err != nil {
			return nil, err
		}
		if st == 1 {
			// No template changes a list (their methods that would are
			// refused), so a plain slice shares the items: splitting the
			// messages (messages[:k]) is then no copy of the conversation
			// per render. Capped, so that a list made from it copies.
			if a >= b {
				return &pyList{Tuple: x.Tuple}, nil
			}
			return &pyList{Items: x.Items[a:b:b], Tuple: x.Tuple}, nil
		}
		var items []value
		sliceRange(a, b, st, func(i int64) { items = append(items, x.Items[i]) })
		return &pyList{Items: items, Tuple: x.Tuple}, nil
	case string:
		if isASCII(x) {
			a, b, st, err := sliceIndices(start, stop, step, int64(len(x)))
			if err != nil {
				return nil, err
			}
			if st == 1 {
				if a >= b {
					return "", nil
				}
				return x[a:b], nil
			}
			var sb strings.Builder
			sliceRange(a, b, st, func(i int64) { sb.WriteByte(x[i]) })
			return sb.String(), nil
		}
		runes := []rune(x)
		a, b, st, err := sliceIndices(start, stop, step, int64(len(runes)))
		if err != nil {
			return nil, err
		}
		var sb strings.Builder
		sliceRange(a, b, st, func(i int64) { sb.WriteRune(runes[i]) })
		return sb.String(), nil
	case rangeValue:
		items, _ := iterValues(x)
		return sliceValue(&pyList{Items: items}, start, stop, step)
	}
	// jinja2 compiles slices to plain Python subscripts, so the TypeError
	// escapes instead of becoming Undefined.
	if _, ok := obj.(*pyDict); ok {
		return nil, typeError("unhashable type: 'slice'")
	}
	return nil, typeError("'%s' object is not subscriptable", typeName(obj))
}

func toInt(v value) (int64, error) {
	i, f, isFloat, ok := toNumber(v)
	if !ok {
		return 0, typeError("int() argument must be a string or a number, not '%s'", typeName(v))
	}
	if isFloat {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, valueError("cannot convert float to integer")
		}
		return int64(f), nil
	}
	return i, nil
}
