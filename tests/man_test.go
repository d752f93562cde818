package tests

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/synthpipe/synthpipe/lib/toolset"
)

// TestManPagesFresh fails when man/ does not match the CLI definitions: run
// `make man` and commit the result.
func TestManPagesFresh(t *testing.T) {
	t.Parallel()
	pages := toolset.ManPages()
	for name, want := range pages {
		have, err := os.ReadFile(filepath.Join("..", "man", name))
		if err != nil {
			t.Errorf("man/%s: %v (run make man)", name, err)
			continue
		}
		if !bytes.Equal(have, want) {
			t.Errorf("man/%s is stale: run make man and commit it", name)
		}
	}
	committed, _ := filepath.Glob(filepath.Join("..", "man", "*.[17]"))
	for _, p := range committed {
		if _, ok := pages[filepath.Base(p)]; !ok {
			t.Errorf("%s belongs to no tool: remove it", p)
		}
	}
}

// TestManPagesSections checks that every page has the sections users look for.
func TestManPagesSections(t *testing.T) {
	t.Parallel()
	pages := toolset.ManPages()
	for _, tool := range toolset.All() {
		page := pages[tool.Name+".1"]
		for _, sec := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT", "EXIT STATUS", "EXAMPLES", "SEE ALSO"} {
			if !bytes.Contains(page, []byte(".SH "+sec)) && !bytes.Contains(page, []byte(".SH \""+sec+"\"")) {
				t.Errorf("%s.1 has no %s section", tool.Name, sec)
			}
		}
	}
}
