package chattemplate

import (
	"math/big"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/synthpipe/synthpipe/lib/chattemplate/pyfmt"
)

// decodeJSON parses JSON into template values the way Python's json.loads
// does: objects keep their key order, integral literals become int and
// literals with a fraction or exponent become float.
func decodeJSON(data []byte) (value, error) {
	// One string for the whole document: the decoded strings without
	// escapes (nearly all of them) are slices of it rather than copies.
	d := &jsonDecoder{data: string(data)}
	d.skipSpace()
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.pos != len(d.data) {
		return nil, d.errorf("unexpected data after JSON value")
	}
	return v, nil
}

type jsonDecoder struct {
	data string
	pos  int
	// The body of the last string that had escapes, and its value: a
	// string that repeats it is not decoded again. An answer's message
	// may carry its reasoning under two names (chat.AssistantTurn,
	// generate's conversation.Options.ReasoningAlso).
	lastBody, lastValue string
}

const maxJSONDepth = 1000

func (d *jsonDecoder) errorf(msg string) error {
	return &RenderError{Kind: "ValueError", Msg: "invalid JSON input at offset " + strconv.Itoa(d.pos) + ": " + msg}
}

func (d *jsonDecoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *jsonDecoder) value(depth int) (value, error) {
	if depth > maxJSONDepth {
		return nil, d.errorf("nesting too deep")
	}
	if d.pos >= len(d.data) {
		return nil, d.errorf("unexpected end")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		d.pos++
		return d.object(depth)
	case c == '[':
		d.pos++
		return d.array(depth)
	case c == '"':
		return d.str()
	case c == 't' && strings.HasPrefix(d.data[d.pos:], "true"):
		d.pos += 4
		return true, nil
	case c == 'f' && strings.HasPrefix(d.data[d.pos:], "false"):
		d.pos += 5
		return false, nil
	case c == 'n' && strings.HasPrefix(d.data[d.pos:], "null"):
		d.pos += 4
		return nil, nil
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return nil, d.errorf("unexpected character")
}

// object reads an object's members, its '{' already read.
func (d *jsonDecoder) object(depth int) (value, error) {
	obj := newDict(4)
	obj.json = true
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return obj, nil
	}
	for {
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.errorf("expected object key")
		}
		k, err := d.key()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.errorf("expected ':'")
		}
		d.pos++
		d.skipSpace()
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		obj.set(k, v)
		d.skipSpace()
		if d.pos < len(d.data) && d.data[d.pos] == ',' {
			d.pos++
			continue
		}
		if d.pos < len(d.data) && d.data[d.pos] == '}' {
			d.pos++
			return obj, nil
		}
		return nil, d.errorf("expected ',' or '}'")
	}
}

// array reads an array's items, its '[' already read.
func (d *jsonDecoder) array(depth int) (value, error) {
	list := &pyList{}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return list, nil
	}
	for {
		d.skipSpace()
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		list.Items = append(list.Items, v)
		d.skipSpace()
		if d.pos < len(d.data) && d.data[d.pos] == ',' {
			d.pos++
			continue
		}
		if d.pos < len(d.data) && d.data[d.pos] == ']' {
			d.pos++
			return list, nil
		}
		return nil, d.errorf("expected ',' or ']'")
	}
}

func (d *jsonDecoder) number() (value, error) {
	start := d.pos
	isFloat := false
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if c >= '0' && c <= '9' || c == '-' || c == '+' {
			d.pos++
		} else if c == '.' || c == 'e' || c == 'E' {
			isFloat = true
			d.pos++
		} else {
			break
		}
	}
	text := d.data[start:d.pos]
	f, err := strconv.ParseFloat(text, 64)
	if !isFloat {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return n, nil
		}
		if n, ok := new(big.Int).SetString(text, 10); ok {
			return newBigInt(n)
		}
	}
	if err != nil && !strings.Contains(err.Error(), "range") {
		return nil, d.errorf("bad number")
	}
	return f, nil
}

// commonKeys are the object keys of chat messages and tool schemas, held
// as values already: every message repeats them, and an interned key costs
// neither a string nor its boxing into a value.
var commonKeys = func() map[string]value {
	keys := map[string]value{}
	for _, k := range []string{"role", "content", "name", "tool_calls", "tool_call_id", "id", "type",
		"function", "arguments", "reasoning_content", "reasoning", "thinking", "text",
		"description", "parameters", "properties", "required", "items", "enum"} {
		keys[k] = k
	}
	return keys
}()

// key reads an object key, interned when it is a common one.
func (d *jsonDecoder) key() (value, error) {
	if end := d.pos + 1 + strings.IndexByte(d.data[d.pos+1:], '"'); end > d.pos {
		if k, ok := commonKeys[d.data[d.pos+1:end]]; ok {
			d.pos = end + 1
			return k, nil
		}
	}
	return d.str()
}

func (d *jsonDecoder) str() (string, error) {
	if s, ok := d.wellFormedStr(); ok {
		return s, nil
	}
	start := d.pos
	d.pos++
	escaped := false
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '\\':
			escaped = true
			d.pos += 2
			continue
		case c == '"':
			d.pos++
			raw := d.data[start:d.pos]
			if !escaped {
				return raw[1 : len(raw)-1], nil
			}
			s, ok := unquote(raw[1 : len(raw)-1])
			if !ok {
				return "", d.errorf("bad string")
			}
			return s, nil
		case c < 0x20:
			return "", d.errorf("control character in string")
		}
		d.pos++
	}
	return "", d.errorf("unterminated string")
}

// wellFormedStr reads the string at d.pos when it is closed and holds no
// control character, finding its end and its escapes a word or a vector at
// a time (a message's content is most of the bytes decoded); false leaves
// d.pos where it was, for str's byte loop to read the string and say what
// is wrong with it.
func (d *jsonDecoder) wellFormedStr() (string, bool) {
	from := d.pos + 1
	end := from
	for {
		q := strings.IndexByte(d.data[end:], '"')
		if q < 0 {
			return "", false
		}
		end += q
		// A quote after an odd run of backslashes is escaped.
		bs := 0
		for end-1-bs >= from && d.data[end-1-bs] == '\\' {
			bs++
		}
		if bs%2 == 0 {
			break
		}
		end++
	}
	body := d.data[from:end]
	if strings.IndexByte(body, '\\') < 0 {
		if hasControl(body) {
			return "", false
		}
		d.pos = end + 1
		return body, true
	}
	if body == d.lastBody {
		d.pos = end + 1
		return d.lastValue, true
	}
	s, ok := unquote(body)
	if !ok {
		return "", false
	}
	d.pos = end + 1
	d.lastBody, d.lastValue = body, s
	return s, true
}

// Bytes of a word, for the tests below.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// hasControl tells whether s has a byte below 0x20.
func hasControl(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if x := word(s[i:]); (x-ones*0x20)&^x&highs != 0 {
			return true
		}
	}
	for ; i < len(s); i++ {
		if s[i] < 0x20 {
			return true
		}
	}
	return false
}

// word is the first 8 bytes of s, little-endian.
func word(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// unquote decodes the escapes of a JSON string's body, as encoding/json
// does: \uXXXX pairs of surrogates give their rune, a lone surrogate and
// bytes that are not UTF-8 give U+FFFD. ok is false for an escape JSON does
// not have and for a control character. The runs between escapes (most of
// a message) are copied whole, UTF-8 included.
func unquote(body string) (s string, ok bool) {
	b := make([]byte, 0, len(body))
	start := 0 // body[start:i] is copied as it is, when a byte asks for more
	for i := 0; ; {
		i = nextToDecode(body, i)
		if i == len(body) {
			break
		}
		c := body[i]
		if c >= utf8.RuneSelf {
			if r, n := utf8.DecodeRuneInString(body[i:]); r != utf8.RuneError || n > 1 {
				i += n
				continue
			}
			b = append(b, body[start:i]...)
			b = utf8.AppendRune(b, utf8.RuneError) // a byte that is not UTF-8
			i++
			start = i
			continue
		}
		if c < 0x20 || i+1 == len(body) {
			return "", false
		}
		b = append(b, body[start:i]...)
		if e := jsonEscapes[body[i+1]]; e != 0 {
			b = append(b, e)
			i += 2
		} else {
			if body[i+1] != 'u' {
				return "", false
			}
			r, n, ok := unquoteU(body[i:])
			if !ok {
				return "", false
			}
			b = utf8.AppendRune(b, r)
			i += n
		}
		start = i
	}
	b = append(b, body[start:]...)
	// b is no one else's: the string takes its bytes instead of a copy.
	return unsafe.String(unsafe.SliceData(b), len(b)), true
}

// nextToDecode is the index of the first byte of s from i that unquote
// must look at (a backslash, a control character, a byte from 0x80), or
// len(s). A word at a time: in x - n, a byte (high bit clear) below n
// borrows into its high bit, and borrows run only upwards, so the lowest
// flagged byte is one to look at, never a false one.
func nextToDecode(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		x := word(s[i:])
		backslash := x ^ ones*'\\'
		if m := ((x - ones*0x20) | (backslash - ones) | x) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			return i
		}
	}
	return i
}

// jsonEscapes are the one-letter escapes of JSON strings and what they stand for.
var jsonEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// unquoteU reads the \uXXXX escape s begins with, and the one after it
// when the two are a surrogate pair: the rune and the bytes read.
func unquoteU(s string) (r rune, n int, ok bool) {
	r, ok = readHex4(s)
	if !ok {
		return 0, 0, false
	}
	if !utf16.IsSurrogate(r) {
		return r, 6, true
	}
	if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
		if r2, ok := readHex4(s[6:]); ok {
			if pair := utf16.DecodeRune(r, r2); pair != unicode.ReplacementChar {
				return pair, 12, true
			}
		} else {
			return 0, 0, false
		}
	}
	return unicode.ReplacementChar, 6, true
}

// readHex4 reads the four hex digits of the \uXXXX escape s begins with.
func readHex4(s string) (rune, bool) {
	if len(s) < 6 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[2:6]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// jsonOptions are the arguments of transformers' tojson filter, which calls
// json.dumps(x, ensure_ascii=False, indent=indent, separators=separators,
// sort_keys=sort_keys).
type jsonOptions struct {
	indent      string
	hasIndent   bool
	itemSep     string
	keySep      string
	sortKeys    bool
	ensureASCII bool
}

func newJSONOptions() jsonOptions {
	return jsonOptions{itemSep: ", ", keySep: ": "}
}

// toJSON is Python's json.dumps with the given options.
func toJSON(v value, o jsonOptions) (string, error) {
	var b strings.Builder
	if err := writeJSON(&b, v, o, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeJSON(b *strings.Builder, v value, o jsonOptions, level int) error {
	if level > maxJSONDepth {
		return valueError("Circular reference detected")
	}
	if b.Len() > maxStringLen {
		return errTooLarge()
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(jsonFloat(x))
	case bigInt:
		b.WriteString(x.text)
	case string:
		writeJSONString(b, x, o.ensureASCII)
	case *pyList:
		return writeJSONList(b, x, o, level)
	case *pyDict:
		return writeJSONDict(b, x, o, level)
	default:
		return typeError("Object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

func writeJSONList(b *strings.Builder, x *pyList, o jsonOptions, level int) error {
	if x.view != "" {
		return typeError("Object of type %s is not JSON serializable", x.view)
	}
	if len(x.Items) == 0 {
		b.WriteString("[]")
		return nil
	}
	b.WriteByte('[')
	for i, it := range x.Items {
		if i > 0 {
			b.WriteString(o.itemSep)
		}
		o.newline(b, level+1)
		if err := writeJSON(b, it, o, level+1); err != nil {
			return err
		}
	}
	o.newline(b, level)
	b.WriteByte(']')
	return nil
}

// writeJSONDict writes a dict's pairs in insertion order, or sorted by key
// with sort_keys.
func writeJSONDict(b *strings.Builder, x *pyDict, o jsonOptions, level int) error {
	if x.len() == 0 {
		b.WriteString("{}")
		return nil
	}
	order := make([]int, x.len())
	for i := range order {
		order[i] = i
	}
	if o.sortKeys {
		var sortErr error
		sort.SliceStable(order, func(i, j int) bool {
			less, err := pyLess(x.keys[order[i]], x.keys[order[j]])
			if err != nil {
				sortErr = err
			}
			return less
		})
		if sortErr != nil {
			return sortErr
		}
	}
	b.WriteByte('{')
	for n, i := range order {
		if n > 0 {
			b.WriteString(o.itemSep)
		}
		o.newline(b, level+1)
		key, err := jsonKey(x.keys[i])
		if err != nil {
			return err
		}
		writeJSONString(b, key, o.ensureASCII)
		b.WriteString(o.keySep)
		if err := writeJSON(b, x.vals[i], o, level+1); err != nil {
			return err
		}
	}
	o.newline(b, level)
	b.WriteByte('}')
	return nil
}

func (o jsonOptions) newline(b *strings.Builder, level int) {
	if !o.hasIndent {
		return
	}
	b.WriteByte('\n')
	for i := 0; i < level; i++ {
		b.WriteString(o.indent)
	}
}

// jsonKey converts dict keys as json.dumps does.
func jsonKey(k value) (string, error) {
	switch x := k.(type) {
	case string:
		return x, nil
	case nil:
		return "null", nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return jsonFloat(x), nil
	}
	return "", typeError("keys must be str, int, float, bool or None, not %s", typeName(k))
}

func jsonFloat(f float64) string {
	switch s := pyfmt.FloatRepr(f); s {
	case "inf":
		return "Infinity"
	case "-inf":
		return "-Infinity"
	case "nan":
		return "NaN"
	default:
		return s
	}
}

// writeJSONString escapes like Python's json encoder: with ensure_ascii off
// only quotes, backslashes and control characters are escaped.
func writeJSONString(b *strings.Builder, s string, ensureASCII bool) {
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && (c < utf8.RuneSelf || !ensureASCII) {
			i++
			continue
		}
		b.WriteString(s[start:i])
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r >= 0x10000 {
				r -= 0x10000
				b.WriteString(`\u` + hex4(0xd800+int(r>>10)) + `\u` + hex4(0xdc00+int(r&0x3ff)))
			} else {
				b.WriteString(`\u` + hex4(int(r)))
			}
			i += size
			start = i
			continue
		}
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			b.WriteString(`\u` + hex4(int(c)))
		}
		i++
		start = i
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}

func hex4(n int) string {
	return hex2(n>>8) + hex2(n&0xff)
}
