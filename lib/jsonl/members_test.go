package jsonl

import (
	"fmt"
	"strings"
	"testing"
)

// EachMember finds the members ScanObject finds, on lines it accepted.
func TestEachMemberAgreesWithScanObject(t *testing.T) {
	ids := "[" + strings.Repeat("151000,7,42,", 40) + "3]"
	lines := []string{
		`{}`,
		` { "a" : 1 , "b":[ ] ,"c" :{} } `,
		`{"id":"x\"}]{[","input_ids":` + ids + `,"text":"a \\\\\" [{ \\\\","n":-1.5e3,"t":true,"f":false,"z":null}`,
		`{"k\u0065y":"v\\","nested":{"a":[{"b":"]}"},[1,[2,{"c":"\\\""}]]],"d":"}"},"last":` + ids + `}`,
		`{"turns":[{"text":"a","finish_reason":"stop"},{"text":"b</think>","output_ids":[1,2]}],"é":"ü"}`,
	}
	for _, line := range lines {
		var want, got []string
		if err := ScanObject([]byte(line), func(m Member) { want = append(want, fmt.Sprintf("%s=%s", m.Key, m.Value)) }); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		EachMember([]byte(line), func(m Member) bool {
			got = append(got, fmt.Sprintf("%s=%s", m.Key, m.Value))
			return true
		})
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\n got %q\nwant %q", line, got, want)
		}
	}
}

// On lines that are not JSON, EachMember stops without reading past them.
func TestEachMemberInvalid(t *testing.T) {
	for _, line := range []string{``, `[`, `{`, `{"a`, `{"a":`, `{"a":[1,2`, `{"a":"x`, `{"a":1 "b":2}`, `{"a":{"b":[}`, `{"a\\":1,}`, `{"a":"\\"}`} {
		n := 0
		EachMember([]byte(line), func(m Member) bool { n++; return true })
		if n > 2 {
			t.Errorf("%q: %d members", line, n)
		}
	}
	// visit returning false stops the walk
	n := 0
	EachMember([]byte(`{"a":1,"b":2,"c":3}`), func(m Member) bool { n++; return string(m.Key) != "b" })
	if n != 2 {
		t.Errorf("visited %d members after stopping at the second", n)
	}
}
