package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/toolset"
)

// TestMakeInstall runs `make install DESTDIR=...` as a packager would and
// checks that every tool arrives with its man page and completions, and the
// recipes where the README, the man pages and the scripts' own crontab,
// --sshlogin and sbatch lines say they are.
func TestMakeInstall(t *testing.T) {
	t.Parallel()
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
	checkInstalledRecipes(t, root)
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

// installedRecipe is a path under the recipes' installed folder (PREFIX
// /usr/local) as the documentation names it.
var installedRecipe = regexp.MustCompile(`/usr/local/share/synthpipe/scripts(/[A-Za-z0-9_./-]*[A-Za-z0-9_])?`)

// checkInstalledRecipes: every recipe is installed, executable, under
// ROOT/share/synthpipe/scripts, and every installed path the documentation
// names (README, man pages, the scripts' headers: the crontab line among
// them) is there.
func checkInstalledRecipes(t *testing.T, root string) {
	t.Helper()
	dir := filepath.Join(root, "share/synthpipe/scripts")
	for _, r := range []string{"run-dataset.sh", "fanout.sh", "several-servers.sh", "slurm/run-array.sbatch", "slurm/server.sbatch"} {
		fi, err := os.Stat(filepath.Join(dir, r))
		if err != nil {
			t.Errorf("recipe not installed: %v", err)
		} else if fi.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable", filepath.Join(dir, r))
		}
	}
	var docs []string
	for _, pattern := range []string{"../README.md", "../man/*", "../scripts/*.sh", "../scripts/slurm/*"} {
		m, _ := filepath.Glob(pattern)
		docs = append(docs, m...)
	}
	named := map[string]string{} // path -> the first file that names it
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range installedRecipe.FindAllString(string(b), -1) {
			if _, ok := named[p]; !ok {
				named[p] = doc
			}
		}
	}
	for _, must := range []string{"/usr/local/share/synthpipe/scripts/run-dataset.sh"} {
		if _, ok := named[must]; !ok {
			t.Errorf("nothing names %s (the crontab line should)", must)
		}
	}
	for p, doc := range named {
		if _, err := os.Stat(filepath.Join(root, strings.TrimPrefix(p, "/usr/local"))); err != nil {
			t.Errorf("%s names %s, which make install does not make: %v", doc, p, err)
		}
	}
}
