package kimitools

import (
	"bytes"
	"errors"
	"testing"

	"github.com/synthpipe/synthpipe/lib/kimitools/kimitest"
)

// FuzzPrepare: any input, no panic; the same input gives the same result;
// and an input whose objects list their keys in another order (the same
// keys, so the same sorted value) gives the same result too. The seeds are
// every tools value of testdata, run by go test.
func FuzzPrepare(f *testing.F) {
	for _, file := range []string{"testdata/public.jsonl", "testdata/cases.jsonl"} {
		for _, r := range kimitest.Read(f, file) {
			f.Add([]byte(r.Tools))
		}
	}
	f.Add([]byte(`[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"enum":"xyz"},"b":{"anyOf":""}}}}}]`))
	f.Add([]byte(`[{"type":"function","function":{"parameters":{"$defs":{"A":{"$ref":"#/$defs/A"}},"properties":{"a":{"$ref":"#/$defs/A"}}}}}]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := Prepare(in)
		again, err2 := Prepare(in)
		if (err == nil) != (err2 == nil) || !sameTools(got, again) {
			t.Fatalf("two runs differ: %+v, %v / %+v, %v", got, err, again, err2)
		}
		if err != nil {
			if !errors.Is(err, errSyntax) {
				t.Fatalf("error %v is neither a syntax error nor ErrUnsupported", err)
			}
			return
		}
		if got.Err != nil && !errors.Is(got.Err, ErrUnsupported) {
			t.Fatalf("encoder error %v does not wrap ErrUnsupported", got.Err)
		}
		if got.Declared && got.Err != nil {
			t.Fatalf("declared and failed at once: %+v", got)
		}
		v, _ := parse(in)
		reordered := appendReversed(nil, v)
		other, err := Prepare(reordered)
		if err != nil || !sameTools(got, other) {
			t.Fatalf("keys in another order change the result:\n%s\n%+v\n%s\n%+v (%v)", in, got, reordered, other, err)
		}
		// Sorting is idempotent: the sorted tools sort to themselves.
		if resorted, err := SortKeys(got.Sorted); err != nil || !bytes.Equal(resorted, got.Sorted) {
			t.Fatalf("SortKeys(%s) = %s, %v", got.Sorted, resorted, err)
		}
	})
}

func sameTools(a, b Tools) bool {
	return bytes.Equal(a.Sorted, b.Sorted) && a.Declaration == b.Declaration && a.Declared == b.Declared &&
		(a.Err == nil) == (b.Err == nil)
}

// appendReversed writes v as JSON with every object's keys in reverse order.
func appendReversed(b []byte, v *value) []byte {
	switch v.kind {
	case kindList:
		b = append(b, '[')
		for i, e := range v.list {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendReversed(b, e)
		}
		return append(b, ']')
	case kindDict:
		b = append(b, '{')
		for i := len(v.dict) - 1; i >= 0; i-- {
			if i < len(v.dict)-1 {
				b = append(b, ',')
			}
			b = appendJSONString(b, v.dict[i].key)
			b = append(b, ':')
			b = appendReversed(b, v.dict[i].val)
		}
		return append(b, '}')
	}
	return appendSorted(b, v)
}
