// Package lengthdisttest holds the table of --lengths specs that llm-sim
// and estimate are tested against (specs.txt): for each spec, what each
// tool makes of it or that it refuses it. Both tools parse specs through
// lengthdist.Parse and check them their own way; the table keeps what each
// accepts, and what it means, from drifting.
package lengthdisttest

import (
	_ "embed"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

//go:embed specs.txt
var specs string

// Row is one spec of the table.
type Row struct {
	Name     string // the spec as the table writes it, @FILE and the like kept
	Spec     string // the spec to parse, @FILE and the like made real
	Sim      string // what llm-sim makes of it, or "error"
	Estimate string // what estimate makes of it, or "error"
}

// Rows reads the table. It writes the files @FILE (lengths 1, 2 and 3)
// and @BAD (a line that is not a length) in a temporary folder, where
// @MISSING does not exist.
func Rows(t testing.TB) []Row {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{"good.txt": "1\n2\n3\n", "bad.txt": "1\nx\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	paths := strings.NewReplacer("@FILE", filepath.Join(dir, "good.txt"),
		"@MISSING", filepath.Join(dir, "none.txt"), "@BAD", filepath.Join(dir, "bad.txt"))
	var rows []Row
	for _, line := range strings.Split(specs, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		name, err := strconv.Unquote(cols[0])
		if err != nil || len(cols) != 3 {
			t.Fatalf("specs.txt: bad line %q", line)
		}
		rows = append(rows, Row{Name: name, Spec: paths.Replace(name), Sim: cols[1], Estimate: cols[2]})
	}
	return rows
}
