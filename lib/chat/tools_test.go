package chat

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/kimitools/kimitest"
)

// TestKimiK25ToolPrompts renders every reference conversation with the
// bundled Kimi-K2.5 tokenizer and template: the prompt must be the
// reference's byte for byte, and so its ids.
func TestKimiK25ToolPrompts(t *testing.T) {
	m, err := Load(BuiltinPrefix+"kimi-k2.5", TemplateAuto, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Template.TypeScript {
		t.Fatal("auto did not pick the TypeScript declaration for Kimi-K2.5's template")
	}
	recs := kimitest.Read(t, "../kimitools/testdata/public.jsonl", "../kimitools/testdata/cases.jsonl")
	if len(recs) < 13+50 {
		t.Fatalf("%d records, want the 13 public ones and at least 50 more", len(recs))
	}
	for _, r := range recs {
		t.Run(r.ID, func(t *testing.T) {
			got, err := m.Render(r.Messages, r.Tools, true)
			if err != nil {
				t.Fatal(err)
			}
			if got != r.ExpectedText {
				t.Fatalf("prompt differs at byte %d\n got %q\nwant %q", firstDiff(got, r.ExpectedText), got, r.ExpectedText)
			}
		})
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestToolDeclarationModes(t *testing.T) {
	const (
		messages = `[{"role":"user","content":"hi"}]`
		// Unsorted keys, a float written 1.50.
		tools      = `[{"type":"function","function":{"parameters":{"type":"object","properties":{"b":{"type":"number","default":1.50},"a":{"type":"string"}},"required":["a"]},"name":"f"}}]`
		declared   = "type f = (_: {\n  a: string,\n  // Default: 1.5\n  b?: number\n}) => any;"
		sortedJSON = `[{"function":{"name":"f","parameters":{"properties":{"a":{"type":"string"},"b":{"default":1.5,"type":"number"}},"required":["a"],"type":"object"}},"type":"function"}]`
		givenJSON  = `[{"type":"function","function":{"parameters":{"type":"object","properties":{"b":{"type":"number","default":1.5},"a":{"type":"string"}},"required":["a"]},"name":"f"}}]`
	)
	// Kimi-K2's template prints tools | tojson and has no tools_ts_str.
	k2 := "{%- if tools -%}<|im_system|>tool_declare<|im_middle|>{{ tools | tojson(separators=(',', ':')) }}<|im_end|>{%- endif -%}"
	k2File := t.TempDir() + "/k2.jinja"
	if err := os.WriteFile(k2File, []byte(k2), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, template, mode, want string
	}{
		{"K2.5 auto declares", TemplateAuto, DeclarationAuto, declared},
		{"K2.5 empty mode is auto", TemplateAuto, "", declared},
		{"K2.5 json gives the tools as they are", TemplateAuto, DeclarationJSON, givenJSON},
		{"K2 auto gives the tools as they are", k2File, DeclarationAuto, givenJSON},
		{"K2 typescript sorts the keys", k2File, DeclarationTypeScript, sortedJSON},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Load(BuiltinPrefix+"kimi-k2.5", tc.template, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.SetToolDeclaration(tc.mode); err != nil {
				t.Fatal(err)
			}
			got, err := m.Render(json.RawMessage(messages), json.RawMessage(tools), true)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %q\nwant it to hold %q", got, tc.want)
			}
		})
	}
}

func TestToolDeclarationRefusesUnknownMode(t *testing.T) {
	for _, tpl := range []*Template{nil, {}} {
		err := tpl.SetToolDeclaration("yaml")
		var coded *exitcode.Error
		if !errors.As(err, &coded) || coded.Code != exitcode.Usage || !strings.Contains(err.Error(), "auto, typescript or json") {
			t.Errorf("got %v, want a usage error naming the modes", err)
		}
	}
	var none *Template // --template none
	if err := none.SetToolDeclaration(DeclarationTypeScript); err != nil {
		t.Errorf("--template none: %v", err)
	}
}
