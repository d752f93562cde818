package chattemplate

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/synthpipe/synthpipe/lib/chattemplate/pyfmt"
)

// Python's two string formatting languages: "fmt" % args and str.format,
// both built on the format-spec mini-language.

// formatSpec is a parsed [[fill]align][sign][#][0][width][grouping][.precision][type].
type formatSpec struct {
	fill      string
	align     byte // 0, '<', '>', '^', '='
	sign      byte // 0, '+', '-', ' '
	alternate bool
	zero      bool
	width     int
	grouping  byte // 0, ',', '_'
	precision int  // -1 when absent
	kind      byte // 0 or the type letter
}

func parseFormatSpec(spec string) (formatSpec, error) {
	fs := formatSpec{fill: " ", precision: -1}
	isAlign := func(c byte) bool { return c == '<' || c == '>' || c == '^' || c == '=' }
	if r, size := utf8.DecodeRuneInString(spec); size > 0 && size < len(spec) && isAlign(spec[size]) {
		fs.fill, fs.align, spec = string(r), spec[size], spec[size+1:]
	} else if spec != "" && isAlign(spec[0]) {
		fs.align, spec = spec[0], spec[1:]
	}
	if spec != "" && (spec[0] == '+' || spec[0] == '-' || spec[0] == ' ') {
		fs.sign, spec = spec[0], spec[1:]
	}
	if spec != "" && spec[0] == '#' {
		fs.alternate, spec = true, spec[1:]
	}
	if spec != "" && spec[0] == '0' {
		fs.zero, spec = true, spec[1:]
	}
	i := 0
	for i < len(spec) && spec[i] >= '0' && spec[i] <= '9' {
		i++
	}
	if i > 0 {
		fs.width, _ = strconv.Atoi(spec[:i])
		fs.width = min(fs.width, maxStringLen)
		spec = spec[i:]
	}
	if spec != "" && (spec[0] == ',' || spec[0] == '_') {
		fs.grouping, spec = spec[0], spec[1:]
	}
	if spec != "" && spec[0] == '.' {
		j := 1
		for j < len(spec) && spec[j] >= '0' && spec[j] <= '9' {
			j++
		}
		if j == 1 {
			return fs, valueError("Format specifier missing precision")
		}
		fs.precision, _ = strconv.Atoi(spec[1:j])
		fs.precision = min(fs.precision, 1000)
		spec = spec[j:]
	}
	if len(spec) > 1 {
		return fs, valueError("Invalid format specifier")
	}
	if spec != "" {
		fs.kind = spec[0]
	}
	return fs, nil
}

// formatWithSpec is Python's format(v, spec).
func formatWithSpec(v value, spec string) (string, error) {
	if spec == "" {
		return pyStr(v), nil
	}
	fs, err := parseFormatSpec(spec)
	if err != nil {
		return "", err
	}
	switch x := v.(type) {
	case string:
		if fs.kind != 0 && fs.kind != 's' {
			return "", valueError("Unknown format code '%c' for object of type 'str'", fs.kind)
		}
		if fs.precision >= 0 {
			if runes := []rune(x); len(runes) > fs.precision {
				x = string(runes[:fs.precision])
			}
		}
		return fs.pad("", x, '<'), nil
	case bool, int64:
		i, _, _, _ := toNumber(x)
		return fs.formatInt(i, typeName(v))
	case float64:
		return fs.formatFloat(x)
	case bigInt:
		if fs.kind == 0 || fs.kind == 'd' || fs.kind == 'n' {
			digits, neg := strings.CutPrefix(x.text, "-")
			return fs.pad(fs.signOf(neg), group(digits, fs.grouping), '>'), nil
		}
		f, err := bigToFloat(x)
		if err != nil {
			return "", err
		}
		return fs.formatFloat(f)
	}
	return "", typeError("unsupported format string passed to %s.__format__", typeName(v))
}

// pad applies width, fill and alignment; sign is kept in front of the
// padding for '=' alignment.
func (fs formatSpec) pad(sign, body string, defaultAlign byte) string {
	align, fill := fs.align, fs.fill
	if align == 0 {
		align = defaultAlign
		if fs.zero {
			align, fill = '=', "0"
		}
	}
	n := utf8.RuneCountInString(sign) + utf8.RuneCountInString(body)
	if fs.width <= n {
		return sign + body
	}
	gap := fs.width - n
	switch align {
	case '<':
		return sign + body + strings.Repeat(fill, gap)
	case '>':
		return strings.Repeat(fill, gap) + sign + body
	case '^':
		return strings.Repeat(fill, gap/2) + sign + body + strings.Repeat(fill, gap-gap/2)
	}
	return sign + strings.Repeat(fill, gap) + body
}

func (fs formatSpec) signOf(negative bool) string {
	switch {
	case negative:
		return "-"
	case fs.sign == '+':
		return "+"
	case fs.sign == ' ':
		return " "
	}
	return ""
}

func group(digits string, sep byte) string {
	if sep == 0 || len(digits) <= 3 {
		return digits
	}
	var b strings.Builder
	lead := len(digits) % 3
	if lead > 0 {
		b.WriteString(digits[:lead])
	}
	for i := lead; i < len(digits); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(sep)
		}
		b.WriteString(digits[i : i+3])
	}
	return b.String()
}

func (fs formatSpec) formatInt(i int64, typ string) (string, error) {
	neg := i < 0
	u := uint64(i)
	if neg {
		u = uint64(-i)
	}
	var body, prefix string
	switch fs.kind {
	case 0, 'd', 'n':
		body = group(strconv.FormatUint(u, 10), fs.grouping)
	case 'b':
		body, prefix = strconv.FormatUint(u, 2), "0b"
	case 'o':
		body, prefix = strconv.FormatUint(u, 8), "0o"
	case 'x':
		body, prefix = strconv.FormatUint(u, 16), "0x"
	case 'X':
		body, prefix = strings.ToUpper(strconv.FormatUint(u, 16)), "0X"
	case 'c':
		return fs.pad("", string(rune(i)), '<'), nil
	case 'e', 'E', 'f', 'F', 'g', 'G', '%':
		return fs.formatFloat(float64(i))
	default:
		return "", valueError("Unknown format code '%c' for object of type '%s'", fs.kind, typ)
	}
	if !fs.alternate {
		prefix = ""
	}
	return fs.pad(fs.signOf(neg)+prefix, body, '>'), nil
}

func (fs formatSpec) formatFloat(f float64) (string, error) {
	neg := math.Signbit(f) && !math.IsNaN(f)
	a := math.Abs(f)
	prec := fs.precision
	var body string
	switch fs.kind {
	case 'f', 'F':
		if prec < 0 {
			prec = 6
		}
		body = strconv.FormatFloat(a, 'f', prec, 64)
	case 'e', 'E':
		if prec < 0 {
			prec = 6
		}
		body = strconv.FormatFloat(a, 'e', prec, 64)
	case '%':
		if prec < 0 {
			prec = 6
		}
		body = strconv.FormatFloat(a*100, 'f', prec, 64) + "%"
	case 'g', 'G', 'n':
		if prec < 0 {
			prec = 6
		}
		body = formatGeneral(a, max(prec, 1), fs.alternate)
	case 0:
		if prec < 0 {
			body = pyfmt.FloatRepr(a)
		} else {
			body = formatGeneral(a, max(prec, 1), fs.alternate)
			if !strings.ContainsAny(body, ".en") {
				body += ".0"
			}
		}
	default:
		return "", valueError("Unknown format code '%c' for object of type 'float'", fs.kind)
	}
	if math.IsInf(a, 0) {
		body = "inf"
	} else if math.IsNaN(a) {
		body = "nan"
	}
	if fs.kind == 'E' || fs.kind == 'G' || fs.kind == 'F' {
		body = strings.ToUpper(body)
	}
	if fs.grouping != 0 {
		intPart, rest := body, ""
		if i := strings.IndexAny(body, ".e%"); i >= 0 {
			intPart, rest = body[:i], body[i:]
		}
		body = group(intPart, fs.grouping) + rest
	}
	return fs.pad(fs.signOf(neg), body, '>'), nil
}

// formatGeneral is the 'g' presentation: prec significant digits, fixed or
// scientific depending on the exponent, trailing zeros removed.
func formatGeneral(a float64, prec int, keepZeros bool) string {
	if a == 0 || math.IsInf(a, 0) || math.IsNaN(a) {
		if keepZeros && a == 0 {
			return "0." + strings.Repeat("0", prec-1)
		}
		return strconv.FormatFloat(a, 'f', -1, 64)
	}
	e := strconv.FormatFloat(a, 'e', prec-1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	var s string
	if exp >= -4 && exp < prec {
		s = strconv.FormatFloat(a, 'f', prec-1-exp, 64)
		if !keepZeros && strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
	mant, expPart, _ := strings.Cut(e, "e")
	if !keepZeros && strings.Contains(mant, ".") {
		mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
	}
	return mant + "e" + expPart
}

// percentFormat is Python's "format" % args.
// percentState walks a printf-style format string for Python's % operator:
// the position in the format, the positional arguments taken so far and
// whether a %(key)s conversion read the mapping.
type percentState struct {
	format      string
	i           int
	args        []value
	next        int
	mapping     *pyDict
	usedMapping bool
}

func percentFormat(format string, arg value) (value, error) {
	st := &percentState{format: format}
	st.mapping, _ = arg.(*pyDict)
	if l, ok := arg.(*pyList); ok && l.Tuple {
		st.args = l.Items
	} else {
		st.args = []value{arg}
	}
	var b strings.Builder
	for ; st.i < len(format); st.i++ {
		c := format[st.i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		st.i++
		text, err := st.conversion()
		if err != nil {
			return nil, err
		}
		b.WriteString(text)
		if b.Len() > maxStringLen {
			return nil, errTooLarge()
		}
	}
	// Python only complains about unused arguments when the right side is
	// not mapping-like (lists and dicts count as mappings there).
	mappingLike := false
	switch x := arg.(type) {
	case *pyList:
		mappingLike = !x.Tuple
	case *undefinedValue:
		mappingLike = true
	}
	if st.next < len(st.args) && !st.usedMapping && st.mapping == nil && !mappingLike {
		return nil, typeError("not all arguments converted during string formatting")
	}
	return b.String(), nil
}

// conversion formats one conversion, st.i just past its '%', and leaves st.i
// on its conversion character.
func (st *percentState) conversion() (string, error) {
	format := st.format
	if st.i >= len(format) {
		return "", valueError("incomplete format")
	}
	a, haveArg, err := st.mappingKey()
	if err != nil {
		return "", err
	}
	fs := st.flags()
	if fs.width, err = st.number(); err != nil {
		return "", err
	}
	if st.i < len(format) && format[st.i] == '.' {
		st.i++
		if fs.precision, err = st.number(); err != nil {
			return "", err
		}
		fs.precision = min(fs.precision, 1000)
	}
	for st.i < len(format) && (format[st.i] == 'l' || format[st.i] == 'h' || format[st.i] == 'L') {
		st.i++
	}
	if st.i >= len(format) {
		return "", valueError("incomplete format")
	}
	conv := format[st.i]
	if conv == '%' {
		return "%", nil
	}
	if !haveArg {
		if a, err = st.nextArg(); err != nil {
			return "", err
		}
	}
	if fs.align == '<' {
		fs.zero = false
	}
	return percentConvert(fs, conv, a)
}

// nextArg takes the next positional argument.
func (st *percentState) nextArg() (value, error) {
	if st.next >= len(st.args) {
		return nil, typeError("not enough arguments for format string")
	}
	st.next++
	return st.args[st.next-1], nil
}

// mappingKey reads a %(key) prefix, if there is one, and returns its value
// from the mapping.
func (st *percentState) mappingKey() (value, bool, error) {
	format := st.format
	if format[st.i] != '(' {
		return nil, false, nil
	}
	end := strings.IndexByte(format[st.i:], ')')
	if end < 0 {
		return nil, false, valueError("incomplete format key")
	}
	if st.mapping == nil {
		return nil, false, typeError("format requires a mapping")
	}
	key := format[st.i+1 : st.i+end]
	v, ok := st.mapping.get(key)
	if !ok {
		return nil, false, &RenderError{Kind: "KeyError", Msg: pyRepr(key)}
	}
	st.usedMapping = true
	st.i += end + 1
	return v, true, nil
}

// flags reads the conversion flags (-, +, space, #, 0).
func (st *percentState) flags() formatSpec {
	fs := formatSpec{fill: " ", precision: -1}
	for ; st.i < len(st.format); st.i++ {
		switch st.format[st.i] {
		case '-':
			fs.align = '<'
		case '+':
			fs.sign = '+'
		case ' ':
			if fs.sign == 0 {
				fs.sign = ' '
			}
		case '#':
			fs.alternate = true
		case '0':
			fs.zero = true
		default:
			return fs
		}
	}
	return fs
}

// number reads a width or precision: digits, or '*' for the next argument.
func (st *percentState) number() (int, error) {
	format := st.format
	if st.i < len(format) && format[st.i] == '*' {
		st.i++
		v, err := st.nextArg()
		if err != nil {
			return 0, err
		}
		n, ok := indexKey(v)
		if !ok {
			return 0, typeError("* wants int")
		}
		return int(min(n, maxStringLen)), nil
	}
	start := st.i
	for st.i < len(format) && format[st.i] >= '0' && format[st.i] <= '9' {
		st.i++
	}
	n, _ := strconv.Atoi(format[start:st.i])
	return min(n, maxStringLen), nil
}

func percentConvert(fs formatSpec, conv byte, a value) (string, error) {
	switch conv {
	case 's', 'r', 'a':
		text := pyStr(a)
		if conv != 's' {
			text = pyRepr(a)
		}
		if fs.precision >= 0 {
			if runes := []rune(text); len(runes) > fs.precision {
				text = string(runes[:fs.precision])
			}
		}
		fs.zero = false
		return fs.pad("", text, '>'), nil
	case 'c':
		switch x := a.(type) {
		case string:
			if utf8.RuneCountInString(x) != 1 {
				return "", typeError("%%c requires int or char")
			}
			return fs.pad("", x, '>'), nil
		case int64:
			return fs.pad("", string(rune(x)), '>'), nil
		}
		return "", typeError("%%c requires int or char")
	case 'd', 'i', 'u', 'o', 'x', 'X':
		_, _, _, ok := toNumber(a)
		if !ok {
			return "", typeError("%%%c format: a real number is required, not %s", conv, typeName(a))
		}
		n, err := toInt(a)
		if err != nil {
			return "", err
		}
		fs.kind = conv
		if conv == 'i' || conv == 'u' {
			fs.kind = 'd'
		}
		if fs.precision >= 0 {
			fs.precision = -1
		}
		return fs.formatInt(n, typeName(a))
	case 'e', 'E', 'f', 'F', 'g', 'G':
		_, f, _, ok := toNumber(a)
		if !ok {
			return "", typeError("must be real number, not %s", typeName(a))
		}
		fs.kind = conv
		return fs.formatFloat(f)
	}
	return "", valueError("unsupported format character '%c' (0x%x)", conv, conv)
}

// pyFormat is str.format with positional and keyword fields, attribute and
// index lookups in field names, !r/!s conversions and format specs.
func pyFormat(format string, args []value, kw *kwargs) (value, error) {
	var b strings.Builder
	auto := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c == '}' {
			if i+1 < len(format) && format[i+1] == '}' {
				i++
				b.WriteByte('}')
				continue
			}
			return nil, valueError("Single '}' encountered in format string")
		}
		if c != '{' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(format) && format[i+1] == '{' {
			b.WriteByte('{')
			i++
			continue
		}
		end := strings.IndexByte(format[i:], '}')
		if end < 0 {
			return nil, valueError("Single '{' encountered in format string")
		}
		field := format[i+1 : i+end]
		i += end
		text, err := formatField(field, args, kw, &auto)
		if err != nil {
			return nil, err
		}
		b.WriteString(text)
		if b.Len() > maxStringLen {
			return nil, errTooLarge()
		}
	}
	return b.String(), nil
}

// formatField formats one {field!conv:spec} of str.format: the argument it
// names (auto counts the empty names), then its .attr and [key] path.
func formatField(field string, args []value, kw *kwargs, auto *int) (string, error) {
	field, spec, _ := strings.Cut(field, ":")
	field, conv, _ := strings.Cut(field, "!")
	nameEnd := strings.IndexAny(field, ".[")
	if nameEnd < 0 {
		nameEnd = len(field)
	}
	name, path := field[:nameEnd], field[nameEnd:]
	var v value
	switch {
	case name == "":
		if *auto >= len(args) {
			return "", &RenderError{Kind: "IndexError", Msg: "tuple index out of range"}
		}
		v = args[*auto]
		*auto++
	case name[0] >= '0' && name[0] <= '9':
		n, _ := strconv.Atoi(name)
		if n >= len(args) {
			return "", &RenderError{Kind: "IndexError", Msg: "tuple index out of range"}
		}
		v = args[n]
	default:
		var ok bool
		if v, ok = kw.get(name); !ok {
			return "", &RenderError{Kind: "KeyError", Msg: pyRepr(name)}
		}
	}
	v, err := formatFieldPath(v, path)
	if err != nil {
		return "", err
	}
	switch conv {
	case "r", "a":
		v = pyRepr(v)
	case "s":
		v = pyStr(v)
	}
	return formatWithSpec(v, spec)
}

// formatFieldPath follows a field's .attr and [key] steps from v; a key of
// digits is an integer index.
func formatFieldPath(v value, path string) (value, error) {
	for path != "" {
		var err error
		if path[0] == '.' {
			j := strings.IndexAny(path[1:], ".[")
			if j < 0 {
				j = len(path) - 1
			}
			v, err = getAttr(v, path[1:1+j])
			path = path[1+j:]
		} else {
			j := strings.IndexByte(path, ']')
			if j < 0 {
				return nil, valueError("Missing ']' in format string")
			}
			var key value = path[1:j]
			if n, convErr := strconv.ParseInt(path[1:j], 10, 64); convErr == nil {
				key = n
			}
			v, err = getItem(v, key)
			path = path[j+1:]
		}
		if err != nil {
			return nil, err
		}
	}
	return v, nil
}
