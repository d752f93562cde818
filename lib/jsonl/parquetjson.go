package jsonl

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// appendRow appends row i of batch as one JSON object: its columns in the
// file's order, nested columns as the JSON a user would write (lists as
// arrays, structs as objects in field order, maps with string keys as
// objects, nulls as null).
func appendRow(dst []byte, batch arrow.RecordBatch, i int) []byte {
	dst = append(dst, '{')
	for j, col := range batch.Columns() {
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, batch.ColumnName(j))
		dst = append(dst, ':')
		dst = appendValue(dst, col, i)
	}
	return append(dst, '}')
}

// appendValue appends element i of arr as JSON. The common types are written
// here; the rest (decimals, times, intervals) as arrow-go marshals them.
func appendValue(dst []byte, arr arrow.Array, i int) []byte {
	if arr.IsNull(i) {
		return append(dst, "null"...)
	}
	switch a := arr.(type) {
	case *array.String:
		return AppendString(dst, a.Value(i))
	case *array.LargeString:
		return AppendString(dst, a.Value(i))
	case *array.StringView:
		return AppendString(dst, a.Value(i))
	case *array.Int64:
		return strconv.AppendInt(dst, a.Value(i), 10)
	case *array.Int32:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int8:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.AppendUint(dst, a.Value(i), 10)
	case *array.Uint32:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint8:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Float64:
		return appendFloat(dst, a.Value(i), 64)
	case *array.Float32:
		return appendFloat(dst, float64(a.Value(i)), 32)
	case *array.Boolean:
		return strconv.AppendBool(dst, a.Value(i))
	case *array.Binary:
		return appendBytes(dst, a.Value(i))
	case *array.LargeBinary:
		return appendBytes(dst, a.Value(i))
	case *array.Struct:
		return appendStruct(dst, a, i)
	case *array.Map:
		return appendMap(dst, a, i)
	case array.ListLike:
		return appendList(dst, a, i)
	case *array.Dictionary:
		return appendValue(dst, a.Dictionary(), a.GetValueIndex(i))
	}
	b, err := json.Marshal(arr.GetOneForMarshal(i))
	if err != nil {
		return AppendString(dst, arr.ValueStr(i))
	}
	return append(dst, b...)
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

func appendStruct(dst []byte, a *array.Struct, i int) []byte {
	fields := a.DataType().(*arrow.StructType).Fields()
	dst = append(dst, '{')
	for j := range fields {
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, fields[j].Name)
		dst = append(dst, ':')
		dst = appendValue(dst, a.Field(j), i)
	}
	return append(dst, '}')
}

func appendList(dst []byte, a array.ListLike, i int) []byte {
	start, end := a.ValueOffsets(i)
	values := a.ListValues()
	dst = append(dst, '[')
	for k := start; k < end; k++ {
		if k > start {
			dst = append(dst, ',')
		}
		dst = appendValue(dst, values, int(k))
	}
	return append(dst, ']')
}

// appendMap writes a map with string keys as a JSON object, and any other as
// an array of {"key", "value"} pairs (JSON keys can only be strings).
func appendMap(dst []byte, a *array.Map, i int) []byte {
	start, end := a.ValueOffsets(i)
	keys, items := a.Keys(), a.Items()
	_, stringKeys := keys.(*array.String)
	open, close := byte('{'), byte('}')
	if !stringKeys {
		open, close = '[', ']'
	}
	dst = append(dst, open)
	for k := int(start); k < int(end); k++ {
		if k > int(start) {
			dst = append(dst, ',')
		}
		if stringKeys {
			dst = appendValue(dst, keys, k)
			dst = append(dst, ':')
			dst = appendValue(dst, items, k)
			continue
		}
		dst = append(dst, `{"key":`...)
		dst = appendValue(dst, keys, k)
		dst = append(dst, `,"value":`...)
		dst = appendValue(dst, items, k)
		dst = append(dst, '}')
	}
	return append(dst, close)
}
