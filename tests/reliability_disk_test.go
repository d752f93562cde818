package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/simtest"
)

// The full-disk tests fill the disk under a run: budget-cut -o onto a tiny
// tmpfs, and every tool's stdout on /dev/full. A full disk must end the run
// with exit 74 and a message that says so, and leave no torn record behind
// in a file the tool controls, so that the run resumes once there is room.

// smallDiskSize is the tmpfs the output goes to: a few hundred records.
const smallDiskSize = "256k"

// mountSmallDisk mounts a tmpfs of the given size in a fresh directory and
// unmounts it when the test ends. Mounting needs root (or CAP_SYS_ADMIN);
// without it the test fails and says why, rather than skipping: a silent
// skip would hide that full disks went untested.
func mountSmallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("the full-disk test mounts a %s tmpfs to fill it, which needs root or CAP_SYS_ADMIN "+
			"(in a container: --cap-add SYS_ADMIN or --privileged); mount said: %v: %s", size, err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// growDisk gives a mounted tmpfs more room, as freeing space would.
func growDisk(t *testing.T, dir, size string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,size="+size, dir).CombinedOutput(); err != nil {
		t.Fatalf("remount %s with size %s: %v: %s", dir, size, err, out)
	}
}

// checkDiskFullMessage demands the one-line diagnosis of a full disk: the
// tool's name first, the system's reason, and no panic.
func checkDiskFullMessage(t *testing.T, tool, stderr string) {
	t.Helper()
	if !strings.Contains(stderr, tool+": ") || !strings.Contains(stderr, "no space left on device") {
		t.Errorf("%s's message does not say the disk is full (want %q and \"no space left on device\"):\n%s", tool, tool+": ", tail(stderr, 2000))
	}
	if strings.Contains(stderr, "panic:") || strings.Contains(stderr, "goroutine ") {
		t.Errorf("%s panicked on a full disk:\n%s", tool, tail(stderr, 3000))
	}
}

func TestReliabilityFullDisk(t *testing.T) {
	requireTools(t, "budget-cut", "dedupe-resume", "generate", "gen-records")
	t.Parallel() // mostly waiting on servers and pipes: it runs beside the other reliability tests
	t.Run("budget-cut_output", fullDiskBudgetCut)
	t.Run("pipeline_then_resume", fullDiskPipeline)
	t.Run("generate_errors_file", fullDiskErrorsFile)
	t.Run("generate_stdout", fullDiskGenerateStdout)
	t.Run("stdout_dev_full", stdoutDevFull)
}

// fullDiskErrorsFile: generate's --errors file fills the disk. The failed
// records it could not write are failures nobody would see, so the run
// must stop with 74, and the file must still end in a whole record.
func fullDiskErrorsFile(t *testing.T) {
	disk := mountSmallDisk(t, "16k")
	dir := t.TempDir()
	rs := syntheticRequests(t, dir, 200, 16)
	cfg := quickSimConfig()
	cfg.Faults.HTTP500 = 1 // every record fails, and its request (input_ids and all) goes to the errors file
	srv := simtest.Start(t, cfg)
	errPath := filepath.Join(disk, "errors.jsonl")
	args := generateArgs("sglang", []string{srv.URL}, 32, errPath, "--retries", "0", rs.path)
	run := runWatched(testDeadline(t, time.Minute), nil, filepath.Join(dir, "out.jsonl"), "generate", args...)
	if run.code != 74 {
		t.Errorf("generate exited %d when its errors file filled the disk, want 74\n%s", run.code, tail(string(run.stderr), 2000))
	}
	checkDiskFullMessage(t, "generate", string(run.stderr))
	errs, err := readErrors(errPath, false)
	if err != nil {
		t.Errorf("the errors file after the disk filled: %v", err)
	}
	// The summary counts what the errors file holds, and says the rest
	// was lost, and where.
	sum, err := parseSummary(string(run.stderr))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("(%d in %s, %d lost: writing %s failed: ", len(errs), errPath, sum.errors-int64(len(errs)), errPath)
	if int64(len(errs)) >= sum.errors || !strings.Contains(string(run.stderr), want) {
		t.Errorf("the errors file holds %d records; the summary must count them and the %d lost, saying %q:\n%s",
			len(errs), sum.errors-int64(len(errs)), want, tail(string(run.stderr), 2000))
	}
}

// fullDiskGenerateStdout: generate's stdout fills the disk. The summary's
// ok counts the answers the file holds, whole, and says how many were
// answered but lost, and where; the run stops with 74.
func fullDiskGenerateStdout(t *testing.T) {
	disk := mountSmallDisk(t, "64k")
	dir := t.TempDir()
	rs := syntheticRequests(t, dir, 300, 23)
	srv := simtest.Start(t, quickSimConfig())
	outPath := filepath.Join(disk, "out.jsonl")
	args := generateArgs("sglang", []string{srv.URL}, 32, filepath.Join(dir, "errors.jsonl"), rs.path)
	run := runWatched(testDeadline(t, time.Minute), nil, outPath, "generate", args...)
	if run.code != 74 {
		t.Errorf("generate exited %d when its stdout filled the disk, want 74\n%s", run.code, tail(string(run.stderr), 2000))
	}
	checkDiskFullMessage(t, "generate", string(run.stderr))
	f, err := readJSONL(outPath)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := parseSummary(string(run.stderr))
	if err != nil {
		t.Fatal(err)
	}
	if sum.ok != int64(len(f.lines)) {
		t.Errorf("the summary counts %d ok, the output holds %d whole records:\n%s", sum.ok, len(f.lines), tail(string(run.stderr), 2000))
	}
	if sum.lost == 0 || !strings.Contains(string(run.stderr), "lost (answered, but writing stdout failed: ") {
		t.Errorf("answers that never reached stdout are not said to be lost, and where:\n%s", tail(string(run.stderr), 2000))
	}
}

// fullDiskBudgetCut: budget-cut -o onto a disk that fills part-way.
func fullDiskBudgetCut(t *testing.T) {
	disk := mountSmallDisk(t, smallDiskSize)
	dir := t.TempDir()
	// 2,000 records of about 600 bytes: several times the disk.
	code, records, stderr := runTool(t, 2*time.Minute, nil, nil, "gen-records", "2000", "40", "60")
	if code != 0 {
		t.Fatalf("gen-records exited %d: %s", code, stderr)
	}
	in := filepath.Join(dir, "records.jsonl")
	if err := os.WriteFile(in, records, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(disk, "out.jsonl")
	for _, appendMode := range []bool{false, true} {
		args := []string{"--tokens", "1G", "-o", out, in}
		if appendMode {
			// The disk is full already: appending must fail at once, and
			// still leave whole records.
			args = []string{"--tokens", "1G", "-o", out, "--append", in}
		}
		code, _, stderr = runTool(t, 30*time.Second, nil, nil, "budget-cut", args...)
		if code != 74 {
			t.Errorf("budget-cut %s onto a full disk exited %d, want 74\n%s", strings.Join(args, " "), code, stderr)
		}
		checkDiskFullMessage(t, "budget-cut", string(stderr))
		f, err := readJSONL(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.torn) > 0 {
			t.Errorf("%s ends in a torn record (%d bytes after the last newline) after the disk filled", out, len(f.torn))
		}
		if len(f.lines) == 0 || !bytes.HasPrefix(records, bytes.Join(append(f.lines, nil), []byte("\n"))) {
			t.Errorf("%s does not hold a prefix of the input's records (%d lines)", out, len(f.lines))
		}
		t.Logf("append=%v: %d whole records fit before the disk filled", appendMode, len(f.lines))
	}
}

// fullDiskPipeline: the resumable pipeline writes onto a disk that fills
// mid-run; once there is room, rerunning the same command completes the
// dataset with every record once.
func fullDiskPipeline(t *testing.T) {
	disk := mountSmallDisk(t, smallDiskSize)
	dir := t.TempDir()
	rs := syntheticRequests(t, dir, scale(300, 2000), 74)
	srv := simtest.Start(t, quickSimConfig())
	outPath, errPath := filepath.Join(disk, "out.jsonl"), filepath.Join(dir, "errors.jsonl")
	specs := resumePipeline(rs, outPath, generateArgs("sglang", []string{srv.URL}, 96, errPath))

	p := startPipeline(t, dir, "full", pipelineIO{}, specs...)
	if err := p.wait(60 * time.Second); err != nil {
		t.Fatalf("%v\n%s", err, p.describe())
	}
	cut := p.stageNamed("budget-cut")
	if cut.exitCode() != 74 {
		t.Errorf("budget-cut exited %d when the disk filled, want 74\n%s", cut.exitCode(), p.describe())
	}
	checkDiskFullMessage(t, "budget-cut", cut.stderr())
	for _, s := range p.stages[:2] {
		if s.exitCode() != 0 {
			t.Errorf("%s exited %d, want 0: budget-cut's exit is a closed pipe to it\n%s", s.name, s.exitCode(), p.describe())
		}
	}
	ans := answerChecker{srv: srv.Server, backend: "sglang", maxTokens: 96}
	o := checkOutcome(t, rs, ans, outPath, errPath, false)
	if len(o.okIDs) == 0 || len(o.okIDs) == len(rs.byID) {
		t.Fatalf("the disk should have filled part-way: %d of %d records written", len(o.okIDs), len(rs.byID))
	}
	t.Logf("the disk filled after %d of %d records", len(o.okIDs), len(rs.byID))

	growDisk(t, disk, "64m")
	finishRun(t, dir, "resumed", specs, 60*time.Second)
	o = checkOutcome(t, rs, ans, outPath, errPath, false)
	o.checkPartition(t, rs)
	if len(o.errIDs) > 0 {
		t.Errorf("%d records failed without any injected fault", len(o.errIDs))
	}
}

// stdoutDevFull: every tool writing to a full device exits 74 and says why.
func stdoutDevFull(t *testing.T) {
	dir := t.TempDir()
	rs := syntheticRequests(t, dir, 50, 7)
	promptsPath, _ := bundledPrompts(t, dir)
	srv := simtest.Start(t, quickSimConfig())
	for _, tc := range []struct {
		tool string
		args []string
	}{
		{"tokenize-prompts", append(tokenizeArgs(), promptsPath)},
		{"dedupe-resume", []string{rs.path}},
		{"generate", append(generateArgs("sglang", []string{srv.URL}, 32, filepath.Join(dir, "errors.jsonl")), rs.path)},
		{"budget-cut", []string{"--tokens", "1G", rs.path}},
		{"tokstat", []string{rs.path}},
		{"llm-sim", []string{"--addr", "127.0.0.1:0"}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			requireTools(t, tc.tool)
			full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
			if err != nil {
				t.Fatalf("this test needs /dev/full: %v", err)
			}
			defer full.Close()
			cmd := exec.Command(tc.tool, tc.args...)
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = full, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(2 * time.Minute): // a hang, even on a busy machine
				cmd.Process.Kill()
				<-done
				t.Fatalf("%s with stdout on /dev/full still ran after 2m: killed\n%s", tc.tool, tail(stderr.String(), 2000))
			}
			if code := cmd.ProcessState.ExitCode(); code != 74 {
				t.Errorf("%s with stdout on /dev/full exited %d, want 74\n%s", tc.tool, code, tail(stderr.String(), 2000))
			}
			checkDiskFullMessage(t, tc.tool, stderr.String())
		})
	}
}
