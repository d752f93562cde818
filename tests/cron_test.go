package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCronLinesQuiet runs every cron line of the tools' --help as cron does
// (sh -c, once, in the example's folder): cron mails whatever a job prints,
// so a line must print nothing when it succeeds, whether it had work to do
// or found the dataset finished, and must print what went wrong when it
// fails (here: its input is gone). run-dataset.sh's crontab line is
// TestRecipeCrontabLine's.
func TestCronLinesQuiet(t *testing.T) {
	t.Parallel()
	requireTools(t, "tokenize-prompts", "dedupe-resume", "generate", "budget-cut", "estimate")
	if _, err := exec.LookPath("jq"); err != nil {
		t.Fatalf("jq is not installed: a cron example uses it (scripts/ensure-test-deps.sh installs it)")
	}
	var lines []example
	for _, ex := range helpExamples() {
		if strings.Contains(ex.name, "cron") {
			lines = append(lines, ex)
		}
	}
	if len(lines) < 4 {
		t.Fatalf("found %d cron lines in the tools' --help, want at least 4", len(lines))
	}
	world := exampleWorld(t)
	for _, ex := range lines {
		t.Run(ex.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if out, err := exec.Command("cp", "-a", world+"/.", dir).CombinedOutput(); err != nil {
				t.Fatalf("copy the example's files: %v\n%s", err, out)
			}
			env := exampleEnv(t, dir, ex.script)
			cron := func() (string, error) {
				c := exec.Command("/bin/sh", "-c", substitute(ex.script))
				c.Dir, c.Env = dir, env
				return runWithin(c, 5*time.Minute)
			}
			for _, run := range []string{"the first run", "a run with nothing left to do"} {
				if out, err := cron(); err != nil || out != "" {
					t.Fatalf("%s: %v; want success and nothing printed (cron would mail it):\n%s\nas written:\n%s", run, err, out, ex.script)
				}
			}
			// A failure: the inputs are gone.
			for _, pattern := range []string{"req.jsonl*", "prompts.jsonl", "data/*/todo.jsonl*"} {
				matches, _ := filepath.Glob(filepath.Join(dir, pattern))
				for _, m := range matches {
					if err := os.Remove(m); err != nil {
						t.Fatal(err)
					}
				}
			}
			if out, _ := cron(); strings.TrimSpace(out) == "" {
				t.Errorf("with its input gone, the cron line prints nothing: cron would mail nothing\nas written:\n%s", ex.script)
			}
		})
	}
}
