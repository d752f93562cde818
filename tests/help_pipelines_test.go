package tests

// The pipelines that the tools' --help and man pages show are run as
// written (servers, tokenizer and budget swapped for test ones): a user
// copies them, and reruns them after a crash or to top a dataset up, so
// each must keep its budget across runs.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/bundle"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
	"github.com/synthpipe/synthpipe/lib/simtest"
	"github.com/synthpipe/synthpipe/lib/toolset"
)

// documentedPipelines are the --help examples of every tool that cut
// generated answers to a token budget in out.jsonl.
func documentedPipelines() map[string]string {
	found := map[string]string{}
	for _, tool := range toolset.All() {
		for _, ex := range tool.NewApp().Spec.Examples {
			if strings.Contains(ex.Command, "budget-cut --tokens") && strings.Contains(ex.Command, "out.jsonl") &&
				strings.Contains(ex.Command, "generate") {
				found[tool.Name+": "+ex.Comment] = ex.Command
			}
		}
	}
	return found
}

// runnable rewrites a documented command for a test directory: the test's
// server and tokenizer, a budget of budget tokens, no cron schedule.
func runnable(cmd, url string, budget int64) string {
	tok := "--tokenizer builtin:" + bundle.TokenizerName + " --date 2026-01-01"
	for _, r := range [][2]string{
		{"0 * * * * cd /data && ", ""},
		{"--tokenizer DIR", tok},
		{"--tokenizer ~/models/Qwen3-8B", tok},
		{"http://gpu1:30000", url},
		{"--url URL", "--url " + url},
		{"--tokens 10M", "--tokens " + strconv.FormatInt(budget, 10)},
		{"--token-budget 10M", "--token-budget " + strconv.FormatInt(budget, 10)},
		{"--max-tokens 8192", "--max-tokens 64"},
	} {
		cmd = strings.ReplaceAll(cmd, r[0], r[1])
	}
	return cmd
}

func TestHelpPipelinesKeepTheirBudget(t *testing.T) {
	t.Parallel()
	requireTools(t, "tokenize-prompts", "dedupe-resume", "generate", "budget-cut")
	pipelines := documentedPipelines()
	if len(pipelines) < 4 {
		t.Fatalf("found %d documented pipelines with budget-cut, expected those of tokenize-prompts, dedupe-resume, generate and budget-cut: %v", len(pipelines), pipelines)
	}
	srv := simtest.Start(t, quickSimConfig())
	for name, doc := range pipelines {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // mostly waiting on the server and pipes
			dir := t.TempDir()
			promptsPath, rs := bundledPrompts(t, dir)
			for _, alias := range []string{"p.jsonl", "prompts.jsonl"} {
				if alias != filepath.Base(promptsPath) {
					copyFile(t, promptsPath, filepath.Join(dir, alias))
				}
			}
			copyFile(t, rs.path, filepath.Join(dir, "req.jsonl"))
			// A budget of about a third of what all answers would take
			// binds in the first run: a second run must add nothing.
			var prompts int64
			for _, r := range rs.byID {
				prompts += int64(len(r.InputIDs))
			}
			budget := (prompts + int64(len(rs.byID))*48) / 3
			cmd := runnable(doc, srv.URL, budget)
			// --already on a file that does not exist yet is refused by
			// some versions: start from an empty output, as after a
			// first run that wrote nothing.
			if err := os.WriteFile(filepath.Join(dir, "out.jsonl"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			var spent [2]int64
			for run := range 2 {
				c := exec.Command("sh", "-c", cmd)
				c.Dir = dir
				out, err := runWithin(c, 2*time.Minute)
				if err != nil {
					t.Fatalf("run %d of %s\n(documented: %s): %v\n%s", run+1, cmd, doc, err, out)
				}
				spent[run] = fileTokens(t, filepath.Join(dir, "out.jsonl"))
				if spent[run] > budget {
					t.Fatalf("after run %d of the documented pipeline out.jsonl holds %d tokens, budget %d\ndocumented: %s\nran: %s\n%s",
						run+1, spent[run], budget, doc, cmd, out)
				}
			}
			if spent[0] < budget/2 {
				t.Errorf("the first run wrote %d tokens of a %d budget: the budget did not bind, the test proves nothing", spent[0], budget)
			}
			t.Logf("%d then %d tokens of %d", spent[0], spent[1], budget)
		})
	}
}

// runWithin runs c with a deadline and returns its combined output.
func runWithin(c *exec.Cmd, limit time.Duration) (string, error) {
	var out strings.Builder
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(limit):
		c.Process.Kill()
		<-done
		return out.String(), os.ErrDeadlineExceeded
	}
}

// fileTokens counts a file's tokens as budget-cut does.
func fileTokens(t *testing.T, path string) int64 {
	t.Helper()
	sum, err := record.SumTokens(nil, []string{path}, jsonl.Options{}, record.NewScanner("id", false, ""), record.CountTotal)
	if err != nil {
		t.Fatal(err)
	}
	return sum.Tokens
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
