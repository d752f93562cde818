package tests

import (
	"os/exec"
	"testing"
)

// TestBenchTable: README.md's benchmark table is the one
// scripts/bench/readme-table.sh writes from scripts/bench/results.txt (the
// bench lines the scripts in scripts/bench/ printed), never edited by hand.
func TestBenchTable(t *testing.T) {
	cmd := exec.Command("bash", "scripts/bench/readme-table.sh", "--check")
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s(run bash scripts/bench/readme-table.sh with the scripts' output to rewrite the table)", err, out)
	}
}
