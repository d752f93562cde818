package tests

// The README's "Layout" section is the map of the house a contributor reads
// first: it must name every package under lib/ and nothing that is gone.

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// layoutEntry is a package line of the Layout block: it starts with the
// package's path.
var layoutEntry = regexp.MustCompile(`^(lib/[a-z0-9_/]+[a-z0-9_])\s`)

func TestLayoutNamesEveryPackage(t *testing.T) {
	root := repoRoot(t)
	named := layoutPackages(t, filepath.Join(root, "README.md"))
	onDisk := libPackages(t, root)
	for _, dir := range sortedKeys(onDisk) {
		if !named[dir] {
			t.Errorf("README.md's Layout does not name %s: add a line saying what it is for", dir)
		}
	}
	for _, dir := range sortedKeys(named) {
		if !onDisk[dir] {
			t.Errorf("README.md's Layout names %s, which is not a package under lib/", dir)
		}
	}
	if len(onDisk) < 30 {
		t.Fatalf("found %d packages under lib/: the walk is wrong", len(onDisk))
	}
}

// layoutPackages reads the lib/ paths that begin the lines of the README's
// Layout code block.
func layoutPackages(t *testing.T, readme string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := bytes.Cut(b, []byte("\n## Layout\n"))
	if !ok {
		t.Fatal("README.md has no ## Layout section")
	}
	section, _, _ = bytes.Cut(section, []byte("\n## "))
	named := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(section))
	for sc.Scan() {
		if m := layoutEntry.FindStringSubmatch(sc.Text()); m != nil {
			if named[m[1]] {
				t.Errorf("README.md's Layout names %s twice", m[1])
			}
			named[m[1]] = true
		}
	}
	return named
}

// libPackages lists the folders under lib/ that hold Go code outside tests
// (testdata aside): the packages and commands a contributor can import or run.
func libPackages(t *testing.T, root string) map[string]bool {
	t.Helper()
	dirs := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(root, "lib"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return fs.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil {
				return err
			}
			dirs[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}
