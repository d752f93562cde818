package chattemplate

import (
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/synthpipe/synthpipe/lib/chattemplate/pyfmt"
)

// Values are plain Go values so that the evaluator can dispatch with type
// switches instead of reflection:
//
//	nil             Python None
//	bool            Python bool
//	int64, bigInt   Python int
//	float64         Python float
//	string          Python str
//	*pyList         Python list or tuple
//	*pyDict         Python dict (insertion ordered, as JSON objects and dict literals are)
//	*namespaceValue jinja2 namespace()
//	*undefinedValue jinja2 Undefined
//	*macroValue, *builtinFunc, *boundMethod, *loopState, rangeValue: callables and helpers
type value = any

// pyList is a Python list or tuple.
type pyList struct {
	Items []value
	Tuple bool
	// fields names the items of a namedtuple (groupby results).
	fields []string
	// view is "dict_keys", "dict_values" or "dict_items" for what
	// dict.keys()/values()/items() return: iterable, but printed
	// differently and without list methods or indexing.
	view string
}

// rawRepr is text that writeRepr emits verbatim.
type rawRepr string

// pyDict is a Python dict that keeps insertion order. Keys are hashable
// values: scalars and tuples of them.
type pyDict struct {
	keys  []value
	vals  []value
	nkeys []value // normKey of each key
	// index maps normalised keys to positions once the dict is big enough
	// for hashing to beat a scan; message objects usually stay below that.
	index map[value]int
	// json: decoded from JSON (a message), so it holds JSON values only
	// and never changes; a loop may key what it rendered for it by its
	// address (see loopmemo.go).
	json bool
}

const dictIndexThreshold = 12

// smallDict is a dict of up to smallDictCap items and the arrays its
// slices start in (newDict).
type smallDict struct {
	d                 pyDict
	keys, vals, nkeys [smallDictCap]value
}

const smallDictCap = 4

// newDict makes an empty dict with room for capacity items. The three
// slices share one allocation: templates build a dict for every message
// object they see, so this is on the path of every render.
func newDict(capacity int) *pyDict {
	if capacity == smallDictCap {
		// The common size (a message, a namespace) in one allocation
		// with its slices rather than two.
		sd := new(smallDict)
		sd.d.keys, sd.d.vals, sd.d.nkeys = sd.keys[:0], sd.vals[:0], sd.nkeys[:0]
		return &sd.d
	}
	backing := make([]value, 3*capacity)
	return &pyDict{
		keys:  backing[0:0:capacity],
		vals:  backing[capacity : capacity : 2*capacity],
		nkeys: backing[2*capacity : 2*capacity : 3*capacity],
	}
}

func (d *pyDict) find(nk value) int {
	if d.index != nil {
		if i, ok := d.index[nk]; ok {
			return i
		}
		return -1
	}
	for i, k := range d.nkeys {
		if k == nk {
			return i
		}
	}
	return -1
}

// tupleKey stands for a tuple used as a dict key.
type tupleKey struct{ repr string }

// normKey maps keys that Python considers equal (1, 1.0, True) to one Go key.
func normKey(k value) value {
	switch x := k.(type) {
	case *pyList:
		return tupleKey{pyRepr(x)}
	case bool:
		if x {
			return int64(1)
		}
		return int64(0)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<62 {
			return int64(x)
		}
	}
	return k
}

// getString looks up a string key without boxing it into an interface,
// which is the common case of attribute access on JSON objects.
func (d *pyDict) getString(k string) (value, bool) {
	if d.index == nil {
		for i, nk := range d.nkeys {
			if s, ok := nk.(string); ok && s == k {
				return d.vals[i], true
			}
		}
		return nil, false
	}
	return d.get(k)
}

func (d *pyDict) get(k value) (value, bool) {
	if !isHashable(k) {
		return nil, false
	}
	if i := d.find(normKey(k)); i >= 0 {
		return d.vals[i], true
	}
	return nil, false
}

func (d *pyDict) set(k, v value) {
	nk := normKey(k)
	if i := d.find(nk); i >= 0 {
		d.vals[i] = v
		return
	}
	d.keys = append(d.keys, k)
	d.vals = append(d.vals, v)
	d.nkeys = append(d.nkeys, nk)
	if d.index != nil {
		d.index[nk] = len(d.keys) - 1
	} else if len(d.keys) > dictIndexThreshold {
		d.index = make(map[value]int, 2*len(d.keys))
		for i, n := range d.nkeys {
			d.index[n] = i
		}
	}
}

func (d *pyDict) len() int { return len(d.keys) }

func isHashable(v value) bool {
	switch x := v.(type) {
	case nil, bool, int64, float64, string, bigInt:
		return true
	case *pyList:
		if !x.Tuple {
			return false
		}
		for _, it := range x.Items {
			if !isHashable(it) {
				return false
			}
		}
		return true
	}
	return false
}

// bigInt is a Python int beyond int64 (see bigint.go): text holds its
// exact digits, f its value as a float.
type bigInt struct {
	text string
	f    float64
}

// iterValue is a one-shot Python iterator: the generators that jinja2's
// map, select, reject, selectattr, rejectattr, unique, batch, slice and
// items filters return, and the iterator reverse() returns for a list.
// Iterating it consumes it; it has no len(), cannot be indexed or sliced,
// and is always true, so "x|selectattr(...)|length" fails and
// "{% if x|selectattr(...) %}" always holds, as in jinja2. Its items are
// computed when it is made.
type iterValue struct {
	typ   string // Python's type name: "generator", "list_reverseiterator", ...
	fn    string // the generator function, named in its repr
	items []value
	pos   int
	err   error // raised on first use (items of a non-mapping)
}

func newGenerator(fn string, items []value) *iterValue {
	return &iterValue{typ: "generator", fn: fn, items: items}
}

// consume returns the items not yet taken and exhausts the iterator.
func (it *iterValue) consume() ([]value, error) {
	if err := it.err; err != nil {
		it.err = nil
		it.pos = len(it.items)
		return nil, err
	}
	rest := it.items[it.pos:]
	it.pos = len(it.items)
	return rest, nil
}

// namespaceValue is the mutable attribute bag made by namespace().
type namespaceValue struct {
	attrs *pyDict
}

// undefinedValue is jinja2's default Undefined: falsy, renders empty, and fails
// when used in arithmetic, called, or asked for an attribute.
type undefinedValue struct {
	hint string // the full message when the reason is known (sandbox, missing attribute)
	name string
	// kind is the Python exception name raised when this value is misused.
	kind string
}

func (u *undefinedValue) message() string {
	if u.hint != "" {
		return u.hint
	}
	return "'" + u.name + "' is undefined"
}

func (u *undefinedValue) fail() error {
	kind := u.kind
	if kind == "" {
		kind = "UndefinedError"
	}
	return &RenderError{Kind: kind, Msg: u.message()}
}

func undefinedAttr(obj value, name string) *undefinedValue {
	return &undefinedValue{name: name, hint: "'" + describeForUndefined(obj) + "' has no attribute '" + name + "'"}
}

func undefinedItem(obj value, key value) *undefinedValue {
	if s, ok := key.(string); ok {
		return undefinedAttr(obj, s)
	}
	return &undefinedValue{hint: "'" + describeForUndefined(obj) + "' has no attribute " + pyRepr(key)}
}

// describeForUndefined follows jinja2's object_type_repr: builtins by type
// name, jinja2's own classes with their module.
func describeForUndefined(obj value) string {
	switch obj.(type) {
	case nil:
		return "None"
	case *namespaceValue:
		return "jinja2.utils.Namespace object"
	case *loopState:
		return "jinja2.runtime.LoopContext object"
	case *macroValue:
		return "jinja2.runtime.Macro object"
	}
	return typeName(obj) + " object"
}

// typeName is Python's type(x).__name__.
func typeName(v value) string {
	switch x := v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64, bigInt:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case *pyList:
		if x.view != "" {
			return x.view
		}
		if x.Tuple {
			return "tuple"
		}
		return "list"
	case *pyDict:
		return "dict"
	case *namespaceValue:
		return "Namespace"
	case *undefinedValue:
		return "Undefined"
	case *macroValue:
		return "Macro"
	case *loopState:
		return "LoopContext"
	case rangeValue:
		return "range"
	case *iterValue:
		return x.typ
	}
	return "function"
}

// truthy is Python's bool().
func truthy(v value) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case bigInt:
		return true
	case string:
		return x != ""
	case *pyList:
		return len(x.Items) > 0
	case *pyDict:
		return x.len() > 0
	case *undefinedValue:
		return false
	case rangeValue:
		return x.len() > 0
	}
	return true
}

// pyStr is Python's str() as jinja2 uses it when printing.
// maxReprDepth stops repr of values that contain themselves (a namespace
// stored in its own attribute).
const maxReprDepth = 200

func pyStr(v value) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "None"
	case *undefinedValue:
		return ""
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return pyfmt.FloatRepr(x)
	case bigInt:
		return x.text
	}
	return pyRepr(v)
}

// pyRepr is Python's repr().
func pyRepr(v value) string {
	var b strings.Builder
	writeRepr(&b, v, nil)
	return b.String()
}

// writeRepr appends repr(v). open lists the dicts being printed: a dict
// reached again through itself prints as {...}, as Python does.
func writeRepr(b *strings.Builder, v value, open []*pyDict) {
	if len(open) > maxReprDepth || b.Len() > maxStringLen {
		b.WriteString("...")
		return
	}
	switch x := v.(type) {
	case string:
		writeStringRepr(b, x)
	case *pyList:
		opening, closing := "[", "]"
		if x.Tuple {
			opening, closing = "(", ")"
		} else if x.view != "" {
			opening, closing = x.view+"([", "])"
		}
		b.WriteString(opening)
		for i, it := range x.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, it, open)
		}
		if x.Tuple && len(x.Items) == 1 {
			b.WriteString(",")
		}
		b.WriteString(closing)
	case *pyDict:
		for _, d := range open {
			if d == x {
				b.WriteString("{...}")
				return
			}
		}
		open = append(open, x)
		b.WriteString("{")
		for i, k := range x.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, k, open)
			b.WriteString(": ")
			writeRepr(b, x.vals[i], open)
		}
		b.WriteString("}")
	case *namespaceValue:
		b.WriteString("<Namespace ")
		writeRepr(b, x.attrs, open)
		b.WriteString(">")
	case *undefinedValue:
		b.WriteString("Undefined")
	case rangeValue:
		b.WriteString("range(" + strconv.FormatInt(x.start, 10) + ", " + strconv.FormatInt(x.stop, 10))
		if x.step != 1 {
			b.WriteString(", " + strconv.FormatInt(x.step, 10))
		}
		b.WriteString(")")
	case *macroValue:
		if x.def.anonymous {
			b.WriteString("<Macro anonymous>")
		} else {
			b.WriteString("<Macro '" + x.def.name + "'>")
		}
	case *builtinFunc, *boundMethod:
		b.WriteString("<built-in function>")
	case *loopState:
		b.WriteString("<LoopContext " + strconv.Itoa(x.index+1) + "/" + strconv.Itoa(len(x.items)) + ">")
	case *iterValue:
		// Python prints the object's address, which no render can
		// reproduce.
		if x.typ == "generator" {
			b.WriteString("<generator object " + x.fn + " at 0x7f0000000000>")
		} else {
			b.WriteString("<" + x.typ + " object at 0x7f0000000000>")
		}
	case rawRepr:
		b.WriteString(string(x))
	default:
		b.WriteString(pyStr(v))
	}
}

// writeStringRepr quotes like Python: single quotes unless the text has a
// single quote and no double quote.
func writeStringRepr(b *strings.Builder, s string) {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x` + hex2(int(r)))
		case r >= 0x80 && !unicode.IsPrint(r):
			// Python escapes what str.isprintable rejects: other
			// separators, format and private-use characters.
			switch {
			case r < 0x100:
				b.WriteString(`\x` + hex2(int(r)))
			case r < 0x10000:
				b.WriteString(`\u` + hex4(int(r)))
			default:
				b.WriteString(`\U` + hex4(int(r>>16)) + hex4(int(r&0xffff)))
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(quote)
}

func hex2(n int) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[n>>4&0xf], digits[n&0xf]})
}

// rangeValue is Python's range object; it is materialised lazily.
type rangeValue struct {
	start, stop, step int64
}

func (r rangeValue) len() int64 {
	if r.step > 0 && r.start < r.stop {
		return (r.stop - r.start + r.step - 1) / r.step
	}
	if r.step < 0 && r.start > r.stop {
		return (r.start - r.stop - r.step - 1) / -r.step
	}
	return 0
}
