package tests

// Shared machinery of the reliability suite (reliability_*_test.go): sizing
// for make test and make stress, simulated servers, request files, pipelines
// of real tool processes joined by pipes, and the checks every test makes on
// what the tools wrote.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/bundle"
	"github.com/synthpipe/synthpipe/lib/sim"
)

// stressEnv switches the reliability suite to its full size: make stress
// sets it; make test runs the quick size that fits a CI minute.
const stressEnv = "SYNTHPIPE_STRESS"

// stressRun reports whether the full-size suite runs.
func stressRun() bool { return os.Getenv(stressEnv) != "" }

// scale returns quick under make test and full under make stress.
func scale(quick, full int) int {
	if stressRun() {
		return full
	}
	return quick
}

// requireTools fails the test when a tool it drives is not built into the
// test binary yet (lib/toolset lists what TestMain puts on PATH). Failing
// rather than skipping keeps a missing tool from passing as a green suite.
func requireTools(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			t.Fatalf("%s is not on PATH: it must be listed in lib/toolset for the reliability suite to run it (%v)", name, err)
		}
	}
}

// --- simulated servers ---

// quickSimConfig is a zero-latency server whose answers vary in length, so
// that results complete out of order, and whose injected 429s ask for the
// shortest wait the simulator can express (one second).
func quickSimConfig() sim.Config {
	cfg := sim.Default()
	cfg.Lengths = sim.LengthDist{Kind: sim.LengthUniform, Min: 1, Max: 96}
	cfg.Faults.RetryAfter = time.Second
	cfg.Faults.SlowFirstTokenDelay = 200 * time.Millisecond
	return cfg
}

// pacedSimConfig is quickSimConfig slowed down and narrowed so that
// records prompts take about runTime: the decode batch holds batch requests
// and its KV cache little more, so generate, which sizes its concurrency
// from the cache, reads its input gradually; and each decode step costs a
// fixed time, one answer token for every running request. Results then
// trickle out over the whole run, and a kill at a random moment interrupts
// every stage with work in hand.
func pacedSimConfig(runTime time.Duration, records, batch, maxPrompt, maxAnswer int) sim.Config {
	cfg := quickSimConfig()
	cfg.Lengths = sim.LengthDist{Kind: sim.LengthUniform, Min: 1, Max: maxAnswer}
	cfg.MaxRunningRequests = batch
	cfg.MaxTotalTokens = batch * (maxPrompt + maxAnswer + 1)
	steps := records * (maxAnswer/2 + 1) / batch // answers average half the longest
	cfg.StepTime = runTime / time.Duration(max(steps, 1))
	return cfg
}

// --- request files ---

// request is one input record, as the tests later need it to judge the
// answer given to it.
type request struct {
	ID       string
	InputIDs []int
	Messages json.RawMessage
}

// requestSet is a test's input: the file holding it and its records by id.
type requestSet struct {
	path string
	byID map[string]request
}

// ids returns the distinct input ids, sorted.
func (rs requestSet) ids() []string {
	ids := make([]string, 0, len(rs.byID))
	for id := range rs.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// syntheticRequests writes n pre-tokenized requests to dir/requests.jsonl:
// input_ids for SGLang's native API and a one-message conversation for chat
// backends, with prompt lengths drawn from seed. Each prompt is distinct, so
// each answer is too, and a mix-up cannot go unnoticed.
func syntheticRequests(t *testing.T, dir string, n int, seed uint64) requestSet {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x5e9))
	rs := requestSet{path: filepath.Join(dir, "requests.jsonl"), byID: make(map[string]request, n)}
	var buf bytes.Buffer
	for i := range n {
		id := fmt.Sprintf("req-%06d", i)
		inputIDs := make([]int, 8+rng.IntN(200))
		for k := range inputIDs {
			inputIDs[k] = 3 + rng.IntN(30000)
		}
		msgs, _ := json.Marshal([]map[string]string{{"role": "user",
			"content": fmt.Sprintf("request %d: write %d words about topic %d", i, 10+rng.IntN(500), rng.IntN(1<<20))}})
		line, _ := json.Marshal(map[string]any{"id": id, "input_ids": inputIDs, "prompt_tokens": len(inputIDs),
			"messages": json.RawMessage(msgs), "dataset": "reliability"})
		buf.Write(line)
		buf.WriteByte('\n')
		rs.byID[id] = request{ID: id, InputIDs: inputIDs, Messages: msgs}
	}
	if err := os.WriteFile(rs.path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return rs
}

// bundledPrompts writes the sample prompts shipped in lib/bundle to
// dir/prompts.jsonl and returns what tokenize-prompts makes of them (run
// once per run of the package, outside any pipeline: tokenizedBundle): the
// requests the pipeline will send.
func bundledPrompts(t *testing.T, dir string) (promptsPath string, rs requestSet) {
	t.Helper()
	tb, err := tokenizedBundle()
	if err != nil {
		t.Fatal(err)
	}
	out := tb.tokenized
	promptsPath = filepath.Join(dir, "prompts.jsonl")
	if err := os.WriteFile(promptsPath, tb.prompts, 0o644); err != nil {
		t.Fatal(err)
	}
	rs.path = filepath.Join(dir, "tokenized.jsonl")
	if err := os.WriteFile(rs.path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	rs.byID = map[string]request{}
	for _, line := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		var r struct {
			ID       string          `json:"id"`
			InputIDs []int           `json:"input_ids"`
			Messages json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("tokenize-prompts wrote an invalid line: %v: %.200s", err, line)
		}
		if _, dup := rs.byID[r.ID]; dup {
			continue // identical prompts share an id; dedupe-resume keeps the first
		}
		rs.byID[r.ID] = request{ID: r.ID, InputIDs: r.InputIDs, Messages: r.Messages}
	}
	return promptsPath, rs
}

// tokenizedBundle is the bundled sample prompts and tokenize-prompts' output
// on them, made once and shared by the tests that run pipelines on them.
var tokenizedBundle = sync.OnceValues(func() (tb struct{ prompts, tokenized []byte }, err error) {
	src, err := bundle.Prompts()
	if err != nil {
		return tb, err
	}
	defer src.Close()
	if tb.prompts, err = io.ReadAll(src); err != nil {
		return tb, err
	}
	cmd := exec.Command("tokenize-prompts", tokenizeArgs()...)
	cmd.Stdin = bytes.NewReader(tb.prompts)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if tb.tokenized, err = cmd.Output(); err != nil {
		return tb, fmt.Errorf("tokenize-prompts on the bundled prompts: %v\n%s", err, stderr.Bytes())
	}
	return tb, nil
})

// tokenizeArgs runs tokenize-prompts on the bundled tokenizer with a fixed
// date, so that every run renders (and so identifies) a prompt the same way.
func tokenizeArgs() []string {
	return []string{"--tokenizer", "builtin:" + bundle.TokenizerName, "--date", "2026-01-01", "-q"}
}

// --- pipelines of tool processes ---

// stageSpec is one command of a pipeline.
type stageSpec struct {
	name string
	args []string
}

func stage(name string, args ...string) stageSpec { return stageSpec{name, args} }

// procStage is a started stage: its process, where its stderr goes and,
// once it ended, how.
type procStage struct {
	stageSpec
	cmd        *exec.Cmd
	stderrPath string
	done       chan struct{}
	state      *os.ProcessState
	waitErr    error
	exited     time.Time
}

// exitCode is the stage's exit status, or 128+signal when a signal ended
// it, as a shell reports it.
func (s *procStage) exitCode() int {
	ws, ok := s.state.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return s.state.ExitCode()
}

// stderr returns what the stage wrote on stderr so far.
func (s *procStage) stderr() string {
	b, _ := os.ReadFile(s.stderrPath)
	return string(b)
}

// running reports whether the stage has not exited yet.
func (s *procStage) running() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// pipeline is a shell-like pipeline of tool processes, each its own
// exec.Cmd so that a test holds every PID, all in one new process group so
// that a test can signal the whole pipeline as a terminal's Ctrl-C does.
type pipeline struct {
	label  string
	stages []*procStage
	pgid   int
	// leader holds the process group open: a stage that exits at once
	// (an empty input) would otherwise take the group with it, and the
	// next stage could not join it.
	leader *exec.Cmd
}

// pipelineIO says where a pipeline reads and writes: files, or the null
// device when empty.
type pipelineIO struct {
	stdin  string
	stdout string
	env    []string // added to the environment of every stage
}

// startPipeline starts the stages joined by pipes, stdin of the first and
// stdout of the last as pio says, each stage's stderr in
// dir/label.N.name.stderr. The test's cleanup kills whatever still runs.
func startPipeline(t *testing.T, dir, label string, pio pipelineIO, specs ...stageSpec) *pipeline {
	t.Helper()
	p := &pipeline{label: label}
	stdin, err := openOr(pio.stdin, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := openOr(pio.stdout, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		t.Fatal(err)
	}
	// The parent's copies of every pipe end are closed once the children
	// hold theirs, so that a stage that dies is seen by its neighbours as
	// EOF or a broken pipe, exactly as in a shell.
	parentEnds := []*os.File{stdin, stdout}
	defer func() {
		for _, f := range parentEnds {
			f.Close()
		}
	}()
	p.leader = exec.Command("sleep", "3600")
	p.leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.leader.Start(); err != nil {
		t.Fatalf("start the process group's leader: %v", err)
	}
	p.pgid = p.leader.Process.Pid
	go p.leader.Wait()
	next := stdin
	for i, spec := range specs {
		out := stdout
		var nextIn *os.File
		if i < len(specs)-1 {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			parentEnds = append(parentEnds, r, w)
			out, nextIn = w, r
		}
		st := &procStage{stageSpec: spec, done: make(chan struct{}),
			stderrPath: filepath.Join(dir, fmt.Sprintf("%s.%d.%s.stderr", label, i, spec.name))}
		errFile, err := os.Create(st.stderrPath)
		if err != nil {
			t.Fatal(err)
		}
		st.cmd = exec.Command(spec.name, spec.args...)
		st.cmd.Dir = dir
		st.cmd.Stdin, st.cmd.Stdout, st.cmd.Stderr = next, out, errFile
		st.cmd.Env = append(os.Environ(), pio.env...)
		st.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: p.pgid}
		if err := st.cmd.Start(); err != nil {
			errFile.Close()
			p.kill()
			t.Fatalf("start %s: %v", spec.name, err)
		}
		errFile.Close()
		go func() {
			st.waitErr = st.cmd.Wait()
			st.state, st.exited = st.cmd.ProcessState, time.Now()
			close(st.done)
		}()
		p.stages = append(p.stages, st)
		next = nextIn
	}
	t.Cleanup(p.kill)
	return p
}

// openOr opens path, or the null device when path is empty.
func openOr(path string, flag int) (*os.File, error) {
	if path == "" {
		path = os.DevNull
	}
	return os.OpenFile(path, flag, 0o644)
}

// kill ends every stage still running and waits for them.
func (p *pipeline) kill() {
	p.leader.Process.Kill()
	for _, s := range p.stages {
		if s.running() {
			s.cmd.Process.Kill()
		}
	}
	for _, s := range p.stages {
		<-s.done
	}
}

// signalGroup sends sig to every process of the pipeline at once, as a
// terminal does on Ctrl-C.
func (p *pipeline) signalGroup(sig syscall.Signal) error {
	return syscall.Kill(-p.pgid, sig)
}

// stageNamed returns the first stage running the named tool.
func (p *pipeline) stageNamed(name string) *procStage {
	for _, s := range p.stages {
		if s.name == name {
			return s
		}
	}
	panic("no stage " + name)
}

// wait waits up to limit for every stage to exit. A stage still running
// then is a hang: wait kills the pipeline and says which stages hung.
func (p *pipeline) wait(limit time.Duration) error {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	defer p.leader.Process.Kill()
	for _, s := range p.stages {
		select {
		case <-s.done:
		case <-deadline.C:
			var hung []string
			for _, s := range p.stages {
				if s.running() {
					hung = append(hung, s.name)
				}
			}
			p.kill()
			return fmt.Errorf("%s: %s still running %v after the run should have ended; killed", p.label, strings.Join(hung, ", "), limit)
		}
	}
	return nil
}

// describe renders every stage's exit code and the tail of its stderr, for
// failure messages.
func (p *pipeline) describe() string {
	var b strings.Builder
	for _, s := range p.stages {
		code := "running"
		if !s.running() {
			code = strconv.Itoa(s.exitCode())
		}
		fmt.Fprintf(&b, "  %s: exit %s\n%s", s.name, code, indent(tail(s.stderr(), 1500)))
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "    | " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    | ") + "\n"
}

// runTool runs one tool to completion with a deadline and returns its exit
// code, stdout and stderr.
func runTool(t *testing.T, limit time.Duration, env []string, stdin io.Reader, name string, args ...string) (code int, stdout, stderr []byte) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s %s: still running after %v; killed\nstderr:\n%s", name, strings.Join(args, " "), limit, tail(errb.String(), 3000))
	}
	return cmd.ProcessState.ExitCode(), out.Bytes(), errb.Bytes()
}

// --- memory ---

// peakRSSWatcher samples a process's peak resident set (VmHWM in
// /proc/PID/status) until it exits: the kernel forgets it at exit, so the
// last sample taken before is the figure.
type peakRSSWatcher struct {
	mu   sync.Mutex
	peak int64 // KiB
	stop chan struct{}
	done chan struct{}
}

func watchPeakRSS(pid int) *peakRSSWatcher {
	w := &peakRSSWatcher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if kb, err := procStatusKiB(pid, "VmHWM"); err == nil {
				w.mu.Lock()
				w.peak = max(w.peak, kb)
				w.mu.Unlock()
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// peakKiB stops sampling and returns the highest VmHWM seen.
func (w *peakRSSWatcher) peakKiB() int64 {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak
}

// procStatusKiB reads one "Name: N kB" field of /proc/PID/status.
func procStatusKiB(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// --- what the tools wrote ---

// resultRecord is the part of an output record the checks read.
type resultRecord struct {
	ID               string          `json:"id"`
	InputIDs         []int           `json:"input_ids"`
	Messages         json.RawMessage `json:"messages"`
	OutputIDs        []int           `json:"output_ids"`
	Text             string          `json:"text"`
	FinishReason     string          `json:"finish_reason"`
	PromptTokens     int64           `json:"prompt_tokens"`
	CompletionTokens int64           `json:"completion_tokens"`
}

func (r resultRecord) tokens() int64 { return r.PromptTokens + r.CompletionTokens }

// errorRecord is a line of generate's --errors file.
type errorRecord struct {
	ID    string `json:"id"`
	Error struct {
		Kind      string `json:"kind"`
		Status    int    `json:"status"`
		Message   string `json:"message"`
		Attempts  int    `json:"attempts"`
		Retryable bool   `json:"retryable"`
	} `json:"error"`
}

// jsonlFile is a JSONL file read whole: its complete lines and, when its
// writer was stopped mid-record, the torn bytes after the last newline.
type jsonlFile struct {
	lines [][]byte
	torn  []byte
}

// readJSONL reads path; a missing file reads as empty (a run that never
// wrote). Every complete line must be a JSON object.
func readJSONL(path string) (jsonlFile, error) {
	var f jsonlFile
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, err
	}
	if i := bytes.LastIndexByte(b, '\n'); i+1 < len(b) {
		f.torn, b = b[i+1:], b[:i+1]
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<30)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if !json.Valid(line) || !bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) {
			return f, fmt.Errorf("%s:%d: not a JSON object: %.200q", path, n, line)
		}
		f.lines = append(f.lines, bytes.Clone(line))
	}
	return f, sc.Err()
}

// readResults reads an output file of result records. allowTorn says
// whether a torn last line is acceptable (a run was killed and none has
// repaired the file since).
func readResults(path string, allowTorn bool) ([]resultRecord, error) {
	f, err := readJSONL(path)
	if err != nil {
		return nil, err
	}
	if len(f.torn) > 0 && !allowTorn {
		return nil, fmt.Errorf("%s ends in a torn line (%d bytes without a newline): %.120q", path, len(f.torn), f.torn)
	}
	recs := make([]resultRecord, len(f.lines))
	for i, line := range f.lines {
		if err := json.Unmarshal(line, &recs[i]); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, i+1, err)
		}
	}
	return recs, nil
}

// readErrors reads generate's errors file; a torn last line is allowed only
// when allowTorn.
func readErrors(path string, allowTorn bool) ([]errorRecord, error) {
	f, err := readJSONL(path)
	if err != nil {
		return nil, err
	}
	if len(f.torn) > 0 && !allowTorn {
		return nil, fmt.Errorf("%s ends in a torn line: %.120q", path, f.torn)
	}
	recs := make([]errorRecord, len(f.lines))
	for i, line := range f.lines {
		if err := json.Unmarshal(line, &recs[i]); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, i+1, err)
		}
		if recs[i].ID == "" || recs[i].Error.Kind == "" || recs[i].Error.Message == "" {
			return nil, fmt.Errorf("%s:%d: an error record needs id, error.kind and error.message: %.300s", path, i+1, line)
		}
	}
	return recs, nil
}

// answerChecker decides whether an answer is the one the simulator gives to
// that record's own prompt, so that no answer can land on another record.
type answerChecker struct {
	srv       *sim.Server
	backend   string // sglang or openai
	maxTokens int    // as sent, for rebuilding a chat request
}

func (c answerChecker) check(r resultRecord, req request) error {
	if c.backend == "openai" {
		body, _ := json.Marshal(map[string]any{"messages": req.Messages, "max_tokens": c.maxTokens})
		want, _, err := c.srv.ExpectedChatAnswer(body)
		if err != nil {
			return fmt.Errorf("id %s: %v", r.ID, err)
		}
		if r.Text != want {
			return fmt.Errorf("id %s: text %.80q is not the answer to its own prompt (%.80q)", r.ID, r.Text, want)
		}
		return nil
	}
	if !slices.Equal(r.InputIDs, req.InputIDs) {
		return fmt.Errorf("id %s: input_ids changed on the way", r.ID)
	}
	ids := r.OutputIDs
	if len(ids) == 0 {
		return fmt.Errorf("id %s: no output_ids (finish_reason %q)", r.ID, r.FinishReason)
	}
	if ids[len(ids)-1] == c.srv.Config().EOSTokenID {
		ids = ids[:len(ids)-1] // content never takes the EOS id
	}
	if want := c.srv.ExpectedOutputIDs(req.InputIDs, len(ids)); !slices.Equal(ids, want) {
		return fmt.Errorf("id %s: output_ids are not the answer to its own input_ids (first ids %v, want %v)",
			r.ID, ids[:min(4, len(ids))], want[:min(4, len(want))])
	}
	return nil
}

// outcome is where every record of a run ended, checked.
type outcome struct {
	results []resultRecord
	errors  []errorRecord
	okIDs   map[string]bool
	errIDs  map[string]errorRecord // the last error line of each id
}

// checkOutcome reads an output and an errors file and checks what every
// reliability test demands: each line parses, no id is written twice, every
// id is one of the inputs, every answer belongs to its own prompt. It
// reports problems with t.Errorf and returns what it read.
func checkOutcome(t *testing.T, rs requestSet, ans answerChecker, outPath, errPath string, allowTorn bool) outcome {
	t.Helper()
	o := outcome{okIDs: map[string]bool{}, errIDs: map[string]errorRecord{}}
	var err error
	if o.results, err = readResults(outPath, allowTorn); err != nil {
		t.Error(err)
	}
	if errPath != "" {
		if o.errors, err = readErrors(errPath, allowTorn); err != nil {
			t.Error(err)
		}
	}
	mixups := 0
	for _, r := range o.results {
		if o.okIDs[r.ID] {
			t.Errorf("id %s is in %s twice", r.ID, filepath.Base(outPath))
		}
		o.okIDs[r.ID] = true
		req, ok := rs.byID[r.ID]
		if !ok {
			t.Errorf("id %q in %s is not an input id", r.ID, filepath.Base(outPath))
			continue
		}
		if err := ans.check(r, req); err != nil {
			if mixups++; mixups <= 5 {
				t.Error(err)
			}
		}
	}
	if mixups > 5 {
		t.Errorf("... %d answers in all do not belong to their records", mixups)
	}
	for _, e := range o.errors {
		if _, ok := rs.byID[e.ID]; !ok {
			t.Errorf("id %q in the errors file is not an input id", e.ID)
		}
		o.errIDs[e.ID] = e
	}
	return o
}

// checkPartition demands that every input id ended exactly once, either in
// the output or in the errors file, and nowhere else.
func (o outcome) checkPartition(t *testing.T, rs requestSet) {
	t.Helper()
	var lost, both []string
	for _, id := range rs.ids() {
		_, failed := o.errIDs[id]
		switch {
		case o.okIDs[id] && failed:
			both = append(both, id)
		case !o.okIDs[id] && !failed:
			lost = append(lost, id)
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of %d records are neither in the output nor in the errors file (lost), e.g. %v", len(lost), len(rs.byID), lost[:min(5, len(lost))])
	}
	if len(both) > 0 {
		t.Errorf("%d records are both in the output and in the errors file, e.g. %v", len(both), both[:min(5, len(both))])
	}
	seen := map[string]bool{}
	for _, e := range o.errors {
		if seen[e.ID] {
			t.Errorf("id %s is in the errors file twice", e.ID)
		}
		seen[e.ID] = true
	}
}

// sortedKeys returns a map's keys in order, for stable reports.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// testDeadline bounds a whole test: the run must end by then, whatever the
// tools do.
func testDeadline(t *testing.T, d time.Duration) time.Time {
	if dl, ok := t.Deadline(); ok && time.Until(dl) < d {
		return dl.Add(-5 * time.Second)
	}
	return time.Now().Add(d)
}

// watchedRun is how one watched process ended.
type watchedRun struct {
	code     int // exit status, or 128+signal
	stderr   []byte
	elapsed  time.Duration
	peakKiB  int64 // peak resident set (VmHWM)
	timedOut bool  // still running at the deadline: killed
	err      error // it could not start
}

// runWatched runs one tool with stdout into a file, sampling its peak
// memory, and kills it at the deadline. It does not touch a testing.T, so
// that many runs can go at once and be judged afterwards.
func runWatched(deadline time.Time, env []string, stdoutPath, name string, args ...string) watchedRun {
	var res watchedRun
	out, err := os.Create(stdoutPath)
	if err != nil {
		res.err = err
		return res
	}
	defer out.Close()
	var errb bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, &errb
	start := time.Now()
	if res.err = cmd.Start(); res.err != nil {
		return res
	}
	rss := watchPeakRSS(cmd.Process.Pid)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Until(deadline)):
		res.timedOut = true
		cmd.Process.Kill()
		<-done
	}
	res.peakKiB = rss.peakKiB()
	res.elapsed = time.Since(start)
	res.stderr = errb.Bytes()
	res.code = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.code = 128 + int(ws.Signal())
	}
	return res
}

// generateArgs are the flags every reliability run of generate shares:
// backend, servers, a short answer limit and an errors file; the chat
// backend also needs the served model's name.
func generateArgs(backend string, urls []string, maxTokens int, errPath string, extra ...string) []string {
	args := []string{"--backend", backend, "--max-tokens", strconv.Itoa(maxTokens), "--errors", errPath}
	for _, u := range urls {
		args = append(args, "--url", u)
	}
	if backend == "openai" {
		args = append(args, "--model", sim.Default().ModelName)
	}
	return append(args, extra...)
}

// generateSummary is generate's closing line: where every record it read
// went. The counts must add up to the records read.
type generateSummary struct {
	read, ok, errors, cut, cancelled, notStarted int64
	lost                                         int64 // answered, but never written (a full disk, a closed stdout)
}

// lostPattern finds the answers the summary says were never written.
var lostPattern = regexp.MustCompile(`records? read: [^;]*?, ([\d,]+) lost \(answered`)

var summaryPattern = regexp.MustCompile(`([\d,]+) records? read: ([\d,]+) ok.*?, ([\d,]+) errors?.*?, ([\d,]+) cut by budget, ([\d,]+) cancelled in flight, ([\d,]+) not started`)

// parseSummary finds generate's summary in its stderr.
func parseSummary(stderr string) (generateSummary, error) {
	m := summaryPattern.FindStringSubmatch(stderr)
	if m == nil {
		return generateSummary{}, fmt.Errorf("no summary line (\"N records read: N ok, ...\") in generate's stderr:\n%s", tail(stderr, 2000))
	}
	n := make([]int64, len(m)-1)
	for i, s := range m[1:] {
		n[i], _ = strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
	}
	s := generateSummary{read: n[0], ok: n[1], errors: n[2], cut: n[3], cancelled: n[4], notStarted: n[5]}
	if m := lostPattern.FindStringSubmatch(stderr); m != nil {
		s.lost, _ = strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
	}
	if sum := s.ok + s.lost + s.errors + s.cut + s.cancelled + s.notStarted; sum != s.read {
		return s, fmt.Errorf("generate's summary does not add up: %d ok + %d lost + %d errors + %d cut + %d cancelled + %d not started = %d, but %d records were read",
			s.ok, s.lost, s.errors, s.cut, s.cancelled, s.notStarted, sum, s.read)
	}
	return s, nil
}

// resumePipeline is the resumable pipeline over pre-tokenized requests:
// dedupe-resume --done OUT REQUESTS | generate ... | budget-cut -o OUT --append.
func resumePipeline(rs requestSet, outPath string, generate []string) []stageSpec {
	return []stageSpec{
		stage("dedupe-resume", "-q", "--done", outPath, rs.path),
		stage("generate", generate...),
		stage("budget-cut", "-q", "--tokens", "1G", "-o", outPath, "--append"),
	}
}

// finishRun runs the resumable pipeline once more, undisturbed, and
// demands that every stage exits 0: what an interrupted run left behind
// must be resumable.
func finishRun(t *testing.T, dir, label string, specs []stageSpec, limit time.Duration) {
	t.Helper()
	p := startPipeline(t, dir, label, pipelineIO{}, specs...)
	if err := p.wait(limit); err != nil {
		t.Fatalf("%v\n%s", err, p.describe())
	}
	for _, s := range p.stages {
		if s.exitCode() != 0 {
			t.Errorf("%s: %s exited %d, want 0\n%s", label, s.name, s.exitCode(), p.describe())
		}
	}
}

// checkAccounted demands that every record generate did not finish is
// counted by its summary: a run that stopped early (exit 75, a signal)
// leaves records cancelled in flight or not started, which a resumed run
// does; any other record missing from both files is lost.
func (o outcome) checkAccounted(t *testing.T, rs requestSet, sum generateSummary) {
	t.Helper()
	if sum.ok != int64(len(o.okIDs)) || sum.errors != int64(len(o.errIDs)) {
		t.Errorf("generate's summary counts %d ok and %d errors, the files hold %d and %d", sum.ok, sum.errors, len(o.okIDs), len(o.errIDs))
	}
	unfinished := int64(len(rs.byID) - len(o.okIDs) - len(o.errIDs))
	if counted := sum.cancelled + sum.notStarted + int64(len(rs.byID)) - sum.read; unfinished != counted {
		t.Errorf("%d records are in neither file, but the summary accounts for %d (cancelled, not started or not read): %d lost",
			unfinished, counted, unfinished-counted)
	}
}
