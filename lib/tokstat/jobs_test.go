package tokstat

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/statusfile"
)

// A job of five datasets, one in each state a run can be found in: the
// table shows each on its row, the total and the states, then the
// servers' view and how the ended runs ended; --json has the same.
func TestJobView(t *testing.T) {
	root := t.TempDir()
	host, _ := os.Hostname()
	now := time.Now().UTC()
	// A process that has exited: its pid is free.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	eta := 150.0
	base := func() *statusfile.Status {
		return &statusfile.Status{Version: 1, Tool: "generate", PID: os.Getpid(), Host: host, State: statusfile.StateRunning,
			Started: now.Add(-time.Hour), Updated: now, IntervalSeconds: 60,
			Records: statusfile.Records{OK: 800, Total: 1800, Errors: 3, Truncated: 7, Retries: 12},
			Tokens:  statusfile.Tokens{Spent: 2_500_000, Budget: 10_000_000, Count: "total"}}
	}
	write := func(dir, name string, st *statusfile.Status) {
		t.Helper()
		os.MkdirAll(filepath.Join(root, dir), 0o755)
		if st != nil {
			if err := statusfile.Write(filepath.Join(root, dir, name), st); err != nil {
				t.Fatal(err)
			}
		}
	}
	running := base()
	running.ETASeconds = &eta
	running.Servers = []statusfile.Server{{URL: "http://gpu1:30000", Metrics: &statusfile.Metrics{Running: 48, Queued: 2, TokenUsage: 0.91, GenThroughput: 1250, Ranks: 1}}}
	write("chat", "status.json", running)
	finished := base()
	finished.State, finished.Records.OK, finished.Tokens.Spent = statusfile.StateFinished, 1800, 9_990_000
	finished.Exit = &statusfile.Exit{Code: 0, Reason: "input done"}
	write("code", "status.shard-1-of-2.json", finished)
	failed := base()
	failed.State = statusfile.StateFailed
	failed.Exit = &statusfile.Exit{Code: 75, Reason: "no server reachable", Error: "http://gpu1:30000: connection refused after 6 attempts; no server is reachable"}
	write("math", "status.json", failed)
	died := base()
	died.PID = gone.Process.Pid
	write("poems", "status.json", died)
	stale := base()
	stale.Host, stale.Updated = "elsewhere", now.Add(-time.Hour)
	write("stories", "status.json", stale)
	os.MkdirAll(filepath.Join(root, "old"), 0o755)
	os.WriteFile(filepath.Join(root, "old", "out.jsonl"), []byte(`{"id":"a","prompt_tokens":10,"completion_tokens":5}`+"\n"+`{"id":"b","prompt_tokens":1,"completion_tokens":2}`+"\n"), 0o644)

	var out, errb bytes.Buffer
	if code := Main([]string{"tokstat", root}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	text := out.String()
	for _, want := range []string{
		"dataset   state          records  errors  soft  retries      tokens      budget   used    ETA\n",
		"chat      running      800/1,800       3     7       12   2,500,000  10,000,000  25.0%  2m30s\n",
		"code 1/2  finished   1,800/1,800       3     7       12   9,990,000  10,000,000  99.9%      -\n",
		"old       no status            2       0     0        0          18           -      -      -\n",
		"poems     died         800/1,800",
		"stories   stale        800/1,800",
		"total                                 15                 19,990,018  50,000,000  40.0%  2m30s\n",
		"6 datasets: 1 running, 1 finished, 1 failed, 1 died, 1 stale, 1 no status\n",
		"chat: http://gpu1:30000: 48 running, 2 queued, KV 91%, 1,250 tok/s\n",
		"code 1/2: exit 0: input done\n",
		"math: exit 75: http://gpu1:30000: connection refused after 6 attempts; no server is reachable\n",
		"poems: process ",
		"stories: not rewritten for 1h0m0s (on elsewhere)\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the job view lacks %q:\n%s", want, text)
		}
	}

	out.Reset()
	if code := Main([]string{"tokstat", "--json", root}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errb.String())
	}
	var job jobView
	if err := json.Unmarshal(out.Bytes(), &job); err != nil {
		t.Fatalf("--json: %v\n%s", err, out.String())
	}
	if len(job.Datasets) != 6 || job.Total.States["died"] != 1 || job.Total.ETASeconds == nil || *job.Total.ETASeconds != 150 ||
		job.Datasets[0].Dataset != "chat" || job.Datasets[0].Server == "" {
		t.Errorf("--json: %s", out.String())
	}

	// Folders and files together, or a flag for files, are usage errors.
	for _, args := range [][]string{{root, filepath.Join(root, "old", "out.jsonl")}, {"--by", "dataset", root}} {
		errb.Reset()
		if code := Main(append([]string{"tokstat"}, args...), strings.NewReader(""), &out, &errb); code != 64 {
			t.Errorf("tokstat %v: exit %d, want 64: %s", args, code, errb.String())
		}
	}
}
