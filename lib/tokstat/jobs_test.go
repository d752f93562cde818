package tokstat

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
		"dataset   state          records  errors  soft  retries      tokens      budget   used    ETA      status\n",
		"old       no status            2       0     0        0          18           -      -      -           -\n",
		"poems     died         800/1,800",
		"stories   stale        800/1,800",
		"total                      5,002      15    35           19,990,018  50,000,000  40.0%  2m30s\n", // old's total unknown
		"6 datasets: 1 running, 1 finished, 1 failed, 1 died, 1 stale, 1 no status\n",
		"chat: http://gpu1:30000: 48 running, 2 queued, KV 91%, 1,250 tok/s\n",
		"code 1/2: exit 0: input done\n",
		"math: exit 75: http://gpu1:30000: connection refused after 6 attempts; no server is reachable\n",
		"poems: process ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the job view lacks %q:\n%s", want, text)
		}
	}

	// Ages: the clock runs on between the statuses' writing and the view
	// (a second or more on a loaded machine).
	for _, want := range []string{
		`(?m)^chat      running      800/1,800       3     7       12   2,500,000  10,000,000  25\.0%  2m30s +\d+s ago$`,
		`(?m)^code 1/2  finished   1,800/1,800       3     7       12   9,990,000  10,000,000  99\.9%      - +\d+s ago$`,
		`(?m)^stories: not rewritten for 1h0m\d+s \(on elsewhere\)$`,
	} {
		if !regexp.MustCompile(want).MatchString(text) {
			t.Errorf("the job view does not match %s:\n%s", want, text)
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

// The view counts what the outputs hold, not what a status file last said:
// a run's status written before its first answers, a run stopped by
// Ctrl-C, and an output a later run (the API loop, which writes no status)
// added to.
func TestJobViewCountsOutputs(t *testing.T) {
	root := t.TempDir()
	host, _ := os.Hostname()
	now := time.Now().UTC()
	write := func(path, text string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755)
		if err := os.WriteFile(filepath.Join(root, path), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	status := func(dir string, st statusfile.Status) {
		t.Helper()
		st.Version, st.Tool, st.Host, st.IntervalSeconds = 1, "generate", host, 60
		if err := statusfile.Write(filepath.Join(root, dir, "status.json"), &st); err != nil {
			t.Fatal(err)
		}
	}
	answers := `{"id":"a","prompt_tokens":10,"completion_tokens":5,"finish_reason":"stop"}
{"id":"b","prompt_tokens":10,"completion_tokens":64,"finish_reason":"length"}
{"id":"c","error":{"kind":"http","status":500}}
{"id":"d","prompt_tokens":10,"completion_tokens":5,"finish_reason":"stop"}
`
	// Running, its status written at the start: no answers yet, no total.
	// Five prompts, one of them twice: the dataset has five.
	write("chat/prompts.jsonl", "{\"prompt\":\"a\"}\n{\"prompt\":\"b\"}\n{\"prompt\":\"c\"}\n{\"prompt\":\"b\"}\n{\"prompt\":\"d\"}\n{\"prompt\":\"e\"}\n")
	write("chat/out.jsonl", answers)
	status("chat", statusfile.Status{PID: os.Getpid(), State: statusfile.StateRunning, Updated: now,
		Tokens: statusfile.Tokens{Budget: 1000}})
	// Stopped by Ctrl-C.
	write("code/out.jsonl", answers)
	status("code", statusfile.Status{PID: os.Getpid(), State: statusfile.StateFailed, Updated: now,
		Exit: &statusfile.Exit{Code: 130, Reason: "interrupted"}})
	// Finished an hour ago; the output grew since.
	write("math/out.jsonl", answers)
	status("math", statusfile.Status{PID: os.Getpid(), State: statusfile.StateFinished, Updated: now.Add(-time.Hour),
		Records: statusfile.Records{OK: 1}, Exit: &statusfile.Exit{Code: 0, Reason: "input done"}})

	// Stopped by Ctrl-C an hour ago; a run without a status file (the
	// README's API loop) answered the rest since.
	write("tools/prompts.jsonl", "{\"prompt\":\"a\"}\n{\"prompt\":\"b\"}\n")
	write("tools/out.jsonl", answers[:strings.Index(answers, "\n")+1]+`{"id":"e","prompt_tokens":1,"completion_tokens":1,"finish_reason":"stop"}`+"\n")
	status("tools", statusfile.Status{PID: os.Getpid(), State: statusfile.StateFailed, Updated: now.Add(-time.Hour),
		Exit: &statusfile.Exit{Code: 130, Reason: "interrupted"}})

	var out, errb bytes.Buffer
	if code := Main([]string{"tokstat", root}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	text := out.String()
	for _, want := range []string{
		"tools    complete      2/2",
		"4 datasets: 1 running, 1 finished, 1 complete, 1 stopped\n",
		"tools: out.jsonl answers every prompt (2/2), written after its status file (by a run without --status-file?), which said: exit 130: stopped by SIGINT; run the same command again to go on\n",
		"chat     running       3/5       0     1        0     104   1,000  10.4%",
		"code     stopped         3       0     1        0     104",
		"math     finished        3       0     1        0     104",
		"total                   11       0     3              329   1,000  10.4%",
		"code: exit 130: stopped by SIGINT; run the same command again to go on\n",
		"records, soft and tokens: counted in the output files now",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the job view lacks %q:\n%s", want, text)
		}
	} // The ages of the statuses written an hour ago: the clock runs on
	// between their writing and the view (a second or more on a loaded
	// machine).
	for _, want := range []string{
		`(?m)^math .* 1h0m\d+s ago$`,
		`math: exit 0: input done; out.jsonl was written after its status file \(by a run without --status-file\?\): state, errors, budget and ETA are as of 1h0m\d+s ago\n`,
	} {
		if !regexp.MustCompile(want).MatchString(text) {
			t.Errorf("the job view does not match %s:\n%s", want, text)
		}
	}
}
