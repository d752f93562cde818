package tests

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/sim"
	"github.com/synthpipe/synthpipe/lib/simtest"
)

// The signal tests stop runs the way people and schedulers do: Ctrl-C or
// SIGTERM to the whole pipeline's process group, or to generate alone, with
// requests in flight drained or cancelled as --drain-timeout says. Each
// stopped run must exit with the documented code, leave valid output, and
// resume to a complete dataset.

// Signal test settings: answers take long enough (up to signalMaxTokens
// decode steps of signalStep) that requests are surely in flight when the
// signal comes.
const (
	signalRecords     = 120
	signalMaxTokens   = 64
	signalStep        = 15 * time.Millisecond
	signalConcurrency = 24
)

// signalSim is a server whose answers take up to about a second.
func signalSim(t *testing.T) *simtest.Server {
	cfg := quickSimConfig()
	cfg.Lengths.Max = signalMaxTokens
	cfg.StepTime = signalStep
	return simtest.Start(t, cfg)
}

func TestReliabilitySignals(t *testing.T) {
	requireTools(t, "tokenize-prompts", "dedupe-resume", "generate", "budget-cut", "to-train", "tokstat")
	passSignalsOn()
	t.Parallel() // mostly waiting on servers and pipes: it runs beside the other reliability tests
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run("pipeline_"+sigName(sig), func(t *testing.T) { signalPipeline(t, sig) })
		t.Run("generate_drain_"+sigName(sig), func(t *testing.T) { signalGenerate(t, sig, 10*time.Second) })
	}
	// A closed ssh session or a supervisor hanging up is a stop like
	// SIGTERM: drain, write, summarize, exit 129.
	t.Run("generate_drain_SIGHUP", func(t *testing.T) { signalGenerate(t, syscall.SIGHUP, 10*time.Second) })
	t.Run("generate_cancel_SIGTERM", func(t *testing.T) { signalGenerate(t, syscall.SIGTERM, 0) })
	t.Run("generate_drain_timeout_expires_SIGINT", func(t *testing.T) { signalGenerate(t, syscall.SIGINT, 300*time.Millisecond) })
	for _, consumer := range []string{"to-train", "tokstat"} {
		t.Run("consumer_"+consumer+"_SIGINT", func(t *testing.T) { signalConsumer(t, consumer, syscall.SIGINT) })
	}
	t.Run("second_signal", secondSignal)
	t.Run("signal_ends_backoff", signalEndsBackoff)
	t.Run("closed_pipe", closedPipe)
}

func sigName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return "SIGTERM"
}

// signalDrain is the --drain-timeout of the pipeline tests: far longer than
// an answer takes, so that nothing in flight may be cancelled.
const signalDrain = "20s"

// signalStartLimit bounds the wait for a pipeline's first records before it
// is signalled: a signal sent earlier finds the stages still starting
// (loading the tokenizer), which a busy machine makes slow, and tests
// nothing of a run stopped mid-way.
const signalStartLimit = 2 * time.Minute

// signalPipeline signals the README pipeline's process group mid-run, as a
// terminal's Ctrl-C does: every stage gets the signal at once.
//
//	tokenize-prompts | dedupe-resume --done out.jsonl | generate ... | budget-cut -o out.jsonl --append
//
// The producers stop and close their output, generate stops dispatching and
// drains what is in flight, and budget-cut reads on until generate has
// closed its output: every answer generate received is in out.jsonl.
func signalPipeline(t *testing.T, sig syscall.Signal) {
	dir := t.TempDir()
	promptsPath, rs := bundledPrompts(t, dir)
	srv := signalSim(t)
	outPath, errPath := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "errors.jsonl")
	gen := generateArgs("sglang", []string{srv.URL}, signalMaxTokens, errPath,
		"--concurrency", strconv.Itoa(signalConcurrency), "--drain-timeout", signalDrain)
	specs := []stageSpec{
		stage("tokenize-prompts", append(tokenizeArgs(), promptsPath)...),
		stage("dedupe-resume", "--done", outPath),
		stage("generate", gen...),
		stage("budget-cut", "--tokens", "1G", "-o", outPath, "--append"),
	}

	p := startPipeline(t, dir, "signalled", pipelineIO{}, specs...)
	waitForLines(outPath, 20, p.stageNamed("budget-cut").done, signalStartLimit)
	signalled := time.Now()
	if err := p.signalGroup(sig); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(time.Minute); err != nil {
		t.Fatalf("after %s to the process group: %v\n%s", sigName(sig), err, p.describe())
	}
	checkSignalledStages(t, p, sig, signalled)
	sum, err := parseSummary(p.stageNamed("generate").stderr())
	if err != nil {
		t.Fatal(err)
	}
	if sum.cancelled != 0 {
		t.Errorf("generate cancelled %d requests in flight with --drain-timeout %s, far longer than an answer takes: paid answers thrown away\n%s",
			sum.cancelled, signalDrain, p.describe())
	}
	written := countLines(outPath)
	if int64(written) != sum.ok {
		t.Errorf("generate received %d answers, out.jsonl holds %d: budget-cut stopped before generate had written what it drained\n%s",
			sum.ok, written, p.describe())
	}
	t.Logf("pipeline stopped %v after %s; %d records written; %+v", time.Since(signalled).Round(10*time.Millisecond), sigName(sig), written, sum)

	ans := answerChecker{srv: srv.Server, backend: "sglang", maxTokens: signalMaxTokens}
	checkOutcome(t, rs, ans, outPath, errPath, false)
	finishRun(t, dir, "resumed", specs, 2*time.Minute)
	o := checkOutcome(t, rs, ans, outPath, errPath, false)
	o.checkPartition(t, rs)
	if len(o.errIDs) > 0 {
		t.Errorf("%d records failed without any injected fault", len(o.errIDs))
	}
}

// checkSignalledStages demands that every stage still running when sig
// came reports it, once: a supervisor reading each stage's status
// (PIPESTATUS, GNU parallel's joblog) must not take an interrupted run for
// a finished one, whatever the stage met next (a closed pipe, the end of
// its input). A stage that had finished and exited before rightly reports
// 0.
func checkSignalledStages(t *testing.T, p *pipeline, sig syscall.Signal, signalled time.Time) {
	t.Helper()
	want := 128 + int(sig)
	said := "stopped by " + sigName(sig)
	for _, s := range p.stages {
		if s.exited.Before(signalled) && s.exitCode() == 0 {
			continue
		}
		if code := s.exitCode(); code != want {
			t.Errorf("%s exited %d after %s to the pipeline's process group, want %d\n%s", s.name, code, sigName(sig), want, p.describe())
		}
		if n := strings.Count(s.stderr(), said); n != 1 {
			t.Errorf("%s says %q %d times, want once\n%s", s.name, said, n, p.describe())
		}
	}
}

// signalConsumer signals a pipeline that ends in a consumer other than
// budget-cut: each must read on until generate has written what it
// drained, so that it counts (tokstat) or converts (to-train) every answer.
func signalConsumer(t *testing.T, consumer string, sig syscall.Signal) {
	dir := t.TempDir()
	rs := syntheticRequests(t, dir, signalRecords, 7+uint64(len(consumer)))
	srv := signalSim(t)
	errPath, resultPath := filepath.Join(dir, "errors.jsonl"), filepath.Join(dir, consumer+".out")
	gen := generateArgs("sglang", []string{srv.URL}, signalMaxTokens, errPath,
		"--concurrency", strconv.Itoa(signalConcurrency), "--drain-timeout", signalDrain)
	last := stage("to-train", "--format", "tokens", "--keep-truncated")
	if consumer == "tokstat" {
		last = stage("tokstat", "--json")
	}
	p := startPipeline(t, dir, "signalled", pipelineIO{stdout: resultPath},
		stage("dedupe-resume", "-q", rs.path), stage("generate", gen...), last)
	for deadline := time.Now().Add(signalStartLimit); srv.Stats().Completed < 10 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	signalled := time.Now()
	if err := p.signalGroup(sig); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(time.Minute); err != nil {
		t.Fatalf("after %s to the process group: %v\n%s", sigName(sig), err, p.describe())
	}
	checkSignalledStages(t, p, sig, signalled)
	sum, err := parseSummary(p.stageNamed("generate").stderr())
	if err != nil {
		t.Fatal(err)
	}
	got := int64(countLines(resultPath))
	if consumer == "tokstat" {
		var report struct {
			Total struct {
				Records int64 `json:"records"`
			} `json:"total"`
		}
		b, _ := os.ReadFile(resultPath)
		if err := json.Unmarshal(b, &report); err != nil {
			t.Fatalf("tokstat --json: %v: %.300s", err, b)
		}
		got = report.Total.Records
	}
	if sum.cancelled != 0 || got != sum.ok {
		t.Errorf("generate received %d answers (%d cancelled in flight); %s took in %d\n%s", sum.ok, sum.cancelled, consumer, got, p.describe())
	}
}

// secondSignal: a second signal stops every stage at once, even generate
// waiting on answers that would take minutes, and what was written is
// whole and resumable.
func secondSignal(t *testing.T) {
	dir := t.TempDir()
	rs := syntheticRequests(t, dir, 40, 2)
	cfg := quickSimConfig()
	cfg.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: signalMaxTokens}
	cfg.StepTime = 5 * time.Second // an answer takes minutes: only a second signal ends the drain
	srv := simtest.Start(t, cfg)
	outPath, errPath := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "errors.jsonl")
	gen := generateArgs("sglang", []string{srv.URL}, signalMaxTokens, errPath, "--concurrency", "8", "--drain-timeout", "1h")
	specs := resumePipeline(rs, outPath, gen)
	p := startPipeline(t, dir, "signalled", pipelineIO{}, specs...)
	for deadline := time.Now().Add(signalStartLimit); srv.Stats().Running < 8 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	// Two signals sent at once may merge into one in the kernel: Ctrl-C is
	// pressed again until every stage has gone.
	signalled := time.Now()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for _, s := range p.stages {
			for s.running() {
				p.signalGroup(syscall.SIGINT)
				sleepUnless(100*time.Millisecond, s.done)
			}
		}
	}()
	defer func() { <-stopped }()
	if err := p.wait(time.Minute); err != nil {
		t.Fatalf("after two SIGINTs: %v\n%s", err, p.describe())
	}
	for _, s := range p.stages {
		if s.exited.Before(signalled) && s.exitCode() == 0 {
			continue // it had passed on its whole input
		}
		if s.exitCode() != 130 {
			t.Errorf("%s exited %d after two SIGINTs, want 130\n%s", s.name, s.exitCode(), p.describe())
		}
	}
	ans := answerChecker{srv: srv.Server, backend: "sglang", maxTokens: signalMaxTokens}
	checkOutcome(t, rs, ans, outPath, errPath, false)
}

// signalGenerate signals generate alone, reading a file and writing a file.
// drain is its --drain-timeout: 0 cancels the requests in flight at once;
// otherwise they finish, unless the timeout runs out first.
func signalGenerate(t *testing.T, sig syscall.Signal, drain time.Duration) {
	dir := t.TempDir()
	rs := syntheticRequests(t, dir, signalRecords, uint64(sig)+uint64(drain))
	srv := signalSim(t)
	outPath, errPath := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "errors.jsonl")
	gen := generateArgs("sglang", []string{srv.URL}, signalMaxTokens, errPath,
		"--concurrency", strconv.Itoa(signalConcurrency), "--drain-timeout", drain.String())

	p := startPipeline(t, dir, "signalled", pipelineIO{stdout: outPath}, stage("generate", append(gen, rs.path)...))
	g := p.stages[0]
	waitForLines(outPath, 1, g.done, signalStartLimit)
	// generate flushes its stdout only now and then; the server's counters
	// say when answers are flowing.
	for deadline := time.Now().Add(signalStartLimit); srv.Stats().Completed < 10 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	inFlight := srv.Stats().Running + srv.Stats().Queued
	if err := g.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	if err := p.wait(drain + time.Minute); err != nil { // a hang guard, not a measure
		t.Fatalf("after %s: %v\n%s", sigName(sig), err, p.describe())
	}
	took := time.Since(signalled)
	if want := 128 + int(sig); g.exitCode() != want {
		t.Errorf("generate exited %d after %s, want %d\n%s", g.exitCode(), sigName(sig), want, p.describe())
	}
	sum, err := parseSummary(g.stderr())
	if err != nil {
		t.Error(err)
	}
	ans := answerChecker{srv: srv.Server, backend: "sglang", maxTokens: signalMaxTokens}
	o := checkOutcome(t, rs, ans, outPath, errPath, false)
	if int64(len(o.okIDs)) != sum.ok {
		t.Errorf("the summary counts %d ok, the output holds %d records", sum.ok, len(o.okIDs))
	}
	if sum.read >= int64(len(rs.byID)) && sum.notStarted == 0 {
		t.Logf("generate had read everything before the signal")
	}
	// A drained answer takes at most signalMaxTokens steps. How long the
	// stop took depends on the machine: it is logged, and what it did is
	// checked (cancelled or drained, and the server saw the same).
	longestAnswer := time.Duration(signalMaxTokens+1) * signalStep
	switch {
	case drain == 0:
		if inFlight > 0 && sum.cancelled == 0 {
			t.Errorf("with --drain-timeout 0 and %d requests in flight the summary cancels none: %+v", inFlight, sum)
		}
	case drain > 2*longestAnswer:
		if sum.cancelled != 0 {
			t.Errorf("with --drain-timeout %v, long enough for every answer, %d requests were cancelled", drain, sum.cancelled)
		}
		if n := srv.Stats().Aborted; n != 0 {
			t.Errorf("the server saw %d requests aborted during a drain that should have finished them", n)
		}
	}
	t.Logf("%s with --drain-timeout %v: stopped after %v; %+v", sigName(sig), drain, took.Round(10*time.Millisecond), sum)

	finishRun(t, dir, "resumed", resumePipeline(rs, outPath, generateArgs("sglang", []string{srv.URL}, signalMaxTokens,
		filepath.Join(dir, "errors2.jsonl"))), 60*time.Second)
	o = checkOutcome(t, rs, ans, outPath, "", false)
	o.checkPartition(t, rs)
}

// closedPipe: when budget-cut has all it wants and exits, generate sees the
// closed pipe, cancels what is in flight and exits 0, promptly.
func closedPipe(t *testing.T) {
	dir := t.TempDir()
	rs := syntheticRequests(t, dir, signalRecords, 99)
	srv := signalSim(t)
	outPath, errPath := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "errors.jsonl")
	gen := generateArgs("sglang", []string{srv.URL}, signalMaxTokens, errPath,
		"--concurrency", strconv.Itoa(signalConcurrency), rs.path)
	p := startPipeline(t, dir, "cut", pipelineIO{}, stage("generate", gen...),
		stage("budget-cut", "--tokens", "3000", "-o", outPath))
	if err := p.wait(2 * time.Minute); err != nil { // a hang guard, not a measure
		t.Fatalf("%v\n%s", err, p.describe())
	}
	for _, s := range p.stages {
		if s.exitCode() != 0 {
			t.Errorf("%s exited %d, want 0 (generate saw a closed pipe)\n%s", s.name, s.exitCode(), p.describe())
		}
	}
	t.Logf("generate ended %v after budget-cut closed the pipe", p.stages[0].exited.Sub(p.stages[1].exited).Round(time.Millisecond))
	sum, err := parseSummary(p.stages[0].stderr())
	if err != nil {
		t.Error(err)
	}
	if sum.notStarted == 0 && sum.read == int64(len(rs.byID)) {
		t.Errorf("generate went on through its whole input after budget-cut stopped: %+v", sum)
	}
	ans := answerChecker{srv: srv.Server, backend: "sglang", maxTokens: signalMaxTokens}
	checkOutcome(t, rs, ans, outPath, errPath, false)
	t.Logf("%+v", sum)
}

// signalEndsBackoff: a server that answers every request 429 with a
// Retry-After of decades holds each request in a back-off (up to
// --max-retry-wait, default five minutes). SIGTERM ends every back-off at
// once: the requests are cancelled, not failed, and generate exits 143 at
// once, not after --drain-timeout. The server holds its first answers until
// every record has been sent: a 429 that came back sooner would pause the
// server before generate sent the rest, and the test would wait for
// requests that never come. Its capacity (probed first) is not held.
func signalEndsBackoff(t *testing.T) {
	const records = 8
	dir := t.TempDir()
	rs := syntheticRequests(t, dir, records, 3)
	var seen, refused atomic.Int64
	allSent := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		answer := r.URL.Path == "/generate" // not a probe of the server's capacity
		if answer && seen.Add(1) == records {
			close(allSent)
		}
		if answer {
			select {
			case <-allSent:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Retry-After", "999999999")
		http.Error(w, `{"error":"rate limited"}`, http.StatusTooManyRequests)
		if answer {
			refused.Add(1)
		}
	}))
	defer srv.Close()
	outPath, errPath := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "errors.jsonl")
	gen := generateArgs("sglang", []string{srv.URL}, signalMaxTokens, errPath, "--concurrency", strconv.Itoa(records), "--drain-timeout", "1h", rs.path)
	p := startPipeline(t, dir, "signalled", pipelineIO{stdout: outPath}, stage("generate", gen...))
	g := p.stages[0]
	for deadline := time.Now().Add(signalStartLimit); refused.Load() < records && g.running() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := refused.Load(); n < records {
		t.Fatalf("the server refused %d requests in %v, want every record's (%d) before the signal\n%s", n, signalStartLimit, records, p.describe())
	}
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(time.Minute); err != nil {
		t.Fatalf("SIGTERM did not end the back-offs: %v\n%s", err, p.describe())
	}
	if g.exitCode() != 143 {
		t.Errorf("generate exited %d, want 143\n%s", g.exitCode(), p.describe())
	}
	sum, err := parseSummary(g.stderr())
	if err != nil {
		t.Fatal(err)
	}
	if sum.errors != 0 || sum.cancelled+sum.notStarted != sum.read || countLines(errPath) != 0 {
		t.Errorf("records waiting to retry must be cancelled (a later run does them), not failed: %+v, %d lines in --errors", sum, countLines(errPath))
	}
	t.Logf("the server saw %d requests for answers; %+v", seen.Load(), sum)
}

// passSignalsOn makes the tools this test starts begin with the default
// SIGHUP and SIGINT. A suite run under nohup, or as a background job of a
// script, starts with them ignored and would hand that on (exec keeps an
// ignored signal ignored), and the tools rightly keep a signal ignored that
// they were started with ignored; a handler here is reset to the default
// in every child.
func passSignalsOn() {
	for _, sig := range []os.Signal{syscall.SIGHUP, syscall.SIGINT} {
		if signal.Ignored(sig) {
			signal.Notify(make(chan os.Signal, 1), sig)
		}
	}
}
