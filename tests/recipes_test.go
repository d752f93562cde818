package tests

// Tests of the recipes in scripts/: the bash scripts run as a user or cron
// runs them, calling the real tools (TestMain puts them on PATH) against
// llm-sim processes on loopback ports. The simulator's answers depend only
// on the prompt, so runs can be compared record for record.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/synthpipe/synthpipe/lib/bundle"
	"github.com/synthpipe/synthpipe/lib/statusfile"
	"github.com/synthpipe/synthpipe/lib/tokenizer"
)

// recipeTools are the synthpipe tools the recipes run.
var recipeTools = []string{"llm-sim", "tokenize-prompts", "dedupe-resume", "generate", "budget-cut"}

// requireGNUParallel fails the test when GNU parallel, which the fan-out
// recipe runs, is missing: make test installs it first (ensure-test-deps.sh).
func requireGNUParallel(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("parallel"); err != nil {
		t.Fatalf("GNU parallel is needed for scripts/fanout.sh: run scripts/ensure-test-deps.sh (make test does): %v", err)
	}
}

// recipeTimeout bounds one script run; the machine may be busy.
const recipeTimeout = 3 * time.Minute

// recipeRecord is the part of an output record the recipe tests read.
type recipeRecord struct {
	ID               string `json:"id"`
	Dataset          string `json:"dataset"`
	OutputIDs        []int  `json:"output_ids"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	Gen              struct {
		Endpoint string `json:"endpoint"`
	} `json:"gen"`
}

// bundledVocabSize is the vocabulary size of the bundled tokenizer, which
// the recipes tokenize with: llm-sim, like SGLang, refuses ids past its own.
var bundledVocabSize = sync.OnceValues(func() (int, error) {
	dir, err := os.MkdirTemp("", "synthpipe-recipes-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	tokDir, err := bundle.ExtractTokenizer(dir)
	if err != nil {
		return 0, err
	}
	tok, err := tokenizer.Load(tokDir)
	if err != nil {
		return 0, err
	}
	return tok.VocabSize(), nil
})

// startLLMSim starts an llm-sim process serving the bundled tokenizer's
// vocabulary with short answers and returns its URL; the test's cleanup
// stops it.
func startLLMSim(t *testing.T, extra ...string) string {
	t.Helper()
	vocab, err := bundledVocabSize()
	if err != nil {
		t.Fatalf("the bundled tokenizer: %v", err)
	}
	urlFile := filepath.Join(t.TempDir(), "url")
	args := append([]string{"--url-file", urlFile, "--lengths", "uniform:1,24", "--vocab-size", fmt.Sprint(vocab)}, extra...)
	cmd := exec.Command("llm-sim", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	var url string
	startServer(t, cmd, "llm-sim", "write its URL", stderr.String, func() bool {
		b, err := os.ReadFile(urlFile)
		url = strings.TrimSpace(string(b))
		return err == nil && strings.HasSuffix(string(b), "\n")
	})
	return url
}

// startServer starts cmd, a server the test needs, stops it when the test
// ends (SIGTERM, then SIGKILL after 10 s), and returns once ready says it
// serves; it fails the test, with what log returns, if the server exits
// first or is not ready within 30 s.
func startServer(t *testing.T, cmd *exec.Cmd, name, readiness string, log func() string, ready func() bool) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	for deadline := time.Now().Add(30 * time.Second); !ready(); time.Sleep(20 * time.Millisecond) {
		select {
		case <-done:
			t.Fatalf("%s exited before it was ready:\n%s", name, log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not %s within 30s:\n%s", name, readiness, log())
		}
	}
}

// closedPortURL is a loopback URL with nothing listening: every connection
// is refused.
func closedPortURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	return url
}

// recipeData lays out the bundled sample prompts as the recipes expect
// them, DATA/DATASET/prompts.jsonl, for the datasets named, and returns DATA.
// The prompts carry no dataset field: the recipes write it from the folder.
func recipeData(t *testing.T, datasets ...string) string {
	t.Helper()
	data := t.TempDir()
	src, err := bundle.Prompts()
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	byDataset := map[string]*strings.Builder{}
	for _, d := range datasets {
		byDataset[d] = &strings.Builder{}
	}
	sc := bufio.NewScanner(src)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		if b := byDataset[gjson.GetBytes(sc.Bytes(), "dataset").String()]; b != nil {
			// Real prompts rarely name their dataset: the folder does.
			line, err := sjson.DeleteBytes(sc.Bytes(), "dataset")
			if err != nil {
				t.Fatal(err)
			}
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for d, b := range byDataset {
		if b.Len() == 0 {
			t.Fatalf("no bundled prompts of dataset %q", d)
		}
		if err := os.MkdirAll(filepath.Join(data, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, d, "prompts.jsonl"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return data
}

// recipeEnv is the recipes' settings for a data folder and servers, with
// short answers and a fixed template date.
func recipeEnv(data string, urls ...string) []string {
	return []string{
		"SYNTHPIPE_DATA=" + data,
		"SYNTHPIPE_TOKENIZER=builtin:" + bundle.TokenizerName,
		"SYNTHPIPE_URL=" + strings.Join(urls, " "),
		"SYNTHPIPE_MAX_TOKENS=24",
		"SYNTHPIPE_TOKENIZE_ARGS=--date 2026-01-01 -j 1",
	}
}

// stopFanout signals whatever runs of datasets fanout.sh left behind. It
// needs the test's environment: the runs' locks are under its SYNTHPIPE_DATA.
func stopFanout(env, datasets []string) {
	stop := exec.Command("bash", append([]string{filepath.Join("..", "scripts", "fanout.sh"), "stop"}, datasets...)...)
	stop.Env = append(os.Environ(), env...)
	stop.Run()
}

// runRecipe runs scripts/SCRIPT with args and env added to the test's
// environment, and returns its exit status and stderr.
func runRecipe(t *testing.T, env []string, script string, args ...string) (int, string) {
	t.Helper()
	code, _, stderr := runTool(t, recipeTimeout, env, nil, "bash", append([]string{filepath.Join("..", "scripts", script)}, args...)...)
	return code, string(stderr)
}

// mustRunRecipe runs a recipe that must succeed.
func mustRunRecipe(t *testing.T, env []string, script string, args ...string) string {
	t.Helper()
	code, stderr := runRecipe(t, env, script, args...)
	if code != 0 {
		t.Fatalf("%s %s: exit %d\n%s", script, strings.Join(args, " "), code, tail(stderr, 3000))
	}
	return stderr
}

// readRecipeOutput reads an output file whole; it must hold complete
// records only, each id once.
func readRecipeOutput(t *testing.T, paths ...string) map[string]recipeRecord {
	t.Helper()
	byID := map[string]recipeRecord{}
	for _, path := range paths {
		f, err := readJSONL(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.torn) > 0 {
			t.Fatalf("%s ends in a torn line", path)
		}
		for _, line := range f.lines {
			var r recipeRecord
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if _, dup := byID[r.ID]; dup {
				t.Fatalf("id %s is written twice (second time in %s)", r.ID, path)
			}
			if len(r.OutputIDs) == 0 {
				t.Fatalf("%s: record %s has no output_ids", path, r.ID)
			}
			byID[r.ID] = r
		}
	}
	return byID
}

func totalTokens(recs map[string]recipeRecord) int64 {
	var n int64
	for _, r := range recs {
		n += r.PromptTokens + r.CompletionTokens
	}
	return n
}

// promptCount is the number of distinct prompts of a dataset.
func promptCount(t *testing.T, data, dataset string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, dataset, "prompts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// deleteLines rewrites path without the records whose ids are given.
func deleteLines(t *testing.T, path string, ids ...string) {
	t.Helper()
	f, err := readJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept []byte
	for _, line := range f.lines {
		if !slices.Contains(ids, gjson.GetBytes(line, "id").String()) {
			kept = append(append(kept, line...), '\n')
		}
	}
	if err := os.WriteFile(path, kept, 0o644); err != nil {
		t.Fatal(err)
	}
}

var logLine = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \S+( \d+/\d+)? \S+: `)

// checkLog: every line of a dataset's run.log starts with a timestamp and
// says which run and which tool wrote it.
func checkLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if !logLine.MatchString(line) {
			t.Errorf("%s: line without a timestamp and a source: %q", path, line)
		}
	}
	return string(b)
}

// checkLogTells checks a run.log (see checkLog) and that it tells what
// phrase says exactly want times.
func checkLogTells(t *testing.T, path, phrase string, want int) {
	t.Helper()
	if log := checkLog(t, path); strings.Count(log, phrase) != want {
		t.Errorf("%s tells %q %d times, want %d:\n%s", path, phrase, strings.Count(log, phrase), want, log)
	}
}

func TestRecipeRunDatasetResumes(t *testing.T) {
	t.Parallel()
	requireTools(t, recipeTools...)
	data := recipeData(t, "math")
	env := recipeEnv(data, startLLMSim(t))
	out := filepath.Join(data, "math", "out.jsonl")

	mustRunRecipe(t, env, "run-dataset.sh", "math")
	first := readRecipeOutput(t, out)
	if want := promptCount(t, data, "math"); len(first) != want {
		t.Fatalf("first run wrote %d records, want one per prompt, %d", len(first), want)
	}
	firstBytes, _ := os.ReadFile(out)
	// Beside the output, the status file says the run finished and what it
	// wrote.
	st, err := statusfile.Read(filepath.Join(data, "math", "status.json"))
	if err != nil {
		t.Fatal(err)
	}
	if st.State != statusfile.StateFinished || st.Exit == nil || st.Exit.Code != 0 || st.Records.OK != int64(len(first)) {
		t.Errorf("status.json after the first run: state %q exit %+v ok %d, want finished, 0, %d", st.State, st.Exit, st.Records.OK, len(first))
	}

	mustRunRecipe(t, env, "run-dataset.sh", "math")
	if again, _ := os.ReadFile(out); string(again) != string(firstBytes) {
		t.Fatalf("a second run changed out.jsonl (%d bytes, then %d)", len(firstBytes), len(again))
	}
	// The rerun's status counts the records the first run wrote; tokstat
	// shows the dataset finished with all of them.
	code, view, _ := runTool(t, time.Minute, nil, nil, "tokstat", data)
	row := regexp.MustCompile(fmt.Sprintf(`(?m)^math +finished +%d/%d `, len(first), len(first)))
	if code != 0 || !row.Match(view) {
		t.Errorf("tokstat %s: exit %d, want a row matching %s:\n%s", data, code, row, view)
	}

	ids := sortedKeys(first)
	removed := []string{ids[3], ids[40], ids[len(ids)-1]}
	deleteLines(t, out, removed...)
	mustRunRecipe(t, env, "run-dataset.sh", "math")
	third := readRecipeOutput(t, out)
	if !reflect.DeepEqual(sortedKeys(third), ids) {
		t.Fatalf("after deleting %v, a run left %d records, want the %d of the first run", removed, len(third), len(ids))
	}
	f, _ := readJSONL(out)
	var added []string
	for _, line := range f.lines[len(f.lines)-len(removed):] {
		added = append(added, gjson.GetBytes(line, "id").String())
	}
	slices.Sort(added)
	if !reflect.DeepEqual(added, removed) {
		t.Errorf("the run appended %v, want exactly the deleted %v", added, removed)
	}
	for _, id := range removed {
		if !reflect.DeepEqual(third[id].OutputIDs, first[id].OutputIDs) {
			t.Errorf("%s: the redone answer differs from the first", id)
		}
	}

	// A run killed while it wrote leaves a torn last line: the next run
	// redoes that record.
	f, _ = readJSONL(out)
	tornID := gjson.GetBytes(f.lines[len(f.lines)-1], "id").String()
	info, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(out, info.Size()-10); err != nil {
		t.Fatal(err)
	}
	mustRunRecipe(t, env, "run-dataset.sh", "math")
	fourth := readRecipeOutput(t, out)
	if !reflect.DeepEqual(sortedKeys(fourth), ids) || !reflect.DeepEqual(fourth[tornID].OutputIDs, first[tornID].OutputIDs) {
		t.Errorf("after tearing the last line (%s), a run left %d records, want the %d of the first run", tornID, len(fourth), len(ids))
	}
	checkLogTells(t, filepath.Join(data, "math", "run.log"), "run-dataset: done: ", 4)
}

func TestRecipeRunDatasetBudget(t *testing.T) {
	t.Parallel()
	requireTools(t, recipeTools...)
	data := recipeData(t, "math")
	const budget = 1500
	env := append(recipeEnv(data, startLLMSim(t)), fmt.Sprintf("SYNTHPIPE_BUDGET=%d", budget))
	out := filepath.Join(data, "math", "out.jsonl")

	mustRunRecipe(t, env, "run-dataset.sh", "math")
	first := readRecipeOutput(t, out)
	if n := totalTokens(first); n > budget || len(first) == 0 || len(first) == promptCount(t, data, "math") {
		t.Fatalf("first run: %d records, %d tokens; want some records but not all, at most %d tokens", len(first), n, budget)
	}
	for range 2 {
		mustRunRecipe(t, env, "run-dataset.sh", "math")
		again := readRecipeOutput(t, out)
		if n := totalTokens(again); n > budget {
			t.Fatalf("a later run passed the budget: %d tokens, budget %d", n, budget)
		}
		if len(again) != len(first) {
			// A record that still fits may be added; none may be lost.
			for id := range first {
				if _, ok := again[id]; !ok {
					t.Fatalf("a later run lost %s", id)
				}
			}
		}
	}
	// Every run's log has dedupe-resume's counts, also where generate
	// closed the pipe at the budget before all was read.
	checkLogTells(t, filepath.Join(data, "math", "run.log"), " repeated in stream, ", 3)
}

func TestRecipeRunDatasetLock(t *testing.T) {
	t.Parallel()
	requireTools(t, recipeTools...)
	data := recipeData(t, "math")
	// Answers are held until a run has ended: the run that took the lock
	// holds it, however slowly the other starts.
	srv := startHeldSim(t, 0)
	env := recipeEnv(data, srv.URL)

	type result struct {
		code   int
		stderr string
	}
	results := make(chan result, 2)
	for range 2 {
		cmd := exec.Command("bash", filepath.Join("..", "scripts", "run-dataset.sh"), "math")
		cmd.Env = append(os.Environ(), env...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			cmd.Wait()
			results <- result{cmd.ProcessState.ExitCode(), stderr.String()}
		}()
	}
	var ended []result // in the order the runs ended
	for range 2 {
		select {
		case r := <-results:
			ended = append(ended, r)
			srv.release() // the lock holder may finish now
		case <-time.After(recipeTimeout):
			t.Fatalf("run-dataset.sh still running after %v", recipeTimeout)
		}
	}
	a, b := ended[0], ended[1]
	for _, r := range []result{a, b} {
		if r.code != 0 {
			t.Fatalf("run-dataset.sh exited %d:\n%s", r.code, tail(r.stderr, 3000))
		}
	}
	// The run that stepped aside names the holder, says it is still running
	// and how to stop it; that it did not wait is shown by its finding the
	// lock taken at all (a waiting run would have found nothing to do).
	holder := regexp.MustCompile(`another run of math holds the lock and is still running \(pid \d+, process group \d+, since \S+, log \S+run\.log\): nothing to do; to stop it: `)
	if !holder.MatchString(a.stderr) {
		t.Fatalf("the run that ended first did not step aside for the lock holder, naming it:\n%s\nthe other:\n%s", a.stderr, b.stderr)
	}
	if strings.Contains(b.stderr, "holds the lock") {
		t.Fatalf("both runs found the lock taken:\n%s", b.stderr)
	}
	if got, want := len(readRecipeOutput(t, filepath.Join(data, "math", "out.jsonl"))), promptCount(t, data, "math"); got != want {
		t.Errorf("out.jsonl holds %d records, want %d", got, want)
	}
	checkLogTells(t, filepath.Join(data, "math", "run.log"), "holds the lock and is still running", 1)
}

func TestRecipeRunDatasetRetryLater(t *testing.T) {
	t.Parallel()
	requireTools(t, recipeTools...)
	data := recipeData(t, "math")
	down := append(recipeEnv(data, closedPortURL(t)), "SYNTHPIPE_GENERATE_ARGS=--retries 1")

	code, stderr := runRecipe(t, down, "run-dataset.sh", "math")
	if code != 75 {
		t.Fatalf("with no server listening: exit %d, want 75 (try again later)\n%s", code, tail(stderr, 3000))
	}
	log := checkLog(t, filepath.Join(data, "math", "run.log"))
	if !strings.Contains(log, "-> 75") || !strings.Contains(log, "generate: ") {
		t.Errorf("run.log does not tell why the run must be retried:\n%s", log)
	}

	// The next cron run, with the server back, does the work.
	mustRunRecipe(t, recipeEnv(data, startLLMSim(t)), "run-dataset.sh", "math")
	if got, want := len(readRecipeOutput(t, filepath.Join(data, "math", "out.jsonl"))), promptCount(t, data, "math"); got != want {
		t.Errorf("the retry wrote %d records, want %d", got, want)
	}
}

func TestRecipeFanoutDatasets(t *testing.T) {
	t.Parallel()
	requireTools(t, recipeTools...)
	requireGNUParallel(t)
	datasets := []string{"math", "tools"}
	data := recipeData(t, datasets...)
	const budget = 1500
	env := append(recipeEnv(data, startLLMSim(t)), fmt.Sprintf("SYNTHPIPE_BUDGET=%d", budget))

	mustRunRecipe(t, env, "fanout.sh", append([]string{"datasets"}, datasets...)...)
	var sum int64
	for _, d := range datasets {
		recs := readRecipeOutput(t, filepath.Join(data, d, "out.jsonl"))
		n := totalTokens(recs)
		if len(recs) == 0 || n > budget {
			t.Errorf("%s: %d records, %d tokens; want some, within its own budget of %d", d, len(recs), n, budget)
		}
		for _, r := range recs {
			if r.Dataset != d {
				t.Errorf("%s/out.jsonl holds %s of dataset %q", d, r.ID, r.Dataset)
			}
		}
		checkLog(t, filepath.Join(data, d, "run.log"))
		sum += n
	}
	if sum <= budget {
		t.Errorf("the datasets hold %d tokens together: each should have had a budget of %d of its own", sum, budget)
	}
	// The README's per-dataset view: a row per dataset, none in (none).
	code, view, stderr := runTool(t, time.Minute, nil, nil, "tokstat", "--by", "dataset", "--budget", fmt.Sprint(budget),
		filepath.Join(data, "math", "out.jsonl"), filepath.Join(data, "tools", "out.jsonl"))
	for _, d := range datasets {
		if !regexp.MustCompile(`(?m)^` + d + ` `).Match(view) {
			t.Errorf("tokstat --by dataset: no row for %s:\n%s", d, view)
		}
	}
	if code != 0 || strings.Contains(string(view), "(none)") || len(stderr) > 0 {
		t.Errorf("tokstat --by dataset: exit %d, want 0, no (none) group and no warning:\n%s%s", code, view, stderr)
	}
}

func TestRecipeFanoutShards(t *testing.T) {
	t.Parallel()
	requireTools(t, recipeTools...)
	requireGNUParallel(t)
	data := recipeData(t, "chat")
	env := recipeEnv(data, startLLMSim(t))
	dir := filepath.Join(data, "chat")

	mustRunRecipe(t, env, "run-dataset.sh", "chat")
	whole := readRecipeOutput(t, filepath.Join(dir, "out.jsonl"))

	const shards = 4
	mustRunRecipe(t, env, "fanout.sh", "shards", "chat", fmt.Sprint(shards))
	var paths []string
	for k := range shards {
		p := filepath.Join(dir, fmt.Sprintf("out.shard-%d-of-%d.jsonl", k, shards))
		if len(readRecipeOutput(t, p)) == 0 {
			t.Errorf("shard %d/%d wrote nothing", k, shards)
		}
		paths = append(paths, p)
	}
	union := readRecipeOutput(t, paths...) // fails on an id in two shards
	if !reflect.DeepEqual(sortedKeys(union), sortedKeys(whole)) {
		t.Fatalf("the shards hold %d ids, the unsharded run %d: they should be the same", len(union), len(whole))
	}
	for id, r := range whole {
		if !reflect.DeepEqual(union[id].OutputIDs, r.OutputIDs) {
			t.Errorf("%s: the shard's output_ids differ from the unsharded run's", id)
		}
	}
	code, view, _ := runTool(t, time.Minute, nil, nil, "tokstat", data)
	for k := range shards {
		if code != 0 || !regexp.MustCompile(fmt.Sprintf(`(?m)^chat %d/%d +finished `, k, shards)).Match(view) {
			t.Errorf("tokstat %s: exit %d, no finished row for shard %d/%d:\n%s", data, code, k, shards, view)
		}
	}
	log := checkLog(t, filepath.Join(dir, "run.log"))
	for k := range shards {
		if !strings.Contains(log, fmt.Sprintf("chat %d/%d run-dataset: done: ", k, shards)) {
			t.Errorf("run.log does not record shard %d/%d finishing:\n%s", k, shards, log)
		}
	}

	// Resuming the shards adds nothing.
	before := len(union)
	mustRunRecipe(t, env, "fanout.sh", "shards", "chat", fmt.Sprint(shards))
	if after := len(readRecipeOutput(t, paths...)); after != before {
		t.Errorf("a second sharded run changed the shards from %d records to %d", before, after)
	}
}

func TestRecipeSeveralServers(t *testing.T) {
	t.Parallel()
	requireTools(t, recipeTools...)
	dir := t.TempDir()
	_, rs := bundledPrompts(t, dir)
	servers := []string{startLLMSim(t), startLLMSim(t), startLLMSim(t)}
	out := filepath.Join(dir, "out.jsonl")

	// The README's job exports SYNTHPIPE_TOKENIZER for run-dataset.sh: it is
	// not generate's --tokenizer here.
	env := []string{"SYNTHPIPE_MAX_TOKENS=24", "SYNTHPIPE_TOKENIZER=builtin:" + bundle.TokenizerName}
	mustRunRecipe(t, env, "several-servers.sh", append([]string{rs.path, out}, servers...)...)
	recs := readRecipeOutput(t, out)
	if !reflect.DeepEqual(sortedKeys(recs), rs.ids()) {
		t.Fatalf("wrote %d records, want one for each of the %d requests", len(recs), len(rs.ids()))
	}
	perServer := map[string]int{}
	for _, r := range recs {
		perServer[r.Gen.Endpoint]++
	}
	for _, s := range servers {
		if perServer[s] == 0 {
			t.Errorf("server %s answered none of the requests (answers per server: %v)", s, perServer)
		}
	}
}

// TestRecipeCrontabLine runs the crontab lines documented in run-dataset.sh
// as cron would: through sh, with cron's bare environment and the documented
// PATH, the tools standing where make install puts them.
func TestRecipeCrontabLine(t *testing.T) {
	t.Parallel()
	requireTools(t, recipeTools...)
	script, err := os.ReadFile(filepath.Join("..", "scripts", "run-dataset.sh"))
	if err != nil {
		t.Fatal(err)
	}
	pathLine := regexp.MustCompile(`(?m)^#   PATH=(\S+)$`).FindSubmatch(script)
	cronLine := regexp.MustCompile(`(?m)^#   \*/10 \* \* \* \* (.+)$`).FindSubmatch(script)
	if pathLine == nil || cronLine == nil {
		t.Fatal("run-dataset.sh documents no PATH line and */10 crontab line")
	}
	toolPath, err := exec.LookPath("generate")
	if err != nil {
		t.Fatal(err)
	}
	scripts, err := filepath.Abs(filepath.Join("..", "scripts"))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	data := recipeData(t, "chat")
	if err := os.Rename(data, filepath.Join(work, "data")); err != nil {
		t.Fatal(err)
	}
	sim := startLLMSim(t)
	cron := func(server string) (string, error) {
		command := strings.NewReplacer(
			"/srv/distill", work,
			"/models/Kimi-K2.5", "builtin:"+bundle.TokenizerName,
			"http://gpu1:30000", server,
			"/usr/local/share/synthpipe/scripts", scripts,
		).Replace(string(cronLine[1]))
		// The tools are in the first folder of the documented PATH.
		path := strings.Replace(string(pathLine[1]), "/usr/local/bin", filepath.Dir(toolPath), 1)
		cmd := exec.Command("/bin/sh", "-c", command)
		cmd.Env = []string{"HOME=" + work, "LOGNAME=cron", "SHELL=/bin/sh", "PATH=" + path, "SYNTHPIPE_MAX_TOKENS=24"}
		out, err := cmd.CombinedOutput() // what cron would mail
		return string(out), err
	}
	runLog := filepath.Join(work, "data", "chat", "run.log")
	outPath := filepath.Join(work, "data", "chat", "out.jsonl")
	// A run that does the work, and one on the finished dataset: cron
	// mails nothing.
	for _, run := range []string{"the first run", "a run on the finished dataset"} {
		if out, err := cron(sim); err != nil || out != "" {
			t.Fatalf("%s: %v; want success and nothing printed (cron mails it), got:\n%s", run, err, out)
		}
	}
	log := checkLog(t, runLog)
	recs := readRecipeOutput(t, outPath)
	if want := promptCount(t, filepath.Join(work, "data"), "chat"); len(recs) != want {
		t.Errorf("the cron run wrote %d records, want %d; run.log:\n%s", len(recs), want, log)
	}
	// A failure is printed: with a record to redo and no server, the run
	// says it failed, with the tools' own words.
	deleteLines(t, outPath, sortedKeys(recs)[0])
	// Every process of the last run has let the dataset's lock go (a
	// run that finds it taken steps aside, quietly): on a loaded machine
	// the last of them may still be exiting when cron's command returns.
	lock := filepath.Join(work, "data", "chat", ".lock")
	waitFor(t, recipeTimeout, "the last run's processes to let its lock go", func() bool { return flockFree(t, lock) })
	out, err := cron(closedPortURL(t))
	if code := exitCode(err); code != 75 || !strings.Contains(out, "run-dataset.sh: chat failed with exit status 75; its last lines of ") || !strings.Contains(out, "generate: ") {
		t.Errorf("a failed cron run: exit %d, want 75 and what failed printed, got:\n%s\nrun.log:\n%s", code, out, checkLog(t, runLog))
	}
}

// flockFree reports whether the lock file at path can be locked now: no
// process holds the open file run-dataset.sh locks (its children inherit it).
func flockFree(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return true
}

// exitCode is the exit status an exec error carries (0 for none).
func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestRecipeFanoutRetryLater: when the runs find no server, fanout.sh exits
// 75 as each run-dataset.sh did, so that cron tries the fan-out again.
func TestRecipeFanoutRetryLater(t *testing.T) {
	t.Parallel()
	requireTools(t, recipeTools...)
	requireGNUParallel(t)
	data := recipeData(t, "math", "tools")
	env := append(recipeEnv(data, closedPortURL(t)), "SYNTHPIPE_GENERATE_ARGS=--retries 1")
	if code, stderr := runRecipe(t, env, "fanout.sh", "datasets", "math", "tools"); code != 75 {
		t.Fatalf("with no server listening: exit %d, want 75 (try again later)\n%s", code, tail(stderr, 3000))
	}
}

// startFanout starts scripts/fanout.sh datasets in the background against
// srv, a simulator that holds answers until the test releases them, and
// returns it once every dataset's run holds its lock and runs generate: no
// run can end before the test has done what it tests. With group,
// fanout.sh leads a process group of its own, as the foreground job of a
// terminal. Its stderr goes to a file, read with the returned function: a
// pipe would keep Wait from returning while the runs it started still hold
// it.
func startFanout(t *testing.T, srv *heldSim, group bool, data string, datasets ...string) (*exec.Cmd, *fanoutExit, func() string) {
	t.Helper()
	// Two requests in flight: the drain after a signal is short.
	env := append(recipeEnv(data, srv.URL), "SYNTHPIPE_GENERATE_ARGS=--concurrency 2")
	cmd := exec.Command("bash", append([]string{filepath.Join("..", "scripts", "fanout.sh"), "datasets"}, datasets...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: group}
	errPath := filepath.Join(t.TempDir(), "fanout.stderr")
	errFile, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	cmd.Stderr = errFile
	stderr := func() string { b, _ := os.ReadFile(errPath); return string(b) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := &fanoutExit{done: make(chan struct{})}
	go func() { cmd.Wait(); exited.code = cmd.ProcessState.ExitCode(); close(exited.done) }()
	t.Cleanup(func() { stopFanout(env, datasets); srv.release() }) // whatever happened, leave no run behind
	for _, d := range datasets {
		lock := filepath.Join(data, d, ".lock")
		waitFor(t, recipeTimeout, d+"'s generate to start", func() bool {
			select {
			case <-exited.done:
				t.Fatalf("fanout.sh exited %d before %s's generate started:\n%s", exited.code, d, tail(stderr(), 3000))
			default:
			}
			if !lockHeld(lock) {
				return false
			}
			b, _ := os.ReadFile(lock)
			m := regexp.MustCompile(`process group (\d+)`).FindSubmatch(b)
			return m != nil && exec.Command("pgrep", "-g", string(m[1]), "-x", "generate").Run() == nil
		})
	}
	return cmd, exited, stderr
}

// fanoutExit is how fanout.sh ended: code, once done is closed.
type fanoutExit struct {
	done chan struct{}
	code int
}

// awaitSaid waits until fanout.sh's stderr so far says phrase (it says
// that it drains its runs once it has passed a signal on to them); it fails
// the test if fanout.sh exits without having said it. Its stderr is read
// again once it has exited: it may have said the phrase just before.
func awaitSaid(t *testing.T, exited *fanoutExit, stderr func() string, phrase string) {
	t.Helper()
	waitFor(t, recipeTimeout, "fanout.sh to say "+strconv.Quote(phrase), func() bool {
		select {
		case <-exited.done:
			if said := stderr(); !strings.Contains(said, phrase) {
				t.Fatalf("fanout.sh exited %d without saying %q:\n%s", exited.code, phrase, tail(said, 3000))
			}
			return true
		default:
		}
		return strings.Contains(stderr(), phrase)
	})
}

// lockHeld tells whether the run named in a run-dataset.sh lock file (its
// holder line, written once it has the lock) is still alive. It does not
// try the lock: a probe that takes it, even for a moment, can make a run
// that starts just then find it taken and step aside.
func lockHeld(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	m := regexp.MustCompile(`^pid (\d+),`).FindSubmatch(b)
	if m == nil {
		return false
	}
	pid, err := strconv.Atoi(string(m[1]))
	return err == nil && syscall.Kill(pid, 0) == nil
}

// waitFor polls cond until it holds, failing the test after limit (a
// bound for a busy machine, not a timing assertion).
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
	}
}

// A signal to fanout.sh reaches every run, each of which stops as the
// pipeline does (what was generated is written whole), and fanout.sh exits
// with the signal's status; nothing keeps running after it.
func TestRecipeFanoutStopsItsRuns(t *testing.T) {
	t.Parallel()
	requireTools(t, recipeTools...)
	requireGNUParallel(t)
	datasets := []string{"math", "tools"}
	data := recipeData(t, datasets...)
	srv := startHeldSim(t, 0)
	cmd, exited, stderr := startFanout(t, srv, false, data, datasets...)

	cmd.Process.Signal(syscall.SIGTERM)
	// The runs have the signal once fanout.sh says it drains them: then
	// the answers in flight may come, and are written.
	awaitSaid(t, exited, stderr, "fanout.sh: SIGTERM: no new runs; draining ")
	srv.release()
	select {
	case <-exited.done:
		if exited.code != 143 {
			t.Errorf("fanout.sh exited %d after SIGTERM, want 143:\n%s", exited.code, tail(stderr(), 3000))
		}
	case <-time.After(recipeTimeout):
		t.Fatalf("fanout.sh still running %v after SIGTERM", recipeTimeout)
	}
	for _, d := range datasets {
		if lockHeld(filepath.Join(data, d, ".lock")) {
			t.Errorf("%s: its run is still going after fanout.sh exited", d)
		}
		readRecipeOutput(t, filepath.Join(data, d, "out.jsonl")) // whole records only
		checkLogTells(t, filepath.Join(data, d, "run.log"), "run-dataset: done: ", 1)
		checkLogEndsWithTheRun(t, filepath.Join(data, d, "run.log"), "SIGTERM")
	}
}

// TestRecipeFanoutCtrlC presses Ctrl-C at the terminal while fanout.sh has
// written answers and has more in flight: the SIGINT goes to its process
// group, as a terminal sends it. fanout.sh says once what it does (how many
// runs it drains, that the answers in flight are written), none of GNU
// parallel's own notices, then how the runs ended; every output is whole,
// each answer once, and each run.log ends with the run's end.
func TestRecipeFanoutCtrlC(t *testing.T) {
	t.Parallel()
	requireTools(t, recipeTools...)
	requireGNUParallel(t)
	datasets := []string{"math", "tools"}
	data := recipeData(t, datasets...)
	// One answer is given, the others held: Ctrl-C comes when one run has
	// written an answer and both have more in flight.
	srv := startHeldSim(t, 1)
	cmd, exited, stderr := startFanout(t, srv, true, data, datasets...)
	var answered string // the dataset given the answer
	waitFor(t, recipeTimeout, "a first answer in an out.jsonl", func() bool {
		select {
		case <-exited.done:
			t.Fatalf("fanout.sh exited %d before any answer was written:\n%s", exited.code, tail(stderr(), 3000))
		default:
		}
		for _, d := range datasets {
			if fi, err := os.Stat(filepath.Join(data, d, "out.jsonl")); err == nil && fi.Size() > 0 {
				answered = d
			}
		}
		return answered != ""
	})
	out := filepath.Join(data, answered, "out.jsonl")
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	awaitSaid(t, exited, stderr, "fanout.sh: SIGINT: no new runs; draining ")
	srv.release()
	select {
	case <-exited.done:
		if exited.code != 130 {
			t.Errorf("fanout.sh exited %d after Ctrl-C, want 130", exited.code)
		}
	case <-time.After(recipeTimeout):
		t.Fatalf("fanout.sh still running %v after Ctrl-C:\n%s", recipeTimeout, tail(stderr(), 3000))
	}
	said := stderr()
	draining := regexp.MustCompile(`(?m)^fanout\.sh: SIGINT: no new runs; draining 2 run\(s\) \((math tools|tools math)\): .*lets the answers in flight finish .* and writes them; another SIGINT stops them at once`)
	if n := len(draining.FindAllString(said, -1)); n != 1 {
		t.Errorf("fanout.sh says %d times what it does after Ctrl-C, want once:\n%s", n, said)
	}
	outcome := regexp.MustCompile(`(?m)^fanout\.sh: stopped by SIGINT: (math|tools) exit \d+, (math|tools) exit \d+; .*run the same command again to finish$`)
	if !outcome.MatchString(said) {
		t.Errorf("fanout.sh does not end by saying how each run ended:\n%s", said)
	}
	if strings.Contains(said, "parallel: ") || strings.Contains(said, "SIGTERM to stop now") {
		t.Errorf("GNU parallel's own notices reach the user:\n%s", said)
	}
	// The answer given before Ctrl-C is there, and what was in flight
	// may have been written since: with every prompt of the dataset in
	// flight at Ctrl-C (the held server answers none), the drain writes
	// them all. That the stop came mid-run, the exit status and the logs
	// say.
	if n := len(readRecipeOutput(t, out)); n == 0 {
		t.Errorf("%s holds no answer after Ctrl-C, though one was written before it", answered)
	}
	for _, d := range datasets {
		if lockHeld(filepath.Join(data, d, ".lock")) {
			t.Errorf("%s: its run is still going after fanout.sh exited", d)
		}
		readRecipeOutput(t, filepath.Join(data, d, "out.jsonl")) // whole records, each once
		checkLogEndsWithTheRun(t, filepath.Join(data, d, "run.log"), "SIGINT")
	}
}

// checkLogEndsWithTheRun: a run stopped by a signal logs the tools' last
// words, then that it was stopped, and last its end.
func checkLogEndsWithTheRun(t *testing.T, path, sig string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(checkLog(t, path), "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, " run-dataset: done: ") {
		t.Errorf("%s: the last line is not the run's end: %q\n%s", path, last, strings.Join(lines, "\n"))
		return
	}
	if len(lines) < 2 || !strings.Contains(lines[len(lines)-2], " run-dataset: stopped by "+sig) {
		t.Errorf("%s: the line before the end does not say the run was stopped by %s:\n%s", path, sig, strings.Join(lines, "\n"))
	}
}

// After kill -9 of fanout.sh its runs go on: a rerun says who holds each
// lock and that it is still running, and fanout.sh stop ends them.
func TestRecipeFanoutStopAfterKill(t *testing.T) {
	t.Parallel()
	requireTools(t, recipeTools...)
	requireGNUParallel(t)
	datasets := []string{"math", "tools"}
	data := recipeData(t, datasets...)
	srv := startHeldSim(t, 0)
	cmd, exited, _ := startFanout(t, srv, false, data, datasets...)
	cmd.Process.Kill()
	<-exited.done

	env := recipeEnv(data, closedPortURL(t))
	_, again := runRecipe(t, env, "fanout.sh", append([]string{"datasets"}, datasets...)...)
	for _, d := range datasets {
		if !strings.Contains(again, "another run of "+d+" holds the lock and is still running (pid ") {
			t.Errorf("the rerun does not say that %s is still running, and by whom:\n%s", d, tail(again, 3000))
		}
	}
	code, stopped := runRecipe(t, env, "fanout.sh", append([]string{"stop"}, datasets...)...)
	if code != 0 || !strings.Contains(stopped, "signalled 2 run(s)") {
		t.Fatalf("fanout.sh stop: exit %d, want 0 and 2 runs signalled:\n%s", code, stopped)
	}
	srv.release() // the runs have the signal: their answers in flight may come
	for _, d := range datasets {
		waitFor(t, recipeTimeout, d+"'s run to end", func() bool { return !lockHeld(filepath.Join(data, d, ".lock")) })
		readRecipeOutput(t, filepath.Join(data, d, "out.jsonl"))
	}
}

// TestRecipeRunDatasetURLCredentials: a user and password in
// SYNTHPIPE_URL are used but never written: not in run.log, the output
// records (gen.endpoint), the errors file or stderr.
func TestRecipeRunDatasetURLCredentials(t *testing.T) {
	t.Parallel()
	requireTools(t, recipeTools...)
	data := recipeData(t, "math")
	const pass = "url-secret-1618"
	url := strings.Replace(startLLMSim(t), "http://", "http://alice:"+pass+"@", 1)
	stderr := mustRunRecipe(t, recipeEnv(data, url), "run-dataset.sh", "math")
	log := checkLog(t, filepath.Join(data, "math", "run.log"))
	if !strings.Contains(log, "run-dataset: start: ") {
		t.Fatalf("run.log has no start line:\n%s", log)
	}
	texts := map[string]string{"stderr": stderr, "run.log": log}
	for _, name := range []string{"out.jsonl", "errors.jsonl"} {
		b, _ := os.ReadFile(filepath.Join(data, "math", name))
		texts[name] = string(b)
	}
	if texts["out.jsonl"] == "" {
		t.Fatal("nothing was generated: the test proved nothing")
	}
	for name, text := range texts {
		if strings.Contains(text, pass) || strings.Contains(text, "alice") {
			t.Errorf("the credentials of the URL show in %s", name)
		}
	}
}
