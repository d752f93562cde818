package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/synthpipe/synthpipe/lib/toolset"
)

// TestMakeInstall runs `make install DESTDIR=...` as a packager would and
// checks that every tool arrives with its man page and completions.
func TestMakeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every tool: not in -short mode")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is needed to test installation: %v", err)
	}
	dest := t.TempDir()
	cmd := exec.Command("make", "-C", "..", "install", "DESTDIR="+dest, "PREFIX=/usr")
	cmd.Env = append(os.Environ(), "MAKEFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	root := filepath.Join(dest, "usr")
	mustExist := []string{filepath.Join(root, "share/man/man7/synthpipe-records.7")}
	for _, tool := range toolset.All() {
		mustExist = append(mustExist,
			filepath.Join(root, "bin", tool.Name),
			filepath.Join(root, "share/man/man1", tool.Name+".1"),
			filepath.Join(root, "share/bash-completion/completions", tool.Name),
			filepath.Join(root, "share/zsh/site-functions", "_"+tool.Name),
		)
	}
	for _, p := range mustExist {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("not installed: %v", err)
			continue
		}
		if filepath.Base(filepath.Dir(p)) == "bin" && fi.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable", p)
		}
	}
	for _, tool := range toolset.All() {
		script := filepath.Join(root, "share/bash-completion/completions", tool.Name)
		if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", script, err, out)
		}
		bin := filepath.Join(root, "bin", tool.Name)
		if out, err := exec.Command(bin, "--help").CombinedOutput(); err != nil {
			t.Errorf("%s --help: %v\n%s", bin, err, out)
		}
	}
}
