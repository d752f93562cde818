package chattemplate

import (
	"math"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// filterFunc implements one jinja2 filter; v is the piped value.
type filterFunc func(r *renderer, v value, args []value, kw *kwargs) (value, error)

// filters is filled in init because filters call back into the evaluator.
var filters map[string]filterFunc

func init() {
	filters = map[string]filterFunc{
		"abs":         filterAbs,
		"attr":        filterAttr,
		"batch":       filterBatch,
		"capitalize":  stringFilter(pyCapitalize),
		"center":      filterCenter,
		"count":       filterLength,
		"d":           filterDefault,
		"default":     filterDefault,
		"dictsort":    filterDictsort,
		"e":           filterEscape,
		"escape":      filterEscape,
		"first":       filterFirst,
		"float":       filterFloat,
		"forceescape": filterEscape,
		"format":      filterFormat,
		"groupby":     filterGroupby,
		"indent":      filterIndent,
		"int":         filterInt,
		"items":       filterItems,
		"join":        filterJoin,
		"last":        filterLast,
		"length":      filterLength,
		"list":        filterList,
		"lower":       stringFilter(pyLower),
		"map":         filterMap,
		"max":         func(r *renderer, v value, a []value, kw *kwargs) (value, error) { return minMax(r, v, kw, true) },
		"min":         func(r *renderer, v value, a []value, kw *kwargs) (value, error) { return minMax(r, v, kw, false) },
		"pprint":      func(r *renderer, v value, a []value, kw *kwargs) (value, error) { return pprint(v), nil },
		"reject":      selectFilter(false, false),
		"rejectattr":  selectFilter(false, true),
		"replace":     filterReplace,
		"reverse":     filterReverse,
		"round":       filterRound,
		"safe":        func(r *renderer, v value, a []value, kw *kwargs) (value, error) { return v, nil },
		"select":      selectFilter(true, false),
		"selectattr":  selectFilter(true, true),
		"slice":       filterSlice,
		"sort":        filterSort,
		"string":      func(r *renderer, v value, a []value, kw *kwargs) (value, error) { return pyStr(v), nil },
		"striptags":   filterStriptags,
		"sum":         filterSum,
		"title":       stringFilter(jinjaTitle),
		"tojson":      filterToJSON,
		"trim":        filterTrim,
		"truncate":    filterTruncate,
		"unique":      filterUnique,
		"upper":       stringFilter(pyUpper),
		"wordcount":   filterWordcount,
	}
}

// applyFilter evaluates a filter's arguments and applies it to v.
func (r *renderer) applyFilter(fl *filterExpr, v value, f *frame) (value, error) {
	fn, ok := filters[fl.name]
	if !ok {
		return nil, &RenderError{Kind: "TemplateAssertionError", Msg: "No filter named '" + fl.name + "'."}
	}
	args, kw, err := r.evalArgs(fl.args, f, false)
	if err != nil {
		return nil, err
	}
	out, err := fn(r, v, args, kw)
	if err != nil {
		return nil, err
	}
	if err := checkSize(out); err != nil {
		return nil, err
	}
	return out, r.account(out)
}

func stringFilter(fn func(string) string) filterFunc {
	return func(r *renderer, v value, a []value, kw *kwargs) (value, error) { return fn(pyStr(v)), nil }
}

var wordBeginning = regexp.MustCompile(`([-\s({\[<]+)`)

// jinjaTitle is jinja2's title filter, which differs from str.title: words
// start after whitespace, dashes and opening brackets only.
func jinjaTitle(s string) string {
	var b strings.Builder
	last := 0
	emit := func(item string) {
		if item == "" {
			return
		}
		r, size := utf8.DecodeRuneInString(item)
		b.WriteString(pyUpper(string(r)))
		b.WriteString(pyLower(item[size:]))
	}
	for _, m := range wordBeginning.FindAllStringIndex(s, -1) {
		emit(s[last:m[0]])
		b.WriteString(s[m[0]:m[1]])
		last = m[1]
	}
	emit(s[last:])
	return b.String()
}

func filterAbs(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return -x, nil
		}
		return x, nil
	case float64:
		return math.Abs(x), nil
	case bigInt:
		if x.text[0] == '-' {
			return negate(x)
		}
		return x, nil
	case bool:
		if x {
			return int64(1), nil
		}
		return int64(0), nil
	}
	return nil, typeError("bad operand type for abs(): '%s'", typeName(v))
}

// filterAttr looks up a Python attribute only, never an item: on dicts it
// finds methods, not keys.
func filterAttr(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	name := pyStr(argAt(a, kw, 0, "name", ""))
	switch x := v.(type) {
	case *undefinedValue:
		return nil, x.fail()
	case *namespaceValue, *loopState:
		return getAttr(v, name)
	case *pyList:
		if i := indexOf(x.fields, name); i >= 0 {
			return x.Items[i], nil
		}
	}
	if m, ok := methodFor(v, name); ok {
		return m, nil
	}
	return undefinedAttr(v, name), nil
}

func filterBatch(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	n, ok := indexKey(argAt(a, kw, 0, "linecount", nil))
	if !ok || n <= 0 {
		return nil, valueError("batch size must be a positive integer")
	}
	fill, hasFill := kw.get("fill_with")
	if len(a) > 1 {
		fill, hasFill = a[1], true
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	var out []value
	for i := 0; i < len(items); i += int(n) {
		end := min(i+int(n), len(items))
		row := append([]value(nil), items[i:end]...)
		for hasFill && fill != nil && len(row) < int(n) {
			row = append(row, fill)
		}
		out = append(out, &pyList{Items: row})
	}
	return newGenerator("do_batch", out), nil
}

func filterCenter(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	w, _ := indexKey(argAt(a, kw, 0, "width", int64(80)))
	return pad(pyStr(v), "center", int(min(w, maxStringLen)), " "), nil
}

// pyLen is Python's len().
func pyLen(v value) (int64, error) {
	switch x := v.(type) {
	case string:
		return int64(utf8.RuneCountInString(x)), nil
	case *pyList:
		return int64(len(x.Items)), nil
	case *pyDict:
		return int64(x.len()), nil
	case rangeValue:
		return x.len(), nil
	case *undefinedValue:
		return 0, nil
	}
	return 0, typeError("object of type '%s' has no len()", typeName(v))
}

func filterLength(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	return pyLen(v)
}

func filterDefault(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	def := argAt(a, kw, 0, "default_value", "")
	boolean := truthy(argAt(a, kw, 1, "boolean", false))
	if _, undef := v.(*undefinedValue); undef || (boolean && !truthy(v)) {
		return def, nil
	}
	return v, nil
}

// sortKey prepares a value for case-insensitive comparison like jinja2's
// ignore_case.
func sortKey(v value, caseSensitive bool) value {
	if s, ok := v.(string); ok && !caseSensitive {
		return pyLower(s)
	}
	return v
}

// sortValues stable-sorts items by key, reporting unorderable types.
func sortValues(items []value, key func(value) (value, error), reverse bool) error {
	keys := make([]value, len(items))
	for i, it := range items {
		k, err := key(it)
		if err != nil {
			return err
		}
		keys[i] = k
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	var sortErr error
	sort.SliceStable(idx, func(i, j int) bool {
		a, b := keys[idx[i]], keys[idx[j]]
		if reverse {
			a, b = b, a
		}
		less, err := pyLess(a, b)
		if err != nil && sortErr == nil {
			sortErr = err
		}
		return less
	})
	if sortErr != nil {
		return sortErr
	}
	sorted := make([]value, len(items))
	for i, j := range idx {
		sorted[i] = items[j]
	}
	copy(items, sorted)
	return nil
}

func filterDictsort(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	d, ok := v.(*pyDict)
	if u, undef := v.(*undefinedValue); undef {
		return nil, u.fail()
	}
	if !ok {
		return nil, &RenderError{Kind: "AttributeError", Msg: "'" + typeName(v) + "' object has no attribute 'items'"}
	}
	caseSensitive := truthy(argAt(a, kw, 0, "case_sensitive", false))
	by, _ := argAt(a, kw, 1, "by", "key").(string)
	reverse := truthy(argAt(a, kw, 2, "reverse", false))
	pos := 0
	switch by {
	case "key":
	case "value":
		pos = 1
	default:
		return nil, &RenderError{Kind: "FilterArgumentError", Msg: "You can only sort by either \"key\" or \"value\""}
	}
	items := make([]value, d.len())
	for i, k := range d.keys {
		items[i] = &pyList{Items: []value{k, d.vals[i]}, Tuple: true}
	}
	err := sortValues(items, func(it value) (value, error) {
		return sortKey(it.(*pyList).Items[pos], caseSensitive), nil
	}, reverse)
	return &pyList{Items: items}, err
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "'", "&#39;", `"`, "&#34;")

func filterEscape(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	return htmlEscaper.Replace(pyStr(v)), nil
}

func filterFirst(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	if it, ok := v.(*iterValue); ok && it.err == nil && it.pos < len(it.items) {
		// next(iter(seq)): the rest stays in the iterator.
		it.pos++
		return it.items[it.pos-1], nil
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return &undefinedValue{hint: "No first item, sequence was empty."}, nil
	}
	return items[0], nil
}

func filterLast(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	if !isReversible(v) {
		return nil, typeError("'%s' object is not reversible", typeName(v))
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return &undefinedValue{hint: "No last item, sequence was empty."}, nil
	}
	return items[len(items)-1], nil
}

// parsePyFloat is Python's float(str).
func parsePyFloat(s string) (float64, bool) {
	t := strings.TrimFunc(s, isPySpace)
	t = strings.ReplaceAll(t, "_", "")
	switch strings.ToLower(strings.TrimLeft(t, "+-")) {
	case "inf", "infinity", "nan":
	default:
		if strings.ContainsAny(strings.ToLower(t), "xpn") {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil && !strings.Contains(err.Error(), "range") {
		return 0, false
	}
	return f, true
}

func filterFloat(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	def := argAt(a, kw, 0, "default", 0.0)
	switch x := v.(type) {
	case *undefinedValue:
		return nil, x.fail()
	case string:
		if f, ok := parsePyFloat(x); ok {
			return f, nil
		}
		return def, nil
	}
	if _, f, _, ok := toNumber(v); ok {
		return f, nil
	}
	return def, nil
}

func filterInt(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	def := argAt(a, kw, 0, "default", int64(0))
	base, _ := indexKey(argAt(a, kw, 1, "base", int64(10)))
	switch x := v.(type) {
	case *undefinedValue:
		return nil, x.fail()
	case string:
		t := strings.ReplaceAll(strings.TrimFunc(x, isPySpace), "_", "")
		if n, err := strconv.ParseInt(t, int(base), 64); err == nil {
			return n, nil
		}
		if n, ok := new(big.Int).SetString(t, int(base)); ok && base >= 2 && base <= 36 {
			return normBig(n)
		}
		if base != 10 {
			if n, err := strconv.ParseInt(t, 0, 64); err == nil {
				return n, nil
			}
		}
		if f, ok := parsePyFloat(x); ok && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return int64(f), nil
		}
		return def, nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return def, nil
		}
		if math.Abs(x) >= 1<<63 {
			n, _ := big.NewFloat(x).Int(nil)
			return normBig(n)
		}
		return int64(x), nil
	case bigInt:
		return x, nil
	}
	if i, _, _, ok := toNumber(v); ok {
		return i, nil
	}
	return def, nil
}

func filterItems(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	// A generator in jinja2, so a non-mapping fails only when iterated.
	switch x := v.(type) {
	case *undefinedValue:
		return newGenerator("do_items", nil), nil
	case *pyDict:
		items, err := callMethod(r, x, "items", nil, nil)
		if err != nil {
			return nil, err
		}
		return newGenerator("do_items", items.(*pyList).Items), nil
	}
	return &iterValue{typ: "generator", fn: "do_items", err: typeError("Can only get item pairs from a mapping.")}, nil
}

// attrGetter resolves jinja2's dotted attribute paths ("a.b", "0.name").
func attrGetter(attr value, def value, hasDefault bool) func(value) (value, error) {
	var parts []value
	if s, ok := attr.(string); ok {
		for _, p := range strings.Split(s, ".") {
			if n, err := strconv.ParseInt(p, 10, 64); err == nil {
				parts = append(parts, n)
			} else {
				parts = append(parts, p)
			}
		}
	} else {
		parts = []value{attr}
	}
	return func(item value) (value, error) {
		for _, p := range parts {
			var err error
			if item, err = getItem(item, p); err != nil {
				return nil, err
			}
			if _, undef := item.(*undefinedValue); undef && hasDefault {
				return def, nil
			}
		}
		return item, nil
	}
}

func filterJoin(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	sep := pyStr(argAt(a, kw, 0, "d", ""))
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	var get func(value) (value, error)
	if attr := argAt(a, kw, 1, "attribute", nil); attr != nil {
		get = attrGetter(attr, nil, false)
	}
	var b strings.Builder
	for i, it := range items {
		if get != nil {
			if it, err = get(it); err != nil {
				return nil, err
			}
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(pyStr(it))
		if b.Len() > maxStringLen {
			return nil, errTooLarge()
		}
	}
	return b.String(), nil
}

func filterList(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	return &pyList{Items: append([]value(nil), items...)}, nil
}

// lazyItems iterates like jinja2's map/select family, which start with
// "if seq:" and so yield nothing for any falsy input.
func lazyItems(r *renderer, v value) ([]value, error) {
	if _, undef := v.(*undefinedValue); !undef && !truthy(v) {
		return nil, nil
	}
	return r.iterate(v)
}

func filterMap(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	items, err := lazyItems(r, v)
	if err != nil {
		return nil, err
	}
	var fn func(value) (value, error)
	if attr, ok := kw.get("attribute"); ok && len(a) == 0 {
		def, hasDefault := kw.get("default")
		fn = attrGetter(attr, def, hasDefault)
	} else {
		if len(a) == 0 {
			return nil, &RenderError{Kind: "FilterArgumentError", Msg: "map requires a filter argument"}
		}
		name, _ := a[0].(string)
		inner, ok := filters[name]
		if !ok {
			return nil, &RenderError{Kind: "TemplateRuntimeError", Msg: "No filter named '" + name + "' found."}
		}
		rest := a[1:]
		fn = func(x value) (value, error) { return inner(r, x, rest, kw) }
	}
	out := make([]value, len(items))
	for i, it := range items {
		if out[i], err = fn(it); err != nil {
			return nil, err
		}
	}
	return newGenerator("sync_do_map", out), nil
}

func minMax(r *renderer, v value, kw *kwargs, wantMax bool) (value, error) {
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		what := "min"
		if wantMax {
			what = "max"
		}
		return &undefinedValue{hint: "No aggregated item, sequence was empty.", name: what}, nil
	}
	caseSensitive := false
	if cs, ok := kw.get("case_sensitive"); ok {
		caseSensitive = truthy(cs)
	}
	get := func(x value) (value, error) { return x, nil }
	if attr, ok := kw.get("attribute"); ok && attr != nil {
		get = attrGetter(attr, nil, false)
	}
	best := items[0]
	bestKey, err := get(best)
	if err != nil {
		return nil, err
	}
	for _, it := range items[1:] {
		k, err := get(it)
		if err != nil {
			return nil, err
		}
		// CPython's max asks item > best, min asks item < best.
		op := "<"
		if wantMax {
			op = ">"
		}
		better, err := compare(op, sortKey(k, caseSensitive), sortKey(bestKey, caseSensitive))
		if err != nil {
			return nil, err
		}
		if better {
			best, bestKey = it, k
		}
	}
	return best, nil
}

func filterReplace(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	if len(a) < 2 {
		return nil, typeError("replace filter needs old and new strings")
	}
	n := int64(-1)
	if c := argAt(a, kw, 2, "count", nil); c != nil {
		n, _ = indexKey(c)
	}
	return pyReplace(pyStr(v), pyStr(a[0]), pyStr(a[1]), n)
}

func filterReverse(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	if s, ok := v.(string); ok {
		runes := []rune(s)
		for i, j := 0, len(runes)-1; i < j; i, j = i+1, j-1 {
			runes[i], runes[j] = runes[j], runes[i]
		}
		return string(runes), nil
	}
	// reversed(v) where Python has it, an iterator named after v's type;
	// otherwise a reversed list of v's items.
	typ := ""
	switch x := v.(type) {
	case *pyList:
		switch {
		case x.view == "dict_keys":
			typ = "dict_reversekeyiterator"
		case x.view == "dict_values":
			typ = "dict_reversevalueiterator"
		case x.view == "dict_items":
			typ = "dict_reverseitemiterator"
		case x.Tuple:
			typ = "reversed"
		default:
			typ = "list_reverseiterator"
		}
	case *pyDict:
		typ = "dict_reversekeyiterator"
	case rangeValue:
		typ = "range_iterator"
	case *undefinedValue:
		typ = "reversed"
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, &RenderError{Kind: "FilterArgumentError", Msg: "argument must be iterable"}
	}
	out := make([]value, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	if typ == "" {
		return &pyList{Items: out}, nil
	}
	return &iterValue{typ: typ, items: out}, nil
}

// isReversible reports whether Python's reversed() accepts v.
func isReversible(v value) bool {
	switch v.(type) {
	case string, *pyList, *pyDict, rangeValue, *undefinedValue:
		return true
	}
	return false
}

// roundInt is Python's round(int, ndigits): negative ndigits round to tens,
// hundreds, ... with ties to even; the result stays an int.
func roundInt(v value, prec int64) value {
	i, _, _, _ := toNumber(v)
	if prec >= 0 || prec < -18 {
		if prec < -18 {
			return int64(0)
		}
		return i
	}
	p := int64(1)
	for k := int64(0); k < -prec; k++ {
		p *= 10
	}
	q, rem := i/p, i%p
	if rem < 0 {
		q, rem = q-1, rem+p
	}
	if 2*rem > p || (2*rem == p && q%2 != 0) {
		q++
	}
	return q * p
}

func filterRound(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	prec, _ := indexKey(argAt(a, kw, 0, "precision", int64(0)))
	method, _ := argAt(a, kw, 1, "method", "common").(string)
	_, f, isFloat, ok := toNumber(v)
	if !ok {
		return nil, typeError("type %s doesn't define __round__ method", typeName(v))
	}
	if b, isBig := v.(bigInt); isBig && method == "common" && prec >= 0 {
		return b, nil
	}
	switch method {
	case "common":
		if !isFloat {
			return roundInt(v, prec), nil
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return f, nil
		}
		out, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', int(max(min(prec, 300), -300)), 64), 64)
		if prec < 0 {
			p := math.Pow(10, float64(-prec))
			out = math.RoundToEven(f/p) * p
		}
		return out, nil
	case "ceil", "floor":
		p := math.Pow(10, float64(prec))
		if method == "ceil" {
			return math.Ceil(f*p) / p, nil
		}
		return math.Floor(f*p) / p, nil
	}
	return nil, &RenderError{Kind: "FilterArgumentError", Msg: "method must be common, ceil or floor"}
}

// selectFilter builds select/reject (keep == true selects) and their attr
// variants.
func selectFilter(keep, byAttr bool) filterFunc {
	return func(r *renderer, v value, a []value, kw *kwargs) (value, error) {
		items, err := lazyItems(r, v)
		if err != nil {
			return nil, err
		}
		get := func(x value) (value, error) { return x, nil }
		if byAttr {
			if len(a) == 0 {
				return nil, &RenderError{Kind: "FilterArgumentError", Msg: "Missing parameter for attribute name"}
			}
			get = attrGetter(a[0], nil, false)
			a = a[1:]
		}
		var check func(value) (bool, error)
		if len(a) == 0 {
			check = func(x value) (bool, error) { return truthy(x), nil }
		} else {
			name, _ := a[0].(string)
			test, ok := tests[name]
			if !ok {
				return nil, &RenderError{Kind: "TemplateRuntimeError", Msg: "No test named '" + name + "' found."}
			}
			// The test gets the remaining arguments, checked against its
			// signature as a call would be.
			rest, err := bindTestArgs(name, a[1:], kw)
			if err != nil {
				return nil, err
			}
			check = func(x value) (bool, error) { return test(r, x, rest) }
		}
		var out []value
		for _, it := range items {
			x, err := get(it)
			if err != nil {
				return nil, err
			}
			ok, err := check(x)
			if err != nil {
				return nil, err
			}
			if ok == keep {
				out = append(out, it)
			}
		}
		return newGenerator("select_or_reject", out), nil
	}
}

func filterSlice(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	n, ok := indexKey(argAt(a, kw, 0, "slices", nil))
	if !ok || n <= 0 || n > maxListLen {
		return nil, valueError("slices must be a positive integer")
	}
	fill := argAt(a, kw, 1, "fill_with", nil)
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	per, extra := len(items)/int(n), len(items)%int(n)
	offset := 0
	var out []value
	for i := 0; i < int(n); i++ {
		start := offset + i*per
		if i < extra {
			offset++
		}
		end := offset + (i+1)*per
		row := append([]value(nil), items[start:end]...)
		if fill != nil && i >= extra {
			row = append(row, fill)
		}
		out = append(out, &pyList{Items: row})
	}
	return newGenerator("do_slice", out), nil
}

func filterSort(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	reverse := truthy(argAt(a, kw, 0, "reverse", false))
	caseSensitive := truthy(argAt(a, kw, 1, "case_sensitive", false))
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	items = append([]value(nil), items...)
	// jinja2 sorts by a list of keys, one per comma-separated attribute;
	// comparing lists checks equality first, so equal Undefined keys do not
	// fail.
	getters := []func(value) (value, error){func(x value) (value, error) { return x, nil }}
	if attr := argAt(a, kw, 2, "attribute", nil); attr != nil {
		getters = nil
		parts := []value{attr}
		if s, ok := attr.(string); ok {
			parts = nil
			for _, p := range strings.Split(s, ",") {
				parts = append(parts, p)
			}
		}
		for _, p := range parts {
			getters = append(getters, attrGetter(p, nil, false))
		}
	}
	err = sortValues(items, func(x value) (value, error) {
		keys := make([]value, len(getters))
		for i, get := range getters {
			k, err := get(x)
			if err != nil {
				return nil, err
			}
			keys[i] = sortKey(k, caseSensitive)
		}
		return &pyList{Items: keys}, nil
	}, reverse)
	return &pyList{Items: items}, err
}

var tagPattern = regexp.MustCompile(`(?s)<!--.*?-->|<[^>]*>`)

func filterStriptags(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	s := tagPattern.ReplaceAllString(pyStr(v), "")
	s = strings.Join(strings.FieldsFunc(s, isPySpace), " ")
	return htmlUnescape(s), nil
}

var htmlUnescaper = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#39;", "'", "&#34;", `"`, "&quot;", `"`)

func htmlUnescape(s string) string { return htmlUnescaper.Replace(s) }

func filterSum(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	get := func(x value) (value, error) { return x, nil }
	if attr := argAt(a, kw, 0, "attribute", nil); attr != nil {
		get = attrGetter(attr, nil, false)
	}
	total := argAt(a, kw, 1, "start", int64(0))
	for _, it := range items {
		x, err := get(it)
		if err != nil {
			return nil, err
		}
		if total, err = arith("+", total, x); err != nil {
			return nil, err
		}
	}
	return total, nil
}

// filterToJSON is transformers' tojson: json.dumps(x, ensure_ascii=False,
// indent=indent, separators=separators, sort_keys=sort_keys).
func filterToJSON(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	o := newJSONOptions()
	o.ensureASCII = truthy(argAt(a, kw, 0, "ensure_ascii", false))
	switch ind := argAt(a, kw, 1, "indent", nil).(type) {
	case nil:
	case int64:
		o.hasIndent, o.indent = true, strings.Repeat(" ", int(max(0, min(ind, 64))))
	case bool:
		n := 0
		if ind {
			n = 1
		}
		o.hasIndent, o.indent = true, strings.Repeat(" ", n)
	case string:
		o.hasIndent, o.indent = true, ind
	default:
		return nil, typeError("indent must be an int or str")
	}
	if o.hasIndent {
		o.itemSep = ","
	}
	if sep := argAt(a, kw, 2, "separators", nil); sep != nil {
		l, ok := sep.(*pyList)
		if !ok || len(l.Items) != 2 {
			return nil, valueError("separators must be a (item_separator, key_separator) pair")
		}
		is, ok1 := l.Items[0].(string)
		ks, ok2 := l.Items[1].(string)
		if !ok1 || !ok2 {
			return nil, typeError("separators must be strings")
		}
		o.itemSep, o.keySep = is, ks
	}
	o.sortKeys = truthy(argAt(a, kw, 3, "sort_keys", false))
	return toJSON(v, o)
}

func filterTrim(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	pred, err := cutset(argAt(a, kw, 0, "chars", nil))
	if err != nil {
		return nil, err
	}
	return strings.TrimFunc(pyStr(v), pred), nil
}

func filterTruncate(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	s, isString := v.(string)
	length, _ := indexKey(argAt(a, kw, 0, "length", int64(255)))
	killwords := truthy(argAt(a, kw, 1, "killwords", false))
	end := pyStr(argAt(a, kw, 2, "end", "..."))
	leeway, ok := indexKey(argAt(a, kw, 3, "leeway", int64(5)))
	if !ok {
		leeway = 5
	}
	if !isString {
		// jinja2 works on the value itself: short sequences come back as
		// they are, anything else fails like the Python code does.
		n, err := pyLen(v)
		if err != nil {
			return nil, err
		}
		if n <= length+leeway {
			return v, nil
		}
		if killwords {
			return arith("+", v, end)
		}
		return nil, &RenderError{Kind: "AttributeError", Msg: "'" + typeName(v) + "' object has no attribute 'rsplit'"}
	}
	runes := []rune(s)
	if int64(len(runes)) <= length+leeway {
		return s, nil
	}
	cut := max(0, length-int64(utf8.RuneCountInString(end)))
	if cut > int64(len(runes)) {
		cut = int64(len(runes))
	}
	if killwords {
		return string(runes[:cut]) + end, nil
	}
	head := string(runes[:cut])
	if i := strings.LastIndex(head, " "); i >= 0 {
		head = head[:i]
	}
	return head + end, nil
}

func filterUnique(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	caseSensitive := truthy(argAt(a, kw, 0, "case_sensitive", false))
	get := func(x value) (value, error) { return x, nil }
	if attr := argAt(a, kw, 1, "attribute", nil); attr != nil {
		get = attrGetter(attr, nil, false)
	}
	var seen []value
	var out []value
	for _, it := range items {
		k, err := get(it)
		if err != nil {
			return nil, err
		}
		k = sortKey(k, caseSensitive)
		if !isHashable(k) {
			return nil, typeError("unhashable type: '%s'", typeName(k))
		}
		dup := false
		for _, s := range seen {
			if pyEqual(s, k) {
				dup = true
				break
			}
		}
		if !dup {
			seen = append(seen, k)
			out = append(out, it)
		}
	}
	return newGenerator("do_unique", out), nil
}

func filterWordcount(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	n := int64(0)
	inWord := false
	for _, c := range pyStr(v) {
		word := c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c)
		if word && !inWord {
			n++
		}
		inWord = word
	}
	return n, nil
}

func filterFormat(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	if kw != nil && len(a) > 0 {
		return nil, &RenderError{Kind: "FilterArgumentError", Msg: "can't handle positional and keyword arguments at the same time"}
	}
	return percentFormat(pyStr(v), &pyList{Items: a, Tuple: true})
}

func filterGroupby(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	attr := argAt(a, kw, 0, "attribute", nil)
	def, hasDefault := kw.get("default")
	get := attrGetter(attr, def, hasDefault)
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	items = append([]value(nil), items...)
	if err := sortValues(items, get, false); err != nil {
		return nil, err
	}
	var out []value
	for _, it := range items {
		k, err := get(it)
		if err != nil {
			return nil, err
		}
		if n := len(out); n > 0 {
			last := out[n-1].(*pyList)
			if pyEqual(last.Items[0], k) {
				group := last.Items[1].(*pyList)
				group.Items = append(group.Items, it)
				continue
			}
		}
		out = append(out, &pyList{Items: []value{k, &pyList{Items: []value{it}}}, Tuple: true, fields: groupFields})
	}
	return &pyList{Items: out}, nil
}

// groupFields name the items of groupby's namedtuples.
var groupFields = []string{"grouper", "list"}

// pprint approximates pprint.pformat: like repr, with dict keys sorted.
func pprint(v value) string {
	d, ok := v.(*pyDict)
	if !ok {
		if l, isList := v.(*pyList); isList {
			parts := make([]value, len(l.Items))
			for i, it := range l.Items {
				parts[i] = rawRepr(pprint(it))
			}
			return pyRepr(&pyList{Items: parts, Tuple: l.Tuple})
		}
		return pyRepr(v)
	}
	idx := make([]int, d.len())
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool {
		less, _ := pyLess(d.keys[idx[i]], d.keys[idx[j]])
		return less
	})
	var b strings.Builder
	b.WriteString("{")
	for n, i := range idx {
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pyRepr(d.keys[i]) + ": " + pprint(d.vals[i]))
	}
	b.WriteString("}")
	return b.String()
}

func filterIndent(r *renderer, v value, a []value, kw *kwargs) (value, error) {
	indention := "    "
	switch w := argAt(a, kw, 0, "width", int64(4)).(type) {
	case string:
		indention = w
	case int64:
		indention = strings.Repeat(" ", int(max(0, min(w, 1024))))
	}
	// jinja2 starts with s += "\n" on the value itself.
	switch x := v.(type) {
	case string:
	case *undefinedValue:
		return nil, x.fail()
	case *pyList:
		if x.Tuple {
			return nil, typeError("can only concatenate tuple (not \"str\") to tuple")
		}
		if x.view != "" {
			return nil, typeError("unsupported operand type(s) for +=: '%s' and 'str'", x.view)
		}
		return nil, &RenderError{Kind: "AttributeError", Msg: "'list' object has no attribute 'splitlines'"}
	default:
		return nil, typeError("unsupported operand type(s) for +=: '%s' and 'str'", typeName(v))
	}
	first := truthy(argAt(a, kw, 1, "first", false))
	blank := truthy(argAt(a, kw, 2, "blank", false))
	s := pyStr(v) + "\n"
	lines := splitLines(s, false)
	var rv string
	if blank {
		rv = strings.Join(lines, "\n"+indention)
	} else {
		rv = lines[0]
		if len(lines) > 1 {
			var b strings.Builder
			for _, l := range lines[1:] {
				b.WriteByte('\n')
				if l != "" {
					b.WriteString(indention)
				}
				b.WriteString(l)
			}
			rv += b.String()
		}
	}
	if first {
		rv = indention + rv
	}
	return rv, nil
}
