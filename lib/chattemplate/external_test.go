package chattemplate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExternalTemplates compares against templates kept outside the
// repository. Set CHATTEMPLATE_EXTERNAL_DIR to a directory holding *.jinja
// files, the cases.json of testdata/conformance, and an expected.json of
// {"specials": {...}, "results": [{template, case, ok, output, error}]}
// made with Python jinja2 (same environment as testdata/snippets/gen.py).
func TestExternalTemplates(t *testing.T) {
	dir := os.Getenv("CHATTEMPLATE_EXTERNAL_DIR")
	if dir == "" {
		t.Skip("CHATTEMPLATE_EXTERNAL_DIR not set")
	}
	var cf conformanceFile
	var want struct {
		Specials map[string]json.RawMessage `json:"specials"`
		Results  []expectedRender           `json:"results"`
	}
	for name, dst := range map[string]any{"cases.json": &cf, "expected.json": &want} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, dst); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]conformanceCase{}
	for _, c := range cf.Cases {
		cases[c.Name] = c
	}
	identical := 0
	for _, w := range want.Results {
		src, err := os.ReadFile(filepath.Join(dir, w.Template+".jinja"))
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := Parse(w.Template, string(src))
		if err != nil {
			t.Errorf("%s: %v", w.Template, err)
			continue
		}
		cf.Specials = map[string]map[string]json.RawMessage{w.Template: want.Specials}
		got, err := tmpl.Render(optionsFor(cf, w.Template, cases[w.Case]))
		name := w.Template + "/" + w.Case
		switch {
		case !w.OK && err == nil:
			t.Errorf("%s: rendered, want error %q", name, w.Error)
		case !w.OK:
			_, msg, _ := strings.Cut(w.Error, ": ")
			if !strings.Contains(err.Error(), msg) {
				t.Errorf("%s: error %q, want %q", name, err, w.Error)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case got != w.Output:
			t.Errorf("%s: %s", name, describeMismatch(got, w.Output))
		default:
			identical++
		}
	}
	t.Logf("%d of %d identical", identical, len(want.Results))
}
