package record

import (
	"fmt"
	"path/filepath"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// NoGroup is the group of a record without the --by value.
const NoGroup = "(none)"

// Grouper finds the --by group of each record (tokstat and estimate): the
// value at a gjson path. A dataset is a folder (DATA/DATASET/out.jsonl, as
// scripts/run-dataset.sh lays a job out), so a record without a dataset
// field, read from a file, belongs to the dataset its file's folder names:
// outputs written before run-dataset.sh recorded the name, or by hand, are
// counted where they lie.
type Grouper struct {
	path      string
	found     int64 // records with a value at path
	missing   int64 // records without one, in NoGroup
	byFolder  int64 // records without one, grouped by their file's folder
	folders   map[string]string
	firstMiss string // where the first record in NoGroup was read
}

// NewGrouper groups by path; "" is no grouping.
func NewGrouper(path string) *Grouper {
	return &Grouper{path: path, folders: map[string]string{}}
}

// Of is the group of the record line, read from file ("-" or
// jsonl.StdinName for stdin) at pos (for messages).
func (g *Grouper) Of(line []byte, file, pos string) string {
	if r := gjson.GetBytes(line, g.path); r.Exists() {
		g.found++
		return r.String()
	}
	if g.path == FieldDataset && file != "-" && file != jsonl.StdinName && file != "" {
		g.byFolder++
		return g.folder(file)
	}
	if g.missing == 0 {
		g.firstMiss = pos
	}
	g.missing++
	return NoGroup
}

// folder is the name of the folder file is in, worked out once per file.
func (g *Grouper) folder(file string) string {
	if name, ok := g.folders[file]; ok {
		return name
	}
	name := file
	if abs, err := filepath.Abs(file); err == nil {
		name = filepath.Base(filepath.Dir(abs))
	}
	g.folders[file] = name
	return name
}

// Warnings says what the user should know of the grouping once the input
// is read: a path no record has (a typo, or records without the field),
// records put in NoGroup, and records grouped by their folder.
func (g *Grouper) Warnings() []string {
	var out []string
	switch {
	case g.missing > 0 && g.found == 0 && g.byFolder == 0:
		out = append(out, fmt.Sprintf("--by %s: no record has %q (the first without it: %s): %s in %s; check the path, or, for datasets laid out as DATA/DATASET/out.jsonl, give the files and --by %s",
			g.path, g.path, g.firstMiss, records(g.missing, "are all", "is"), NoGroup, FieldDataset))
	case g.missing > 0:
		out = append(out, fmt.Sprintf("--by %s: %s no %q (the first: %s): counted in %s",
			g.path, records(g.missing, "have", "has"), g.path, g.firstMiss, NoGroup))
	}
	if g.byFolder > 0 {
		out = append(out, fmt.Sprintf("--by %s: %s no %q: counted in the dataset its file's folder names (DATA/chat/out.jsonl: chat)",
			g.path, records(g.byFolder, "carry", "carries"), g.path))
	}
	return out
}

// records is "N records VERB" with the verb agreeing with N.
func records(n int64, plural, singular string) string {
	if n == 1 {
		return "1 record " + singular
	}
	return fmt.Sprintf("%d records %s", n, plural)
}
