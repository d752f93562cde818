package chattemplate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// snippetResult is one template fragment rendered by Python jinja2 in
// transformers' environment (testdata/snippets/gen.py).
type snippetResult struct {
	Group  string `json:"group"`
	Src    string `json:"src"`
	OK     bool   `json:"ok"`
	Output string `json:"output"`
	Error  string `json:"error"`
}

// TestJinja2Snippets renders every fragment with the same variables and
// compares with jinja2: output byte for byte, or an error. Runtime errors
// must carry jinja2's message; syntax errors only need to be reported.
// CHATTEMPLATE_SNIPPETS names another expected file to check instead.
func TestJinja2Snippets(t *testing.T) {
	dir := filepath.Join("testdata", "snippets")
	varsJSON, err := os.ReadFile(filepath.Join(dir, "vars.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vars map[string]json.RawMessage
	if err := json.Unmarshal(varsJSON, &vars); err != nil {
		t.Fatal(err)
	}
	expectedPath := filepath.Join(dir, "expected.json")
	if alt := os.Getenv("CHATTEMPLATE_SNIPPETS"); alt != "" {
		expectedPath = alt // an extra batch made with gen.py, e.g. from exprgen.py
	}
	data, err := os.ReadFile(expectedPath)
	if err != nil {
		t.Fatal(err)
	}
	var results []snippetResult
	if err := json.Unmarshal(data, &results); err != nil {
		t.Fatal(err)
	}
	for _, want := range results {
		t.Run(want.Group, func(t *testing.T) {
			got, err := renderSnippet(want.Src, vars)
			switch {
			case want.OK && err != nil:
				t.Errorf("%q: unexpected error %v", want.Src, err)
			case want.OK && got != want.Output:
				t.Errorf("%q: %s", want.Src, describeMismatch(got, want.Output))
			case !want.OK && err == nil:
				t.Errorf("%q: rendered %q, want error %q", want.Src, got, want.Error)
			case !want.OK:
				kind, msg, _ := strings.Cut(want.Error, ": ")
				if kind == "TemplateSyntaxError" || kind == "SyntaxError" {
					return
				}
				if kind == "RecursionError" { // Python's wording depends on where the stack ran out
					msg = kind
				}
				if !strings.Contains(err.Error(), msg) {
					t.Errorf("%q: error %q, want %q", want.Src, err, want.Error)
				}
			}
		})
	}
}

// renderSnippet renders src with vars as template variables; messages and
// tools go through their Options fields like real conversations do.
func renderSnippet(src string, vars map[string]json.RawMessage) (string, error) {
	tmpl, err := Parse("snippet", src)
	if err != nil {
		return "", err
	}
	extra := map[string]json.RawMessage{}
	for k, v := range vars {
		if k != "messages" && k != "tools" {
			extra[k] = v
		}
	}
	return tmpl.Render(Options{Messages: vars["messages"], Tools: vars["tools"], Extra: extra, Now: fixedNow})
}
