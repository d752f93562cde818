package tests

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/simtest"
	"github.com/synthpipe/synthpipe/lib/statusfile"
)

// TestStatusFileSurvivesKill9: generate --status-file rewrites its file
// every millisecond while a reader reads it as fast as it can, and the
// run is killed with SIGKILL after a varying number of rewrites, again and
// again. Every read, during the run and after each kill, is a whole status
// file; a last run ends it with state finished.
func TestStatusFileSurvivesKill9(t *testing.T) {
	requireTools(t, "generate")
	t.Parallel()
	dir := t.TempDir()
	cfg := pacedSimConfig(2*time.Second, 300, 16, 208, 96)
	srv := simtest.Start(t, cfg)
	rs := syntheticRequests(t, dir, 300, 11)
	status := filepath.Join(dir, "status.json")
	args := []string{"--url", srv.URL, "--max-tokens", "96", "--progress-interval", "1ms", "--status-file", status}

	var reads, torn atomic.Int64
	var tornExample atomic.Value
	stopReader := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stopReader:
				return
			default:
			}
			time.Sleep(100 * time.Microsecond) // leave the cores to generate
			data, err := os.ReadFile(status)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			reads.Add(1)
			var st statusfile.Status
			if err != nil || json.Unmarshal(data, &st) != nil || st.Version != statusfile.Version {
				torn.Add(1)
				tornExample.Store(string(data))
			}
		}
	}()

	kills := scale(6, 30)
	for k := range kills {
		cmd := exec.Command("generate", args...)
		in, err := os.Open(rs.path)
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stdin, cmd.Stderr = in, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait for 1 to 4 rewrites by this process (its pid and a new
		// updated time), then kill it.
		want, seen := 1+k%4, 0
		var last time.Time
		deadline := time.Now().Add(time.Minute)
		for seen < want && time.Now().Before(deadline) {
			time.Sleep(100 * time.Microsecond)
			st, err := statusfile.Read(status)
			if err == nil && st.PID == cmd.Process.Pid && !st.Updated.Equal(last) {
				last = st.Updated
				seen++
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		in.Close()
		if seen < want {
			t.Fatalf("kill %d: saw %d rewrites of %d in a minute\n%s", k, seen, want, stderr.String())
		}
		st, err := statusfile.Read(status)
		if err != nil {
			t.Fatalf("after kill %d: %v", k, err)
		}
		if st.State != statusfile.StateRunning || st.Exit != nil || st.PID != cmd.Process.Pid {
			t.Fatalf("after kill %d: state %q exit %+v pid %d", k, st.State, st.Exit, st.PID)
		}
	}

	code, _, stderr := runTool(t, 2*time.Minute, nil, mustOpen(t, rs.path), "generate", args...)
	close(stopReader)
	wg.Wait()
	if code != 0 {
		t.Fatalf("last run: exit %d\n%s", code, stderr)
	}
	st, err := statusfile.Read(status)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != statusfile.StateFinished || st.Exit == nil || st.Exit.Code != 0 || st.Records.OK != 300 || st.ETASeconds != nil {
		t.Errorf("last run's status: state %q exit %+v ok %d", st.State, st.Exit, st.Records.OK)
	}
	if n := torn.Load(); n > 0 {
		t.Fatalf("%d of %d reads were not a whole status file, e.g. %q", n, reads.Load(), tornExample.Load())
	}
	t.Logf("%d kills, %d reads, none torn", kills, reads.Load())
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestReadmeJobViewAsPrinted: the job view the README shows ("Watching a
// job") has the columns and the note tokstat DIR prints now, and its rows
// line up under them as tokstat aligns them.
func TestReadmeJobViewAsPrinted(t *testing.T) {
	t.Parallel()
	requireTools(t, "tokstat")
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := bytes.Cut(readme, []byte("watch -n 10 tokstat data/"))
	if !ok {
		t.Fatal("the README shows no `watch -n 10 tokstat data/`")
	}
	_, view, _ := bytes.Cut(after, []byte("```\n```\n"))
	view, _, _ = bytes.Cut(view, []byte("```"))
	shown := strings.Split(strings.TrimSpace(string(view)), "\n")

	// A job of one finished dataset, as run-dataset.sh leaves it.
	data := t.TempDir()
	dir := filepath.Join(data, "chat")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "out.jsonl"), []byte(`{"id":"a","prompt_tokens":10,"completion_tokens":5,"finish_reason":"stop"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	st := statusfile.Status{Version: statusfile.Version, Tool: "generate", Host: host, PID: os.Getpid(), IntervalSeconds: 60,
		State: statusfile.StateFinished, Updated: time.Now(), Records: statusfile.Records{OK: 1},
		Tokens: statusfile.Tokens{Spent: 15, Budget: 100}, Exit: &statusfile.Exit{Code: 0, Reason: "input done"}}
	if err := statusfile.Write(filepath.Join(dir, "status.json"), &st); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runTool(t, time.Minute, nil, nil, "tokstat", data)
	if code != 0 {
		t.Fatalf("tokstat %s: exit %d\n%s", data, code, stderr)
	}
	printed := strings.Split(string(out), "\n")
	if got, want := strings.Fields(shown[0]), strings.Fields(printed[0]); !slices.Equal(got, want) {
		t.Errorf("the README's job view has the columns %v; tokstat prints %v", got, want)
	}
	const note = "records, soft and tokens: counted in the output files now"
	if !slices.ContainsFunc(printed, func(l string) bool { return strings.HasPrefix(l, note) }) {
		t.Fatalf("tokstat no longer prints %q:\n%s", note, out)
	}
	for _, l := range printed {
		if strings.HasPrefix(l, note) && !slices.Contains(shown, l) {
			t.Errorf("the README lacks the note tokstat prints: %q", l)
		}
	}
	// Right-aligned columns end where their header does.
	for _, row := range shown[1:5] {
		if len(row) > len(shown[0]) {
			t.Errorf("README job view row longer than its header:\n%s\n%s", shown[0], row)
		}
	}
}
