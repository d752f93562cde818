package chattemplate

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// boundMethod is a Python method looked up on a value, e.g. s.strip.
type boundMethod struct {
	recv value
	name string
}

// builtinFunc is a global function such as range or namespace.
type builtinFunc struct {
	name string
	fn   func(r *renderer, args []value, kw *kwargs) (value, error)
}

var (
	stringMethods = setOf("strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith",
		"replace", "upper", "lower", "title", "capitalize", "swapcase", "casefold", "find", "rfind", "index",
		"rindex", "count", "format", "join", "isdigit", "isalpha", "isalnum", "isspace", "isupper", "islower",
		"isnumeric", "isdecimal", "zfill", "center", "ljust", "rjust", "partition", "rpartition",
		"removeprefix", "removesuffix")
	listMethods       = setOf("count", "index", "copy")
	listUnsafeMethods = setOf("append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort")
	dictMethods       = setOf("items", "keys", "values", "get", "copy")
	dictUnsafeMethods = setOf("clear", "pop", "popitem", "setdefault", "update")
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// methodFor returns the method value for obj.name, or false when obj has no
// such Python attribute. Methods that mutate are refused as jinja2's
// ImmutableSandboxedEnvironment does: the lookup yields an Undefined that
// raises SecurityError when used.
func methodFor(obj value, name string) (value, bool) {
	var safe, unsafe map[string]bool
	switch x := obj.(type) {
	case string:
		safe = stringMethods
	case *pyList:
		if x.view != "" {
			return nil, false
		}
		safe, unsafe = listMethods, listUnsafeMethods
	case *pyDict:
		safe, unsafe = dictMethods, dictUnsafeMethods
	default:
		return nil, false
	}
	if safe[name] {
		return &boundMethod{recv: obj, name: name}, true
	}
	if unsafe[name] {
		return &undefinedValue{
			name: name,
			kind: "SecurityError",
			hint: "access to attribute '" + name + "' of '" + typeName(obj) + "' object is unsafe.",
		}, true
	}
	return nil, false
}

// argAt returns positional argument i or keyword name, or def.
func argAt(args []value, kw *kwargs, i int, name string, def value) value {
	if i < len(args) {
		return args[i]
	}
	if v, ok := kw.get(name); ok {
		return v
	}
	return def
}

func stringArg(v value, method string) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", typeError("%s arg must be None or str", method)
	}
	return s, nil
}

// strKeywordMethods are the str methods that accept keyword arguments in
// Python 3.11; the others are positional-only (3.13 lets str.replace take
// count= as a keyword; transformers' reference ran 3.11).
var strKeywordMethods = setOf("split", "rsplit", "splitlines", "format", "expandtabs", "encode")

func callMethod(r *renderer, recv value, name string, args []value, kw *kwargs) (value, error) {
	if kw != nil && len(kw.names) > 0 {
		if _, isStr := recv.(string); !isStr || !strKeywordMethods[name] {
			return nil, typeError("%s.%s() takes no keyword arguments", typeName(recv), name)
		}
	}
	switch x := recv.(type) {
	case string:
		return callStringMethod(x, name, args, kw)
	case *pyList:
		switch name {
		case "count":
			n := int64(0)
			for _, it := range x.Items {
				if len(args) > 0 && pyEqual(it, args[0]) {
					n++
				}
			}
			return n, nil
		case "index":
			for i, it := range x.Items {
				if len(args) > 0 && pyEqual(it, args[0]) {
					return int64(i), nil
				}
			}
			return nil, valueError("%s is not in list", pyRepr(argAt(args, nil, 0, "", nil)))
		case "copy":
			return &pyList{Items: append([]value(nil), x.Items...), Tuple: x.Tuple}, nil
		}
	case *pyDict:
		switch name {
		case "items":
			items := make([]value, x.len())
			for i, k := range x.keys {
				items[i] = &pyList{Items: []value{k, x.vals[i]}, Tuple: true}
			}
			return &pyList{Items: items, view: "dict_items"}, nil
		case "keys":
			return &pyList{Items: append([]value(nil), x.keys...), view: "dict_keys"}, nil
		case "values":
			return &pyList{Items: append([]value(nil), x.vals...), view: "dict_values"}, nil
		case "get":
			if len(args) == 0 {
				return nil, typeError("get expected at least 1 argument, got 0")
			}
			if !isHashable(args[0]) {
				return nil, typeError("unhashable type: '%s'", typeName(args[0]))
			}
			if v, ok := x.get(args[0]); ok {
				return v, nil
			}
			return argAt(args, nil, 1, "", nil), nil
		case "copy":
			d := newDict(x.len())
			for i, k := range x.keys {
				d.set(k, x.vals[i])
			}
			return d, nil
		}
	case *loopState:
		switch name {
		case "cycle":
			if len(args) == 0 {
				return nil, typeError("no items for cycling given")
			}
			return args[x.index%len(args)], nil
		case "changed":
			v := &pyList{Items: args}
			if x.hasLast && pyEqual(x.last, v) {
				return false, nil
			}
			x.last, x.hasLast = v, true
			return true, nil
		}
	}
	return nil, typeError("'%s' object has no method '%s'", typeName(recv), name)
}

// cutset turns Python's strip(chars) argument into a predicate; nil chars
// means whitespace.
func cutset(chars value) (func(rune) bool, error) {
	if chars == nil {
		return isPySpace, nil
	}
	s, ok := chars.(string)
	if !ok {
		return nil, typeError("strip arg must be None or str")
	}
	return func(r rune) bool { return strings.ContainsRune(s, r) }, nil
}

func callStringMethod(s, name string, args []value, kw *kwargs) (value, error) {
	switch name {
	case "strip", "lstrip", "rstrip":
		return strStrip(s, name, args, kw)
	case "split", "rsplit":
		return strSplit(s, name, args, kw)
	case "splitlines":
		keep := truthy(argAt(args, kw, 0, "keepends", false))
		return stringList(splitLines(s, keep)), nil
	case "startswith", "endswith":
		return strAffix(s, name, args, kw)
	case "replace":
		return strReplace(s, name, args, kw)
	case "upper":
		return pyUpper(s), nil
	case "lower", "casefold":
		return pyLower(s), nil
	case "title":
		return pyTitle(s), nil
	case "capitalize":
		return pyCapitalize(s), nil
	case "swapcase":
		return strings.Map(func(r rune) rune {
			if unicode.IsUpper(r) {
				return unicode.ToLower(r)
			}
			return unicode.ToUpper(r)
		}, s), nil
	case "find", "rfind", "index", "rindex", "count":
		return strSearch(s, name, args, kw)
	case "format":
		return pyFormat(s, args, kw)
	case "join":
		return strJoin(s, name, args, kw)
	case "isdecimal":
		return s != "" && allRunes(s, unicode.IsDigit), nil
	case "isdigit":
		return s != "" && allRunes(s, isPyDigit), nil
	case "isnumeric":
		return s != "" && allRunes(s, func(r rune) bool {
			return unicode.IsNumber(r) || strings.ContainsRune("〇一二三四五六七八九十百千万亿", r)
		}), nil
	case "isalpha":
		return s != "" && allRunes(s, unicode.IsLetter), nil
	case "isalnum":
		return s != "" && allRunes(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }), nil
	case "isspace":
		return s != "" && allRunes(s, isPySpace), nil
	case "isupper":
		return hasOnlyCase(s, true), nil
	case "islower":
		return hasOnlyCase(s, false), nil
	case "zfill", "center", "ljust", "rjust":
		return strPad(s, name, args, kw)
	case "partition", "rpartition":
		return strPartition(s, name, args, kw)
	case "removeprefix":
		p, _ := argAt(args, kw, 0, "prefix", "").(string)
		return strings.TrimPrefix(s, p), nil
	case "removesuffix":
		p, _ := argAt(args, kw, 0, "suffix", "").(string)
		return strings.TrimSuffix(s, p), nil
	}
	return nil, typeError("'str' object has no method '%s'", name)
}

// strStrip is Python's str.strip, lstrip and rstrip.
func strStrip(s, name string, args []value, kw *kwargs) (value, error) {
	pred, err := cutset(argAt(args, kw, 0, "chars", nil))
	if err != nil {
		return nil, err
	}
	switch name {
	case "strip":
		return strings.TrimFunc(s, pred), nil
	case "lstrip":
		return strings.TrimLeftFunc(s, pred), nil
	}
	return strings.TrimRightFunc(s, pred), nil
}

// strSplit is Python's str.split and rsplit; a nil sep splits on runs of whitespace.
func strSplit(s, name string, args []value, kw *kwargs) (value, error) {
	sep := argAt(args, kw, 0, "sep", nil)
	maxv := argAt(args, kw, 1, "maxsplit", int64(-1))
	maxSplit, ok := indexKey(maxv)
	if !ok {
		return nil, typeError("'%s' object cannot be interpreted as an integer", typeName(maxv))
	}
	var parts []string
	if sep == nil {
		parts = splitWhitespace(s, int(maxSplit), name == "rsplit")
	} else {
		sepStr, err := stringArg(sep, "must be str or None, not "+typeName(sep)+";")
		if err != nil {
			return nil, typeError("must be str or None, not %s", typeName(sep))
		}
		if sepStr == "" {
			return nil, valueError("empty separator")
		}
		n := -1
		if maxSplit >= 0 {
			n = int(maxSplit) + 1
		}
		if name == "rsplit" {
			parts = rsplitN(s, sepStr, n)
		} else {
			parts = strings.SplitN(s, sepStr, n)
		}
	}
	return stringList(parts), nil
}

// strAffix is Python's str.startswith and endswith, which take a str or a tuple of str.
func strAffix(s, name string, args []value, kw *kwargs) (value, error) {
	if len(args) == 0 {
		return nil, typeError("%s() takes at least 1 argument (0 given)", name)
	}
	test := strings.HasPrefix
	if name == "endswith" {
		test = strings.HasSuffix
	}
	var cands []value
	switch a := args[0].(type) {
	case string:
		cands = []value{a}
	case *pyList:
		if !a.Tuple {
			return nil, typeError("%s first arg must be str or a tuple of str, not list", name)
		}
		cands = a.Items
	default:
		return nil, typeError("%s first arg must be str or a tuple of str, not %s", name, typeName(args[0]))
	}
	for _, c := range cands {
		cs, ok := c.(string)
		if !ok {
			return nil, typeError("tuple for %s must only contain str, not %s", name, typeName(c))
		}
		if test(s, cs) {
			return true, nil
		}
	}
	return false, nil
}

// strReplace is Python's str.replace with its optional count.
func strReplace(s, name string, args []value, kw *kwargs) (value, error) {
	if len(args) < 2 {
		return nil, typeError("replace expected at least 2 arguments, got %d", len(args))
	}
	old, err1 := stringArg(args[0], "replace")
	repl, err2 := stringArg(args[1], "replace")
	if err1 != nil || err2 != nil {
		return nil, typeError("replace() argument must be str")
	}
	n := int64(-1)
	if c := argAt(args, kw, 2, "count", nil); c != nil {
		n, _ = indexKey(c)
	}
	return pyReplace(s, old, repl, n)
}

// strSearch is Python's str.find, rfind, index, rindex and count over the optional [start:end] window, in runes.
func strSearch(s, name string, args []value, kw *kwargs) (value, error) {
	if len(args) == 0 {
		return nil, typeError("%s() takes at least 1 argument (0 given)", name)
	}
	sub, ok := args[0].(string)
	if !ok {
		return nil, typeError("must be str, not %s", typeName(args[0]))
	}
	runes := []rune(s)
	a, b, _, err := sliceIndices(argAt(args, nil, 1, "", nil), argAt(args, nil, 2, "", nil), nil, int64(len(runes)))
	if err != nil {
		return nil, err
	}
	if b < a {
		b = a
	}
	window := string(runes[a:b])
	if name == "count" {
		if sub == "" {
			return int64(utf8.RuneCountInString(window) + 1), nil
		}
		return int64(strings.Count(window, sub)), nil
	}
	var at int
	if name == "find" || name == "index" {
		at = strings.Index(window, sub)
	} else {
		at = strings.LastIndex(window, sub)
	}
	if at < 0 {
		if name == "index" || name == "rindex" {
			return nil, valueError("substring not found")
		}
		return int64(-1), nil
	}
	return a + int64(utf8.RuneCountInString(window[:at])), nil
}

// strJoin is Python's str.join: every item must be a str.
func strJoin(s, name string, args []value, kw *kwargs) (value, error) {
	if len(args) != 1 {
		return nil, typeError("join() takes exactly one argument (%d given)", len(args))
	}
	items, err := iterValues(args[0])
	if err != nil {
		return nil, err
	}
	parts := make([]string, len(items))
	for i, it := range items {
		str, ok := it.(string)
		if !ok {
			return nil, typeError("sequence item %d: expected str instance, %s found", i, typeName(it))
		}
		parts[i] = str
	}
	return strings.Join(parts, s), nil
}

// strPad is Python's str.zfill, center, ljust and rjust.
func strPad(s, name string, args []value, kw *kwargs) (value, error) {
	width, ok := indexKey(argAt(args, kw, 0, "width", nil))
	if !ok {
		return nil, typeError("%s() argument must be an integer", name)
	}
	fill := " "
	if f, ok := argAt(args, kw, 1, "fillchar", " ").(string); ok && utf8.RuneCountInString(f) == 1 {
		fill = f
	}
	return pad(s, name, int(min(width, maxStringLen)), fill), nil
}

// strPartition is Python's str.partition and rpartition.
func strPartition(s, name string, args []value, kw *kwargs) (value, error) {
	sep, ok := argAt(args, kw, 0, "sep", nil).(string)
	if !ok || sep == "" {
		return nil, valueError("empty separator")
	}
	var i int
	if name == "partition" {
		i = strings.Index(s, sep)
	} else {
		i = strings.LastIndex(s, sep)
	}
	if i < 0 {
		if name == "partition" {
			return &pyList{Items: []value{s, "", ""}, Tuple: true}, nil
		}
		return &pyList{Items: []value{"", "", s}, Tuple: true}, nil
	}
	return &pyList{Items: []value{s[:i], sep, s[i+len(sep):]}, Tuple: true}, nil
}

// hasOnlyCase is str.isupper (upper) or str.islower: at least one cased
// character and none of the other case.
func hasOnlyCase(s string, upper bool) bool {
	cased := false
	for _, r := range s {
		switch {
		case unicode.IsUpper(r) || unicode.IsTitle(r):
			if !upper {
				return false
			}
			cased = true
		case unicode.IsLower(r):
			if upper {
				return false
			}
			cased = true
		}
	}
	return cased
}

// isPyDigit is str.isdigit for one character: decimal digits plus the
// superscript, subscript and circled digits Unicode gives a digit value.
func isPyDigit(r rune) bool {
	if unicode.IsDigit(r) {
		return true
	}
	switch {
	case r == 0xb2, r == 0xb3, r == 0xb9, r == 0x2070, r >= 0x2074 && r <= 0x2079, r >= 0x2080 && r <= 0x2089,
		r >= 0x2460 && r <= 0x2468, r >= 0x2474 && r <= 0x247c, r >= 0x2488 && r <= 0x2490, r == 0x24ea,
		r >= 0x24f5 && r <= 0x24fd, r == 0x24ff, r >= 0x2776 && r <= 0x277e, r >= 0x2780 && r <= 0x2788,
		r >= 0x278a && r <= 0x2792, r >= 0x1369 && r <= 0x1371, r == 0x19da:
		return true
	}
	return false
}

func allRunes(s string, pred func(rune) bool) bool {
	for _, r := range s {
		if !pred(r) {
			return false
		}
	}
	return true
}

func stringList(parts []string) *pyList {
	items := make([]value, len(parts))
	for i, p := range parts {
		items[i] = p
	}
	return &pyList{Items: items}
}

// splitWhitespace is Python's str.split() / rsplit() without a separator.
// Once maxSplit parts are cut, the remainder is kept as is apart from the
// whitespace at the cut.
func splitWhitespace(s string, maxSplit int, fromRight bool) []string {
	if !fromRight {
		var out []string
		rest := strings.TrimLeftFunc(s, isPySpace)
		for rest != "" {
			if maxSplit >= 0 && len(out) == maxSplit {
				out = append(out, rest)
				break
			}
			end := strings.IndexFunc(rest, isPySpace)
			if end < 0 {
				out = append(out, rest)
				break
			}
			out = append(out, rest[:end])
			rest = strings.TrimLeftFunc(rest[end:], isPySpace)
		}
		return out
	}
	var rev []string
	rest := strings.TrimRightFunc(s, isPySpace)
	for rest != "" {
		if maxSplit >= 0 && len(rev) == maxSplit {
			rev = append(rev, rest)
			break
		}
		start := strings.LastIndexFunc(rest, isPySpace)
		if start < 0 {
			rev = append(rev, rest)
			break
		}
		_, size := utf8.DecodeRuneInString(rest[start:])
		rev = append(rev, rest[start+size:])
		rest = strings.TrimRightFunc(rest[:start], isPySpace)
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

func rsplitN(s, sep string, n int) []string {
	if n < 0 {
		return strings.Split(s, sep)
	}
	var rev []string
	for len(rev) < n-1 {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			break
		}
		rev = append(rev, s[i+len(sep):])
		s = s[:i]
	}
	rev = append(rev, s)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// splitLines is Python's str.splitlines.
func splitLines(s string, keep bool) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		brk := 0
		switch r {
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			brk = size
		case '\r':
			brk = 1
			if i+1 < len(s) && s[i+1] == '\n' {
				brk = 2
			}
		}
		if brk == 0 {
			i += size
			continue
		}
		end := i
		if keep {
			end = i + brk
		}
		out = append(out, s[start:end])
		i += brk
		start = i
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func pyReplace(s, old, repl string, n int64) (value, error) {
	count := int64(strings.Count(s, old))
	if old == "" {
		count = int64(utf8.RuneCountInString(s) + 1)
	}
	if n >= 0 && n < count {
		count = n
	}
	if int64(len(s))+count*int64(len(repl)-len(old)) > maxStringLen {
		return nil, errTooLarge()
	}
	return strings.Replace(s, old, repl, int(count)), nil
}

// specialUpper and specialLower are the unconditional multi-character
// case mappings of Unicode's SpecialCasing.txt that Python applies.
var (
	specialUpper = map[rune]string{'ß': "SS", 'ﬀ': "FF", 'ﬁ': "FI", 'ﬂ': "FL", 'ﬃ': "FFI", 'ﬄ': "FFL",
		'ﬅ': "ST", 'ﬆ': "ST", 'ŉ': "ʼN", 'ǰ': "J̌", 'ΐ': "Ϊ́", 'ΰ': "Ϋ́", 'և': "ԵՒ", 'ẖ': "H̱", 'ẗ': "T̈",
		'ẘ': "W̊", 'ẙ': "Y̊", 'ẚ': "Aʾ"}
	specialLower = map[rune]string{'İ': "i̇"}
)

func mapCase(s string, special map[rune]string, simple func(rune) rune) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if m, ok := special[r]; ok {
			b.WriteString(m)
		} else {
			b.WriteRune(simple(r))
		}
	}
	return b.String()
}

// pyUpper is Python's str.upper with full case mapping.
func pyUpper(s string) string {
	if isASCII(s) {
		return strings.ToUpper(s)
	}
	return mapCase(s, specialUpper, unicode.ToUpper)
}

// pyLower is Python's str.lower with full case mapping.
func pyLower(s string) string {
	if isASCII(s) {
		return strings.ToLower(s)
	}
	return mapCase(s, specialLower, unicode.ToLower)
}

// pyTitle is Python's str.title: a letter is uppercased when the previous
// character is not cased.
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, r := range s {
		cased := unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r)
		if cased {
			if prevCased {
				b.WriteRune(unicode.ToLower(r))
			} else {
				b.WriteRune(unicode.ToTitle(r))
			}
		} else {
			b.WriteRune(r)
		}
		prevCased = cased
	}
	return b.String()
}

// pyCapitalize is Python's str.capitalize.
func pyCapitalize(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 {
		return s
	}
	return string(unicode.ToTitle(r)) + pyLower(s[size:])
}

func pad(s, how string, width int, fill string) string {
	n := utf8.RuneCountInString(s)
	if width <= n {
		return s
	}
	total := width - n
	switch how {
	case "zfill":
		sign := ""
		if s != "" && (s[0] == '-' || s[0] == '+') {
			sign, s = s[:1], s[1:]
		}
		return sign + strings.Repeat("0", total) + s
	case "ljust":
		return s + strings.Repeat(fill, total)
	case "rjust":
		return strings.Repeat(fill, total) + s
	}
	left := total / 2
	if total%2 == 1 && width%2 == 1 {
		left++
	}
	return strings.Repeat(fill, left) + s + strings.Repeat(fill, total-left)
}
