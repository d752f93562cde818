package tests

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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
