package tests

// No documented loop throws away an answer it paid for: every pipeline of
// the README, of the tools' --help and of scripts/ in which generate feeds
// budget-cut gives generate the budget and what the output already holds
// (--token-budget, --already), so that generate starts no request whose
// answer budget-cut would refuse. Each is run on a budget already reached
// and on one nearly reached, and the answers the servers completed are
// counted against the records written: none may be missing.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/sim"
	"github.com/synthpipe/synthpipe/lib/simtest"
)

// generateIntoBudgetCut finds generate's part of a pipeline that ends in
// budget-cut (continuation lines joined).
var generateIntoBudgetCut = regexp.MustCompile(`\bgenerate\s([^|]*)\|\s*budget-cut\b`)

// joinContinued joins a script's continued lines (a backslash at the end,
// a pipe at the end, or a pipe at the start of the next line), its comments
// left out.
func joinContinued(s string) string {
	s = regexp.MustCompile(`(?m)^\s*#.*\n`).ReplaceAllString(s, "")
	s = regexp.MustCompile(`\\\n\s*`).ReplaceAllString(s, " ")
	s = regexp.MustCompile(`\|\s*\n\s*`).ReplaceAllString(s, "| ")
	return regexp.MustCompile(`\n\s*\|`).ReplaceAllString(s, " |")
}

// documentedPipelines are the README's blocks, the --help examples and the
// recipes in scripts/ that pipe generate into budget-cut.
func pipelinesIntoBudgetCut(t *testing.T) []example {
	var out []example
	for _, ex := range append(readmeBlocks(t), helpExamples()...) { // the longest, the README's job, first
		if generateIntoBudgetCut.MatchString(joinContinued(ex.script)) {
			out = append(out, ex)
		}
	}
	for _, name := range []string{"run-dataset.sh", "several-servers.sh", "demo.sh"} {
		b, err := os.ReadFile(filepath.Join(repoRoot(t), "scripts", name))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, example{"scripts/" + name, string(b)})
	}
	return out
}

func TestDocumentedPipelinesGiveGenerateTheBudget(t *testing.T) {
	t.Parallel()
	found := 0
	for _, ex := range pipelinesIntoBudgetCut(t) {
		for _, m := range generateIntoBudgetCut.FindAllStringSubmatch(joinContinued(ex.script), -1) {
			found++
			if !strings.Contains(m[1], "--token-budget") || !strings.Contains(m[1], "--already") {
				t.Errorf("%s: generate feeds budget-cut without --token-budget and --already: the answers budget-cut refuses are paid for and lost:\n%s", ex.name, m[0])
			}
		}
	}
	if found < 8 {
		t.Errorf("found %d pipelines of generate into budget-cut: the README, the --help examples or the scripts were not read", found)
	}
}

// paidCase is a documented pipeline made runnable: a script, and the
// output files it appends to.
type paidCase struct {
	name    string
	script  string
	outputs []string // relative to the world
	// answers: the nearly reached budget leaves room for some answers of
	// this case's --max-tokens, so that some must be written.
	answers bool
	env     []string // settings the case needs beyond the servers
}

// paidSubstitutions shorten the answers and the budgets so that a budget is
// reached in a few answers.
var paidSubstitutions = [][2]string{
	{"--max-tokens 10240", "--max-tokens 64"},
	{"--max-tokens 8192", "--max-tokens 64"},
	{"--token-budget 10M", "--token-budget 3k"},
}

func paidCases(t *testing.T) []paidCase {
	var cases []paidCase
	datasets := []string{"chat", "code", "math", "tools", "agent", "writing", "qa", "translate", "sql", "science"}
	for _, ex := range pipelinesIntoBudgetCut(t) {
		switch {
		case ex.name == "scripts/run-dataset.sh":
			cases = append(cases, paidCase{ex.name, `bash "$REPO/scripts/run-dataset.sh" chat`, []string{"data/chat/out.jsonl"}, true, recipeSettings})
		case ex.name == "scripts/several-servers.sh":
			cases = append(cases, paidCase{ex.name, `bash "$REPO/scripts/several-servers.sh" req.jsonl out.jsonl "$SIM"`, []string{"out.jsonl"}, true, recipeSettings[3:]})
		case ex.name == "scripts/demo.sh":
			// make demo's own run, on its own data: checked above for its flags.
		case strings.HasPrefix(ex.name, "README.md"):
			script := substitute(ex.script)
			var outs, env []string
			if loop := readmeAPILoop(script); loop != "" {
				env = []string{"SYNTHPIPE_TOKENIZER=builtin:kimi-k2.5"} // exported above the loop
				script = "set -o pipefail\n" + loop
				for _, d := range datasets {
					outs = append(outs, "data/"+d+"/out.jsonl")
				}
			} else {
				outs = []string{"out.jsonl"}
			}
			for _, r := range paidSubstitutions {
				script = strings.ReplaceAll(script, r[0], r[1])
			}
			cases = append(cases, paidCase{ex.name, script, outs, true, env})
		default:
			script := substitute(ex.script)
			for _, r := range paidSubstitutions {
				script = strings.ReplaceAll(script, r[0], r[1])
			}
			cases = append(cases, paidCase{ex.name, script, []string{"out.jsonl"}, strings.Contains(script, "--max-tokens 64"), nil})
		}
	}
	return cases
}

// recipeSettings are run-dataset.sh's settings; several-servers.sh takes
// the last two.
var recipeSettings = []string{"SYNTHPIPE_TOKENIZER=builtin:kimi-k2.5", "SYNTHPIPE_DATA=data", "SYNTHPIPE_URL=$SIM",
	"SYNTHPIPE_BUDGET=3000", "SYNTHPIPE_MAX_TOKENS=64"}

// readmeAPILoop is the README's OpenRouter loop (step 3 of the whole job)
// out of its block, "" when the block has none.
func readmeAPILoop(block string) string {
	start := strings.Index(block, "for d in chat code math tools agent")
	if start < 0 {
		return ""
	}
	end := strings.Index(block[start:], "\ndone\n")
	if end < 0 {
		return ""
	}
	return block[start : start+end+len("\ndone\n")]
}

func TestDocumentedPipelinesKeepPaidAnswers(t *testing.T) {
	t.Parallel()
	requireTools(t, "tokenize-prompts", "dedupe-resume", "generate", "budget-cut", "llm-sim")
	world := exampleWorld(t)
	cases := paidCases(t)
	if len(cases) < 8 {
		t.Fatalf("%d documented pipelines to run: some were not found", len(cases))
	}
	const budget = 3000
	for _, pc := range cases {
		for _, left := range []int64{0, 700} {
			t.Run(fmt.Sprintf("%s/%d_left", pc.name, left), func(t *testing.T) {
				t.Parallel()
				runPaidCase(t, world, pc, budget, left)
			})
		}
	}
}

// runPaidCase runs one pipeline with its outputs holding budget-left
// tokens and checks that every answer the servers completed was written.
func runPaidCase(t *testing.T, world string, pc paidCase, budget, left int64) {
	dir := t.TempDir()
	if out, err := exec.Command("cp", "-a", world+"/.", dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the world: %v\n%s", err, out)
	}
	before := map[string]int{}
	for _, o := range pc.outputs {
		pad := padRecords(budget - left)
		if err := os.WriteFile(filepath.Join(dir, o), pad, 0o644); err != nil {
			t.Fatal(err)
		}
		before[o] = bytes.Count(pad, []byte("\n"))
	}
	sglang := simtest.Start(t, quickSimConfig())
	routerCfg := sim.Default()
	routerCfg.ModelName = "moonshotai/kimi-k2.5"
	router := simtest.Start(t, routerCfg)
	c := exec.Command("bash", "-e", "-c", backgrounded(pc.script))
	c.Dir = dir
	c.Env = append(os.Environ(),
		"SIM="+sglang.URL, "SIM2="+sglang.URL, "ROUTER="+router.URL,
		"SYNTHPIPE_OPENROUTER_URL="+router.URL+"/api/v1",
		"REPO="+repoRoot(t), "OPENROUTER_API_KEY=sk-test",
	)
	for _, e := range pc.env {
		c.Env = append(c.Env, strings.ReplaceAll(e, "$SIM", sglang.URL))
	}
	out, err := runWithin(c, 5*time.Minute)
	if err != nil {
		t.Fatalf("%v\nas run:\n%s\noutput:\n%s", err, pc.script, tail(out, 3000))
	}
	written := 0
	for _, o := range pc.outputs {
		f, err := readJSONL(filepath.Join(dir, o))
		if err != nil {
			t.Fatal(err)
		}
		written += len(f.lines) - before[o]
		if n := fileTokens(t, filepath.Join(dir, o)); n > budget {
			t.Errorf("%s holds %d tokens, past the budget of %d", o, n, budget)
		}
	}
	s, r := sglang.Stats(), router.Stats()
	paid := s.Completed + r.Completed
	if int64(written) != paid || s.Aborted+r.Aborted != 0 {
		t.Errorf("%d tokens left: the servers completed %d answers (and aborted %d), %d were written: %d paid for and not written\nas run:\n%s\noutput:\n%s",
			left, paid, s.Aborted+r.Aborted, written, paid-int64(written), pc.script, tail(out, 3000))
	}
	if left > 0 && pc.answers && written == 0 {
		t.Errorf("%d tokens left, answers of at most 64 tokens: none was written\noutput:\n%s", left, tail(out, 3000))
	}
}

// padRecords are records of other prompts that hold n tokens, standing
// for what earlier runs wrote.
func padRecords(n int64) []byte {
	var b bytes.Buffer
	for i := 0; n > 0; i++ {
		k := min(n, 500)
		fmt.Fprintf(&b, `{"id":"earlier-%d","prompt_tokens":%d,"completion_tokens":0,"output_ids":[1]}`+"\n", i, k)
		n -= k
	}
	return b.Bytes()
}
