package chattemplate

import (
	"strconv"
	"strings"
	"time"
)

// globals are the functions every template sees: jinja2's defaults that
// chat templates use plus transformers' raise_exception and strftime_now.
var globals map[string]value

func init() {
	globals = map[string]value{
		"range":           &builtinFunc{"range", globalRange},
		"namespace":       &builtinFunc{"namespace", globalNamespace},
		"dict":            &builtinFunc{"dict", globalDict},
		"raise_exception": &builtinFunc{"raise_exception", globalRaiseException},
		"strftime_now":    &builtinFunc{"strftime_now", globalStrftimeNow},
		"joiner":          &builtinFunc{"joiner", globalJoiner},
		"cycler":          &builtinFunc{"cycler", globalCycler},
	}
}

func globalRange(r *renderer, args []value, kw *kwargs) (value, error) {
	ints := make([]int64, len(args))
	for i, a := range args {
		n, ok := indexKey(a)
		if !ok {
			return nil, typeError("'%s' object cannot be interpreted as an integer", typeName(a))
		}
		ints[i] = n
	}
	rv := rangeValue{step: 1}
	switch len(ints) {
	case 1:
		rv.stop = ints[0]
	case 2:
		rv.start, rv.stop = ints[0], ints[1]
	case 3:
		rv.start, rv.stop, rv.step = ints[0], ints[1], ints[2]
		if rv.step == 0 {
			return nil, valueError("range() arg 3 must not be zero")
		}
	default:
		return nil, typeError("range expected at most 3 arguments, got %d", len(ints))
	}
	if rv.len() > maxRangeItems {
		return nil, &RenderError{Kind: "OverflowError", Msg: "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000)."}
	}
	return rv, nil
}

// dictFromArgs is Python's dict(mapping_or_pairs, **kwargs).
func dictFromArgs(r *renderer, args []value, kw *kwargs) (*pyDict, error) {
	d := newDict(4)
	if len(args) > 1 {
		return nil, typeError("dict expected at most 1 argument, got %d", len(args))
	}
	if len(args) == 1 {
		switch src := args[0].(type) {
		case *pyDict:
			for i, k := range src.keys {
				d.set(k, src.vals[i])
			}
		default:
			items, err := r.iterate(src)
			if err != nil {
				return nil, err
			}
			for _, it := range items {
				pair, err := r.iterate(it)
				if err != nil || len(pair) != 2 {
					return nil, valueError("dictionary update sequence element has wrong length")
				}
				if !isHashable(pair[0]) {
					return nil, typeError("unhashable type: '%s'", typeName(pair[0]))
				}
				d.set(pair[0], pair[1])
			}
		}
	}
	if kw != nil {
		for i, n := range kw.names {
			d.set(n, kw.vals[i])
		}
	}
	return d, nil
}

func globalNamespace(r *renderer, args []value, kw *kwargs) (value, error) {
	d, err := dictFromArgs(r, args, kw)
	if err != nil {
		return nil, err
	}
	return &namespaceValue{attrs: d}, nil
}

func globalDict(r *renderer, args []value, kw *kwargs) (value, error) {
	return dictFromArgs(r, args, kw)
}

func globalRaiseException(r *renderer, args []value, kw *kwargs) (value, error) {
	msg := ""
	if len(args) > 0 {
		msg = pyStr(args[0])
	} else if v, ok := kw.get("message"); ok {
		msg = pyStr(v)
	}
	return nil, &TemplateError{Message: msg}
}

func globalStrftimeNow(r *renderer, args []value, kw *kwargs) (value, error) {
	if len(args) != 1 {
		return nil, typeError("strftime_now() takes exactly one argument")
	}
	format, ok := args[0].(string)
	if !ok {
		return nil, typeError("strftime() argument 1 must be str, not %s", typeName(args[0]))
	}
	now := time.Now
	if r.now != nil {
		now = r.now
	}
	return strftime(now(), format), nil
}

// strftime implements the C/Python strftime directives (including glibc's
// "-" flag that drops padding).
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 >= len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		noPad := false
		if format[i] == '-' && i+1 < len(format) {
			noPad = true
			i++
		}
		b.WriteString(strftimeField(t, format[i], noPad))
	}
	return b.String()
}

// strftimeNumbers are the numeric directives: the value and the width it is
// zero-padded to (unless the directive is written %-X).
var strftimeNumbers = map[byte]struct {
	get   func(time.Time) int
	width int
}{
	'Y': {func(t time.Time) int { return t.Year() }, 4},
	'y': {func(t time.Time) int { return t.Year() % 100 }, 2},
	'm': {func(t time.Time) int { return int(t.Month()) }, 2},
	'd': {func(t time.Time) int { return t.Day() }, 2},
	'H': {func(t time.Time) int { return t.Hour() }, 2},
	'I': {func(t time.Time) int { return (t.Hour()+11)%12 + 1 }, 2},
	'M': {func(t time.Time) int { return t.Minute() }, 2},
	'S': {func(t time.Time) int { return t.Second() }, 2},
	'f': {func(t time.Time) int { return t.Nanosecond() / 1000 }, 6},
	'j': {func(t time.Time) int { return t.YearDay() }, 3},
	'w': {func(t time.Time) int { return int(t.Weekday()) }, 1},
	'u': {func(t time.Time) int { return (int(t.Weekday())+6)%7 + 1 }, 1},
}

// strftimeTexts are the directives that print a name or a fixed layout.
var strftimeTexts = map[byte]func(time.Time) string{
	'p': func(t time.Time) string {
		if t.Hour() < 12 {
			return "AM"
		}
		return "PM"
	},
	'b': func(t time.Time) string { return t.Month().String()[:3] },
	'h': func(t time.Time) string { return t.Month().String()[:3] },
	'B': func(t time.Time) string { return t.Month().String() },
	'a': func(t time.Time) string { return t.Weekday().String()[:3] },
	'A': func(t time.Time) string { return t.Weekday().String() },
	'Z': func(t time.Time) string { name, _ := t.Zone(); return name },
	'z': func(t time.Time) string { return t.Format("-0700") },
	'F': func(t time.Time) string { return t.Format("2006-01-02") },
	'T': func(t time.Time) string { return t.Format("15:04:05") },
	'D': func(t time.Time) string { return t.Format("01/02/06") },
	'R': func(t time.Time) string { return t.Format("15:04") },
	'c': func(t time.Time) string { return t.Format("Mon Jan  2 15:04:05 2006") },
	'x': func(t time.Time) string { return t.Format("01/02/06") },
	'X': func(t time.Time) string { return t.Format("15:04:05") },
	'n': func(time.Time) string { return "\n" },
	't': func(time.Time) string { return "\t" },
	'%': func(time.Time) string { return "%" },
}

// strftimeField formats one directive, as C's strftime (which Python's
// calls) does; an unknown directive is printed as written.
func strftimeField(t time.Time, verb byte, noPad bool) string {
	if n, ok := strftimeNumbers[verb]; ok {
		s := strconv.Itoa(n.get(t))
		if !noPad && len(s) < n.width {
			s = strings.Repeat("0", n.width-len(s)) + s
		}
		return s
	}
	if text, ok := strftimeTexts[verb]; ok {
		return text(t)
	}
	if verb == 'e' {
		s := strconv.Itoa(t.Day())
		if len(s) < 2 && !noPad {
			s = " " + s
		}
		return s
	}
	return string([]byte{'%', verb})
}

// globalJoiner returns a function that yields "" the first time and sep
// afterwards.
func globalJoiner(r *renderer, args []value, kw *kwargs) (value, error) {
	sep := pyStr(argAt(args, kw, 0, "sep", ", "))
	used := false
	return &builtinFunc{"joiner", func(*renderer, []value, *kwargs) (value, error) {
		if !used {
			used = true
			return "", nil
		}
		return sep, nil
	}}, nil
}

// globalCycler supports cycler(...).next() through a callable with state.
func globalCycler(r *renderer, args []value, kw *kwargs) (value, error) {
	if len(args) == 0 {
		return nil, typeError("at least one item has to be provided")
	}
	d := newDict(2)
	pos := 0
	d.set("next", &builtinFunc{"next", func(*renderer, []value, *kwargs) (value, error) {
		v := args[pos%len(args)]
		pos++
		return v, nil
	}})
	d.set("reset", &builtinFunc{"reset", func(*renderer, []value, *kwargs) (value, error) {
		pos = 0
		return nil, nil
	}})
	return &namespaceValue{attrs: d}, nil
}
