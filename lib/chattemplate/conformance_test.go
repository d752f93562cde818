package chattemplate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type conformanceCase struct {
	Name                string                     `json:"name"`
	Messages            json.RawMessage            `json:"messages"`
	Tools               json.RawMessage            `json:"tools"`
	AddGenerationPrompt bool                       `json:"add_generation_prompt"`
	Kwargs              map[string]json.RawMessage `json:"kwargs"`
}

type conformanceFile struct {
	Cases    []conformanceCase                     `json:"cases"`
	Specials map[string]map[string]json.RawMessage `json:"specials"`
}

type expectedRender struct {
	Template string `json:"template"`
	Case     string `json:"case"`
	OK       bool   `json:"ok"`
	Output   string `json:"output"`
	Error    string `json:"error"`
}

// fixedNow is the date the reference renders used for strftime_now.
func fixedNow() time.Time { return time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC) }

func loadConformance(t testing.TB) (conformanceFile, []expectedRender) {
	t.Helper()
	var cf conformanceFile
	var want []expectedRender
	for path, dst := range map[string]any{"cases.json": &cf, "expected_python_jinja2.json": &want} {
		data, err := os.ReadFile(filepath.Join("testdata", "conformance", path))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, dst); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return cf, want
}

func loadTemplate(t testing.TB, name string) *Template {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "conformance", name+".jinja"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := Parse(name, string(src))
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return tmpl
}

// optionsFor builds the arguments the reference script passed: the
// tokenizer's special tokens and the case's extra kwargs as template
// variables, tools=None when the case has none.
func optionsFor(cf conformanceFile, template string, c conformanceCase) Options {
	extra := map[string]json.RawMessage{}
	for k, v := range cf.Specials[template] {
		extra[k] = v
	}
	for k, v := range c.Kwargs {
		extra[k] = v
	}
	return Options{
		Messages:            c.Messages,
		Tools:               c.Tools,
		AddGenerationPrompt: c.AddGenerationPrompt,
		Extra:               extra,
		Now:                 fixedNow,
	}
}

// describeMismatch points at the first differing byte with context.
func describeMismatch(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-60)
	return fmt.Sprintf("first difference at byte %d (got %d bytes, want %d)\n got: %q\nwant: %q",
		i, len(got), len(want), got[from:min(len(got), i+60)], want[from:min(len(want), i+60)])
}

func TestConformance(t *testing.T) {
	cf, want := loadConformance(t)
	cases := map[string]conformanceCase{}
	for _, c := range cf.Cases {
		cases[c.Name] = c
	}
	templates := map[string]*Template{}
	identical, raised := 0, 0
	for _, w := range want {
		tmpl := templates[w.Template]
		if tmpl == nil {
			tmpl = loadTemplate(t, w.Template)
			templates[w.Template] = tmpl
		}
		c, ok := cases[w.Case]
		if !ok {
			t.Fatalf("unknown case %q", w.Case)
		}
		got, err := tmpl.Render(optionsFor(cf, w.Template, c))
		name := w.Template + "/" + w.Case
		if !w.OK {
			_, msg, _ := strings.Cut(w.Error, ": ")
			if err == nil {
				t.Errorf("%s: rendered, want error %q", name, w.Error)
			} else if !strings.Contains(err.Error(), msg) {
				t.Errorf("%s: error %q, want one containing %q", name, err, msg)
			} else {
				raised++
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got != w.Output {
			t.Errorf("%s: %s", name, describeMismatch(got, w.Output))
			continue
		}
		identical++
	}
	t.Logf("identical renders: %d, matching errors: %d, rows: %d", identical, raised, len(want))
}
