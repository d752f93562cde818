package backend

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestRegistry(t *testing.T) {
	names := Names()
	if strings.Join(names, " ") != "openai sglang" {
		t.Fatalf("Names() = %v, want the registered kinds by name", names)
	}
	for _, k := range Kinds() {
		got, ok := Lookup(k.Name)
		if !ok || got != k {
			t.Errorf("Lookup(%q) = %v, %v", k.Name, got, ok)
		}
		if b := k.New(Options{}); b.Name() != k.Name {
			t.Errorf("kind %s builds a backend called %q", k.Name, b.Name())
		}
	}
	if _, ok := Lookup("vllm"); ok {
		t.Error("Lookup found a kind nobody registered")
	}
}

func TestAuth(t *testing.T) {
	all := Options{APIKey: "sk-1", Referer: "https://example.org", Title: "synthpipe"}
	for _, tc := range []struct {
		name string
		auth Auth
		opts Options
		want http.Header
	}{
		{"bearer", Bearer, all, http.Header{"Authorization": {"Bearer sk-1"}}},
		{"bearer without key", Bearer, Options{}, http.Header{}},
		{"attributed", BearerAttributed, all, http.Header{"Authorization": {"Bearer sk-1"}, "Http-Referer": {"https://example.org"}, "X-Title": {"synthpipe"}}},
		{"attributed, key only", BearerAttributed, Options{APIKey: "sk-1"}, http.Header{"Authorization": {"Bearer sk-1"}}},
		{"x-api-key", XAPIKey, all, http.Header{"X-Api-Key": {"sk-1"}}},
		{"x-api-key without key", XAPIKey, Options{}, http.Header{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			tc.auth(h, &tc.opts)
			if len(h) != len(tc.want) {
				t.Fatalf("headers %v, want %v", h, tc.want)
			}
			for k, v := range tc.want {
				if h.Get(k) != v[0] {
					t.Errorf("%s: %q, want %q", k, h.Get(k), v[0])
				}
			}
		})
	}
}

func TestBatchBody(t *testing.T) {
	for _, tc := range []struct {
		kind    *Kind
		key     string
		value   string
		want    BodyMember
		refused bool
	}{
		{OpenAI, "response_format", `{"type":"json_object"}`, BodyField, false},
		{OpenAI, "logit_bias", `{"5":1}`, BodyField, false},
		{SGLang, "presence_penalty", `0.5`, BodySampling, false},
		{SGLang, "logit_bias", `{"5":1}`, BodyDrop, false},
		{SGLang, "response_format", `{"type":"text"}`, BodyDrop, false},
		{SGLang, "response_format", `{"type":"json_object"}`, BodyDrop, true},
	} {
		got, err := tc.kind.BatchBody(tc.key, []byte(tc.value))
		if got != tc.want || (err != nil) != tc.refused {
			t.Errorf("%s %s=%s: %v, %v; want %v, refused %v", tc.kind.Name, tc.key, tc.value, got, err, tc.want, tc.refused)
		}
	}
}

// A backend is a Kind, not a name: outside this package (and the simulator,
// which plays the servers) no code may spell a kind's name or pick a kind by
// its variable, except the one default of generate's --backend.
func TestNoBackendNamesOutside(t *testing.T) {
	kindVars := registeredVars(t)
	allowed := map[string]bool{"lib/flaggroup/server.go: backend.SGLang": true} // --backend's default
	// estimate's cost models (an SGLang server's continuous batch,
	// OpenRouter's price list) are its own, not --backend values: it probes
	// each with the one backend that can answer, and its report names the
	// model it used.
	notBackends := map[string]bool{"lib/estimate": true}
	root := filepath.Join("..", "..")
	found := 0
	for _, dir := range []string{"cmd", "lib", "scripts", "tests"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if d.IsDir() && (rel == "lib/backend" || rel == "lib/sim" || notBackends[rel] || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.BasicLit:
					if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING {
						if _, isKind := Lookup(s); isKind {
							t.Errorf("%s: the string %s names a backend: use the backend.Kind's fields", rel, n.Value)
						}
					}
				case *ast.SelectorExpr:
					if x, ok := n.X.(*ast.Ident); ok && x.Name == "backend" && kindVars[n.Sel.Name] {
						if ref := rel + ": backend." + n.Sel.Name; !allowed[ref] {
							t.Errorf("%s picks a kind by name: use the backend.Kind's fields", ref)
						} else {
							found++
						}
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found != len(allowed) {
		t.Errorf("found %d of the %d allowed references: the walk missed files, or the list is stale", found, len(allowed))
	}
}

// registeredVars are the names of this package's variables that hold a
// registered kind: var X = register(...).
func registeredVars(t *testing.T) map[string]bool {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]bool{}
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, v := range vs.Values {
					if call, ok := v.(*ast.CallExpr); ok {
						if fn, ok := call.Fun.(*ast.Ident); ok && fn.Name == "register" {
							vars[vs.Names[i].Name] = true
						}
					}
				}
			}
		}
	}
	if len(vars) != len(Kinds()) {
		t.Fatalf("found %d registered variables for %d kinds", len(vars), len(Kinds()))
	}
	return vars
}
