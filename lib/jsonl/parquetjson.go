package jsonl

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"math/big"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// rowJSON writes a Parquet row as one JSON object: its columns in the
// file's order, nested columns as the JSON a user would write (lists as
// arrays, structs as objects in field order, maps with string keys as
// objects, nulls as null).
//
// A row holds, for each leaf column, its values in order, each with its
// repetition and definition levels (Dremel's encoding); the writer walks
// the schema and takes each leaf's values as it goes: a node whose first
// leaf's next value is defined below the node's own level is null (an
// optional node) or empty (a repeated one), and a repeated node goes on
// while that value repeats at its level.
type rowJSON struct {
	root   *parquet.Column
	values [][]parquet.Value // of the row, per leaf column
	next   []int             // the next value of each leaf
	first  map[*parquet.Column]int
}

// init prepares to write rows of the schema under root.
func (w *rowJSON) init(root *parquet.Column) {
	w.root = root
	w.first = map[*parquet.Column]int{}
	leaves := 0
	var walk func(c *parquet.Column) int
	walk = func(c *parquet.Column) int {
		first := -1
		if c.Leaf() {
			first = c.Index()
			leaves++
		}
		for _, child := range c.Columns() {
			if f := walk(child); first < 0 {
				first = f
			}
		}
		w.first[c] = first
		return first
	}
	walk(root)
	w.values, w.next = make([][]parquet.Value, leaves), make([]int, leaves)
}

// appendRow appends row as one JSON object.
func (w *rowJSON) appendRow(dst []byte, row parquet.Row) []byte {
	clear(w.values)
	clear(w.next)
	row.Range(func(col int, values []parquet.Value) bool {
		if col < len(w.values) {
			w.values[col] = values
		}
		return true
	})
	return w.appendObject(dst, w.root)
}

// peek is the next value of c's first leaf, which tells whether c is
// defined and whether it repeats; ok is false when the row has no more.
func (w *rowJSON) peek(c *parquet.Column) (v parquet.Value, ok bool) {
	leaf := w.first[c]
	if leaf < 0 || w.next[leaf] >= len(w.values[leaf]) {
		return v, false
	}
	return w.values[leaf][w.next[leaf]], true
}

// skip passes the one value each leaf under c has where c is null or empty.
func (w *rowJSON) skip(c *parquet.Column) {
	if c.Leaf() {
		w.next[c.Index()]++
		return
	}
	for _, child := range c.Columns() {
		w.skip(child)
	}
}

// appendField appends the value of c, a field that is not repeated (or one
// element of a repeated one, when element is set).
func (w *rowJSON) appendField(dst []byte, c *parquet.Column, element bool) []byte {
	if !element && c.Repeated() {
		return w.appendRepeated(dst, c, c)
	}
	if c.Optional() || element {
		if v, ok := w.peek(c); !ok || v.DefinitionLevel() < c.MaxDefinitionLevel() {
			w.skip(c)
			return append(dst, "null"...)
		}
	}
	switch {
	case c.Leaf():
		v := w.values[c.Index()][w.next[c.Index()]]
		w.next[c.Index()]++
		return appendParquetValue(dst, c.Type(), v)
	case isList(c):
		repeated := c.Columns()[0]
		return w.appendRepeated(dst, repeated, listElement(repeated))
	case isMap(c):
		return w.appendMap(dst, c.Columns()[0])
	}
	return w.appendObject(dst, c)
}

// appendObject appends a group's fields as an object.
func (w *rowJSON) appendObject(dst []byte, c *parquet.Column) []byte {
	dst = append(dst, '{')
	for i, f := range c.Columns() {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, f.Name())
		dst = append(dst, ':')
		dst = w.appendField(dst, f, false)
	}
	return append(dst, '}')
}

// appendRepeated appends the elements of repeated, a repeated node, as an
// array: each is element (repeated itself, or the one child of a list's
// repeated group).
func (w *rowJSON) appendRepeated(dst []byte, repeated, element *parquet.Column) []byte {
	dst = append(dst, '[')
	if v, ok := w.peek(repeated); !ok || v.DefinitionLevel() < repeated.MaxDefinitionLevel() {
		w.skip(repeated)
		return append(dst, ']')
	}
	for i := 0; ; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		if element == repeated {
			dst = w.appendElement(dst, repeated)
		} else {
			dst = w.appendField(dst, element, true)
		}
		if v, ok := w.peek(repeated); !ok || v.RepetitionLevel() != repeated.MaxRepetitionLevel() {
			return append(dst, ']')
		}
	}
}

// appendElement appends one occurrence of a repeated node that is itself
// the element of its list (the legacy two-level layout).
func (w *rowJSON) appendElement(dst []byte, c *parquet.Column) []byte {
	if c.Leaf() {
		v := w.values[c.Index()][w.next[c.Index()]]
		w.next[c.Index()]++
		return appendParquetValue(dst, c.Type(), v)
	}
	return w.appendObject(dst, c)
}

// appendMap appends a map's entries (kv, its repeated key_value group) as
// an object when its keys are strings, else as an array of {"key",
// "value"} pairs (JSON keys can only be strings).
func (w *rowJSON) appendMap(dst []byte, kv *parquet.Column) []byte {
	if len(kv.Columns()) != 2 {
		return w.appendRepeated(dst, kv, kv)
	}
	key, value := kv.Columns()[0], kv.Columns()[1]
	stringKeys := key.Leaf() && isText(key.Type())
	open, close := byte('{'), byte('}')
	if !stringKeys {
		open, close = '[', ']'
	}
	dst = append(dst, open)
	if v, ok := w.peek(kv); !ok || v.DefinitionLevel() < kv.MaxDefinitionLevel() {
		w.skip(kv)
		return append(dst, close)
	}
	for i := 0; ; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		if stringKeys {
			dst = w.appendField(dst, key, false)
			dst = append(dst, ':')
			dst = w.appendField(dst, value, false)
		} else {
			dst = append(dst, `{"key":`...)
			dst = w.appendField(dst, key, false)
			dst = append(dst, `,"value":`...)
			dst = w.appendField(dst, value, false)
			dst = append(dst, '}')
		}
		if v, ok := w.peek(kv); !ok || v.RepetitionLevel() != kv.MaxRepetitionLevel() {
			return append(dst, close)
		}
	}
}

// isList reports whether c is a group annotated LIST with the one repeated
// child the format asks for.
func isList(c *parquet.Column) bool {
	_, ok := logicalType(c).(*format.ListType)
	return ok && len(c.Columns()) == 1 && c.Columns()[0].Repeated()
}

// isMap reports whether c is a group annotated MAP (or MAP_KEY_VALUE) with
// one repeated child.
func isMap(c *parquet.Column) bool {
	_, ok := logicalType(c).(*format.MapType)
	return ok && len(c.Columns()) == 1 && c.Columns()[0].Repeated()
}

// logicalType is c's logical type, nil when it has none.
func logicalType(c *parquet.Column) format.LogicalTypeValue {
	if lt := c.Type().LogicalType(); lt != nil {
		return lt.Value
	}
	return nil
}

// listElement is the element of a list whose repeated node is repeated: its
// one child in the standard three-level layout; the repeated node itself in
// the legacy ones (a repeated leaf, a group of several fields, or one named
// "array" or NAME_tuple), as the format's backward-compatibility rules say.
func listElement(repeated *parquet.Column) *parquet.Column {
	children := repeated.Columns()
	if repeated.Leaf() || len(children) != 1 || repeated.Name() == "array" || len(repeated.Path()) > 1 && repeated.Name() == repeated.Path()[len(repeated.Path())-2]+"_tuple" {
		return repeated
	}
	return children[0]
}

// isText reports whether a byte-array column holds text (String, Enum or
// JSON logical types).
func isText(t parquet.Type) bool {
	lt := t.LogicalType()
	if lt == nil {
		return false
	}
	switch lt.Value.(type) {
	case *format.StringType, *format.EnumType, *format.JsonType:
		return true
	}
	return false
}

// appendParquetValue appends one leaf value of type t as JSON. Numbers are
// numbers (decimals exactly, with their scale); dates, times and
// timestamps are strings (RFC 3339, UTC); byte arrays are strings when they
// are UTF-8 text, else base64, as encoding/json writes bytes.
func appendParquetValue(dst []byte, t parquet.Type, v parquet.Value) []byte {
	if v.IsNull() {
		return append(dst, "null"...)
	}
	if lt := t.LogicalType(); lt != nil && lt.Value != nil {
		if out, ok := appendLogical(dst, lt.Value, v); ok {
			return out
		}
	}
	switch v.Kind() {
	case parquet.Boolean:
		return strconv.AppendBool(dst, v.Boolean())
	case parquet.Int32:
		return strconv.AppendInt(dst, int64(v.Int32()), 10)
	case parquet.Int64:
		return strconv.AppendInt(dst, v.Int64(), 10)
	case parquet.Float:
		return appendFloat(dst, float64(v.Float()), 32)
	case parquet.Double:
		return appendFloat(dst, v.Double(), 64)
	case parquet.Int96:
		return appendTime(dst, int96Time(v.ByteArray()))
	}
	return appendBytes(dst, v.ByteArray())
}

// appendLogical appends v as its logical type lt says, when that changes
// how it is written (ok false otherwise).
func appendLogical(dst []byte, lt format.LogicalTypeValue, v parquet.Value) ([]byte, bool) {
	switch lt := lt.(type) {
	case *format.IntType:
		if lt.IsSigned {
			return dst, false
		}
		if v.Kind() == parquet.Int32 {
			return strconv.AppendUint(dst, uint64(uint32(v.Int32())), 10), true
		}
		return strconv.AppendUint(dst, uint64(v.Int64()), 10), true
	case *format.DecimalType:
		return appendDecimal(dst, v, int(lt.Scale)), true
	case *format.DateType:
		return appendQuoted(dst, time.Unix(int64(v.Int32())*86400, 0).UTC().Format(time.DateOnly)), true
	case *format.TimestampType:
		return appendTime(dst, time.Unix(0, 0).Add(unitDuration(&lt.Unit, v.Int64()))), true
	case *format.TimeType:
		n := v.Int64()
		if v.Kind() == parquet.Int32 {
			n = int64(v.Int32())
		}
		return appendQuoted(dst, time.Unix(0, 0).Add(unitDuration(&lt.Unit, n)).UTC().Format("15:04:05.999999999")), true
	case *format.UUIDType:
		b := v.ByteArray()
		if len(b) != 16 {
			return dst, false
		}
		return appendQuoted(dst, formatUUID(b)), true
	case *format.Float16Type:
		b := v.ByteArray()
		if len(b) != 2 {
			return dst, false
		}
		return appendFloat(dst, float64(float16(binary.LittleEndian.Uint16(b))), 32), true
	}
	return dst, false
}

// unitDuration is n in the time unit u.
func unitDuration(u *format.TimeUnit, n int64) time.Duration {
	switch u.Value.(type) {
	case *format.MilliSeconds:
		return time.Duration(n) * time.Millisecond
	case *format.MicroSeconds:
		return time.Duration(n) * time.Microsecond
	}
	return time.Duration(n)
}

// int96Time reads a legacy INT96 timestamp: nanoseconds of the day, then
// the Julian day, little-endian.
func int96Time(b []byte) time.Time {
	if len(b) != 12 {
		return time.Time{}
	}
	nanos := int64(binary.LittleEndian.Uint64(b))
	day := int64(binary.LittleEndian.Uint32(b[8:]))
	return time.Unix((day-2440588)*86400, nanos)
}

func appendTime(dst []byte, t time.Time) []byte {
	return appendQuoted(dst, t.UTC().Format(time.RFC3339Nano))
}

func appendQuoted(dst []byte, s string) []byte { return AppendString(dst, s) }

// appendDecimal writes a decimal exactly: its unscaled integer (an int32,
// an int64, or big-endian two's complement bytes) with the point scale
// digits from the right.
func appendDecimal(dst []byte, v parquet.Value, scale int) []byte {
	n := new(big.Int)
	switch v.Kind() {
	case parquet.Int32:
		n.SetInt64(int64(v.Int32()))
	case parquet.Int64:
		n.SetInt64(v.Int64())
	default:
		b := v.ByteArray()
		n.SetBytes(b)
		if len(b) > 0 && b[0]&0x80 != 0 { // negative: two's complement
			n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
	}
	digits := n.String()
	if scale <= 0 {
		return append(dst, digits...)
	}
	neg := digits[0] == '-'
	if neg {
		dst = append(dst, '-')
		digits = digits[1:]
	}
	for len(digits) <= scale {
		digits = "0" + digits
	}
	dst = append(dst, digits[:len(digits)-scale]...)
	return append(append(dst, '.'), digits[len(digits)-scale:]...)
}

// formatUUID writes 16 bytes as a UUID's canonical text.
func formatUUID(b []byte) string {
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hex[c>>4], hex[c&0xf])
	}
	return string(out)
}

// float16 widens an IEEE half-precision number.
func float16(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		f := float32(frac) / (1 << 24)
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}

// appendFloat writes a float as JSON, which has no NaN or infinities: those
// become null.
func appendFloat(dst []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}

// appendBytes writes a binary value as a string when it is UTF-8 text (as
// Parquet writers often store text without the String annotation), else as
// base64, as encoding/json does.
func appendBytes(dst, b []byte) []byte {
	if utf8.Valid(b) {
		return AppendString(dst, string(b))
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}
