package tests

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/sim"
	"github.com/synthpipe/synthpipe/lib/simtest"
)

// The crash-and-resume test runs the documented pipeline
//
//	tokenize-prompts | dedupe-resume --done out.jsonl | generate ... | budget-cut -o out.jsonl --append
//
// as four processes, SIGKILLs one stage at a random moment, runs the same
// command again, and so on; a last run goes undisturbed. Whatever was
// killed when, the output must then hold every record exactly once (or
// exactly the budget's share), every answer must belong to its own prompt,
// and the errors file must agree with the output.

// crashStages are the pipeline's stages in order; landed kill k hits stage
// k mod 4.
var crashStages = []string{"tokenize-prompts", "dedupe-resume", "generate", "budget-cut"}

// crashRunTime is about how long one undisturbed run takes against the
// paced simulator, so that kills land while records are still flowing.
const crashRunTime = 1200 * time.Millisecond

// crashMaxTokens caps answers; with crashRunTime it sets the simulator's
// pace (one answer token per decode step).
const crashMaxTokens = 96

// crashBatch is the simulated server's decode batch: small enough that
// generate holds only part of the input at a time, so that killing an
// upstream stage cuts its input short.
const crashBatch = 48

// crashRefusedShare is the share of requests the server refuses for good.
const crashRefusedShare = 0.02

// crashKillsPerCycle is how many kills a dataset goes through before its
// clean run. More would find it done: each run finishes part of the work.
const crashKillsPerCycle = 5

func TestReliabilityCrashResume(t *testing.T) {
	requireTools(t, crashStages...)
	t.Parallel() // mostly waiting on servers and pipes: it runs beside the other reliability tests
	for _, tc := range []struct {
		name string
		// budgetShare is the token budget as a share of what all records
		// take (about); 0: no budget, every record must end in the output.
		budgetShare float64
	}{
		{"no_budget", 0},
		{"budget_binds", 0.85},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// make test: 2 datasets x 5 kills x 2 budget modes = 20 kills.
			for cycle := range scale(2, 4) {
				t.Run(fmt.Sprintf("cycle%d", cycle), func(t *testing.T) {
					crashAndResume(t, uint64(cycle)*7919+uint64(len(tc.name)), crashKillsPerCycle, tc.budgetShare)
				})
			}
		})
	}
}

// crashAndResume runs one dataset from scratch to completion through kills
// kills, then one clean run, and checks the result.
func crashAndResume(t *testing.T, seed uint64, kills int, budgetShare float64) {
	dir := t.TempDir()
	promptsPath, rs := bundledPrompts(t, dir)
	maxPrompt := 0
	for _, r := range rs.byID {
		maxPrompt = max(maxPrompt, len(r.InputIDs))
	}
	cfg := pacedSimConfig(crashRunTime, len(rs.byID), crashBatch, maxPrompt, crashMaxTokens)
	// A few records are refused for their content (403 moderation, not
	// retryable), so that every run leaves some in the errors file, and
	// the kills meet it being written too.
	cfg.Faults.Moderation = crashRefusedShare
	srv := simtest.Start(t, cfg)
	ans := answerChecker{srv: srv.Server, backend: "sglang", maxTokens: crashMaxTokens}
	outPath, errPath := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "errors.jsonl")

	var budget int64
	cutArgs := []string{"-o", outPath, "--append"}
	if budgetShare > 0 {
		// Answers average half of crashMaxTokens (their lengths are
		// uniform), so half the most all records could take is about what
		// they do take.
		var most int64
		for _, r := range rs.byID {
			most += int64(len(r.InputIDs) + crashMaxTokens)
		}
		budget = int64(budgetShare * float64(most) / 2)
		cutArgs = append(cutArgs, "--tokens", strconv.FormatInt(budget, 10))
	} else {
		cutArgs = append(cutArgs, "--tokens", "1G")
	}
	stages := []stageSpec{
		stage("tokenize-prompts", append(tokenizeArgs(), promptsPath)...),
		stage("dedupe-resume", "--done", outPath),
		stage("generate", "--backend", "sglang", "--url", srv.URL, "--max-tokens", strconv.Itoa(crashMaxTokens),
			"--errors", errPath, "--timeout", "30s"),
		stage("budget-cut", cutArgs...),
	}

	// tokenizedSize is what tokenize-prompts writes in a whole run.
	tokenizedSize := fileSize(rs.path)
	// expected is about how many records the dataset ends with: all of
	// them, or as many as the budget buys; the record size is guessed
	// until the output shows it.
	expected := len(rs.byID)
	meanTokens := meanRecordTokens(rs, crashMaxTokens)
	rng := rand.New(rand.NewPCG(seed, 0xC4A5))
	landed := 0
	// A kill that comes after its stage exited does not count: runs go on
	// until kills have landed, each stage in turn, within a bound.
	for k := 0; landed < kills && k < 3*kills; k++ {
		target := landed % len(crashStages)
		done, _ := readResults(outPath, true)
		if len(done) == len(rs.byID) {
			t.Logf("run %d: every record is done: no work is left to interrupt", k)
			break
		}
		if budget > 0 {
			var spent int64
			for _, r := range done {
				spent += r.tokens()
			}
			if budget-spent < int64(crashMaxTokens) {
				t.Logf("run %d: the budget is about filled (%d of %d tokens): no work is left to interrupt", k, spent, budget)
				break
			}
			if len(done) > 0 {
				meanTokens = spent / int64(len(done))
			}
			expected = len(done) + int((budget-spent)/meanTokens)
		}
		start := time.Now()
		p := startPipeline(t, dir, fmt.Sprintf("run%02d", k), pipelineIO{}, stages...)
		victim := p.stages[target]
		// tokenize-prompts and dedupe-resume are done as soon as generate
		// and the pipes between hold the prompts (a few hundred KiB), so
		// they die after writing a random share (up to half) of what they
		// have to pass on. The others die after a random share (up to half) of the work
		// left has reached the output: while answers are arriving. Those
		// are the moments a kill can lose, tear or duplicate something.
		var moment string
		if target <= 1 {
			toPass := tokenizedSize * int64(len(rs.byID)-len(done)) / int64(len(rs.byID))
			n := 1 + rng.Int64N(max(toPass/2, 1))
			moment = fmt.Sprintf("after writing %d of about %d bytes", n, toPass)
			waitForWritten(victim.cmd.Process.Pid, n, victim.done, 30*time.Second)
		} else {
			n := 1 + rng.IntN(max((expected-len(done))/2, 1))
			moment = fmt.Sprintf("after %d more records", n)
			waitForLines(outPath, len(done)+n, victim.done, 30*time.Second)
		}
		if !victim.running() || victim.cmd.Process.Signal(syscall.SIGKILL) != nil {
			t.Logf("run %d: %s had already exited when its kill was due (%s)", k, victim.name, moment)
		} else {
			landed++
		}
		if err := p.wait(30 * time.Second); err != nil {
			t.Fatalf("run %d, %s killed %s: the others did not stop: %v\n%s", k, victim.name, moment, err, p.describe())
		}
		for _, s := range p.stages {
			if s != victim && s.exitCode() != 0 {
				t.Errorf("run %d, %s killed %s: %s exited %d, want 0 (a dead neighbour is EOF or a closed pipe)\n%s",
					k, victim.name, moment, s.name, s.exitCode(), p.describe())
			}
		}
		// Between runs the output may end in a torn line (budget-cut killed
		// mid-write); everything before it must already be sound.
		o := checkOutcome(t, rs, ans, outPath, errPath, true)
		checkCrashErrors(t, o)
		t.Logf("run %d: %s killed %s; the run took %v; %d records done", k, victim.name, moment,
			time.Since(start).Round(10*time.Millisecond), len(o.okIDs))
		if t.Failed() {
			t.FailNow()
		}
	}

	p := startPipeline(t, dir, "final", pipelineIO{}, stages...)
	if err := p.wait(60 * time.Second); err != nil {
		t.Fatalf("final run: %v\n%s", err, p.describe())
	}
	for _, s := range p.stages {
		if s.exitCode() != 0 {
			t.Errorf("final run: %s exited %d, want 0\n%s", s.name, s.exitCode(), p.describe())
		}
	}
	o := checkOutcome(t, rs, ans, outPath, errPath, false)
	checkCrashErrors(t, o)
	if budget == 0 {
		o.checkPartition(t, rs)
	} else {
		checkBudgetShare(t, rs, o, budget, crashMaxTokens)
	}
	if _, err := os.Stat(outPath + ".torn"); err == nil {
		t.Logf("a torn line was cut off out.jsonl on resume (kept in out.jsonl.torn)")
	}
	t.Logf("%d kills landed of %d; %d records in the output, %d refused in the last run; server: %d requests, %d aborted, %d refused",
		landed, kills, len(o.okIDs), len(o.errors), srv.Stats().Requests, srv.Stats().Aborted, srv.Stats().Faults[sim.FaultModeration])
}

// checkCrashErrors: the errors file holds the failures of the last run,
// which dedupe-resume passed because they were not done, and which failed
// instead of being written, so none can be in the output. A request
// cancelled because a neighbour died is no failure either: it is simply
// not done, and the next run does it. Only the refusals are failures.
func checkCrashErrors(t *testing.T, o outcome) {
	t.Helper()
	for _, id := range sortedKeys(o.errIDs) {
		e := o.errIDs[id].Error
		if o.okIDs[id] {
			t.Errorf("id %s is in the output and in the errors file (%s: %s)", id, e.Kind, e.Message)
		}
		if e.Status != http.StatusForbidden {
			t.Errorf("id %s is in the errors file with %s (status %d: %s); only refusals (403) were injected", id, e.Kind, e.Status, e.Message)
		}
	}
}

// checkBudgetShare demands that a binding budget was filled but never
// passed: the output's tokens are at most the budget, and what is left is
// less than one more record could take.
func checkBudgetShare(t *testing.T, rs requestSet, o outcome, budget int64, maxTokens int) {
	t.Helper()
	var spent int64
	for _, r := range o.results {
		spent += r.tokens()
	}
	var largest int64
	for _, r := range rs.byID {
		if !o.okIDs[r.ID] {
			largest = max(largest, int64(len(r.InputIDs)+maxTokens))
		}
	}
	switch {
	case spent > budget:
		t.Errorf("the output holds %d tokens, over the budget of %d", spent, budget)
	case largest > 0 && budget-spent >= largest:
		t.Errorf("the output holds %d tokens of a %d budget, and records that would fit are not done", spent, budget)
	}
	t.Logf("budget %d: %d tokens in %d records", budget, spent, len(o.results))
}

// countLines counts the complete lines of a file, 0 when it does not exist.
func countLines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

// waitForLines waits until the file at path holds n complete lines, the
// process behind done exits, or limit passes.
func waitForLines(path string, n int, done <-chan struct{}, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for countLines(path) < n && time.Now().Before(deadline) {
		if !sleepUnless(5*time.Millisecond, done) {
			return
		}
	}
}

// sleepUnless sleeps d unless done closes first; it reports whether it
// slept the whole time.
func sleepUnless(d time.Duration, done <-chan struct{}) bool {
	select {
	case <-done:
		return false
	case <-time.After(d):
		return true
	}
}

// meanRecordTokens is what a record takes on average: its prompt plus an
// answer of half the longest (the simulator's lengths are uniform).
func meanRecordTokens(rs requestSet, maxTokens int) int64 {
	var prompts int64
	for _, r := range rs.byID {
		prompts += int64(len(r.InputIDs))
	}
	return prompts/int64(len(rs.byID)) + int64(maxTokens/2+1)
}

// fileSize is a file's size, 0 when it cannot be read.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// waitForWritten waits until the process pid has written n bytes (wchar in
// /proc/PID/io: everything it handed to write), it exits, or limit passes.
func waitForWritten(pid int, n int64, done <-chan struct{}, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "wchar: "); ok {
				if w, _ := strconv.ParseInt(v, 10, 64); w >= n {
					return
				}
			}
		}
		if !sleepUnless(time.Millisecond, done) {
			return
		}
	}
}
