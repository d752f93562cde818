package tokenizeprompts

import (
	"testing"
)

func TestSourceID(t *testing.T) {
	tests := []struct {
		raw    string // "" for absent
		id     string
		ok     bool
		hasErr bool
	}{
		{raw: `"a-1"`, id: "a-1", ok: true},
		{raw: `"caf\u00e9"`, id: "café", ok: true},
		{raw: `7`, id: "7", ok: true},
		{raw: `-12`, id: "-12", ok: true},
		{raw: `1e3`, id: "1000", ok: true},
		{raw: `2.50`, id: "2.5", ok: true},
		{raw: `12345678901234567890`, id: "12345678901234567890", ok: true},
		{raw: ``},
		{raw: `null`},
		{raw: `""`},
		{raw: `true`, hasErr: true},
		{raw: `{"a":1}`, hasErr: true},
	}
	for _, tc := range tests {
		var raw []byte
		if tc.raw != "" {
			raw = []byte(tc.raw)
		}
		id, ok, err := sourceID("id", raw)
		if id != tc.id || ok != tc.ok || (err != nil) != tc.hasErr {
			t.Errorf("%s: got %q %v %v, want %q %v error=%v", tc.raw, id, ok, err, tc.id, tc.ok, tc.hasErr)
		}
	}
}

// TestDerivedIDIsCanonical checks that a derived id depends on the prompt
// only: not on key order, spacing, escapes or the source shape; and that it
// is the documented SHA-256 prefix.
func TestDerivedIDIsCanonical(t *testing.T) {
	same := []string{
		`{"messages":[{"role":"user","content":"Hi"}]}`,
		`{"messages" : [ {"content":"Hi", "role":"user"} ], "dataset":"x"}`,
		`{"messages":[{"role":"user","content":"H\u0069"}]}`,
		`{"prompt":"Hi"}`,
		`{"conversations":[{"from":"human","value":"Hi"},{"from":"gpt","value":"Hello"}]}`,
		`{"instruction":"Hi","input":""}`,
	}
	// printf '{"messages":[{"content":"Hi","role":"user"}]}' | sha256sum
	const want = "p-c690133a69ad78b5"
	for _, line := range same {
		f, err := parseFields([]byte(line), nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := readPrompt(f, shapeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		id, err := derivedID("p-", p)
		if err != nil || id != want {
			t.Errorf("%s: got %q (%v), want %q", line, id, err, want)
		}
	}
	tools := []string{
		`{"prompt":"Hi","tools":[{"type":"function","function":{"name":"f","parameters":{"b":1,"a":2}}}]}`,
		`{"prompt":"Hi","tools":[{"function":{"parameters":{"a":2,"b":1},"name":"f"},"type":"function"}]}`,
	}
	var ids []string
	for _, line := range tools {
		f, _ := parseFields([]byte(line), nil)
		p, err := readPrompt(f, shapeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		id, _ := derivedID("", p)
		ids = append(ids, id)
	}
	if ids[0] != ids[1] || ids[0] == want[2:] {
		t.Errorf("tools: ids %v should be equal to each other and differ from the prompt without tools", ids)
	}
}
