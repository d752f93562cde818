package cliutil

import (
	"bytes"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// stuckApp is a tool that ignores its context: it returns only when release
// is closed, as a tool blocked in a read of a quiet pipe would.
func stuckApp(started, cancelled chan<- struct{}, release <-chan struct{}, grace time.Duration) *App {
	return NewApp(Spec{Name: "stuck", Action: func(c *cli.Context) error {
		if grace > 0 {
			SetSignalGrace(c.Context, grace)
		}
		go func() {
			<-c.Context.Done()
			close(cancelled)
		}()
		close(started)
		<-release
		return nil
	}})
}

// runStuck runs a stuck tool with Main, sends it the signals, and returns
// Main's status: Main returns it, where it used to call os.Exit from a
// goroutine (which would end this test binary).
func runStuck(t *testing.T, grace time.Duration, sigs ...syscall.Signal) (int, string) {
	t.Helper()
	started, cancelled, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	defer close(release)
	var stderr bytes.Buffer
	status := make(chan int, 1)
	go func() {
		status <- Main(stuckApp(started, cancelled, release, grace), []string{"stuck"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	}()
	<-started // Main handles the signals from here on
	for i, sig := range sigs {
		if i > 0 {
			// The first was handled: a second one sent at once could
			// merge with it while both are pending.
			<-cancelled
		}
		if err := syscall.Kill(syscall.Getpid(), sig); err != nil {
			t.Fatal(err)
		}
	}
	return <-status, stderr.String()
}

func TestSecondSignalReturnsStatus(t *testing.T) {
	code, stderr := runStuck(t, time.Hour, syscall.SIGINT, syscall.SIGINT)
	if code != 130 || !strings.Contains(stderr, "stuck: second SIGINT: stopping now") {
		t.Errorf("status %d, stderr %q; want 130 and the second signal named", code, stderr)
	}
}

func TestGraceEndsWithStatus(t *testing.T) {
	code, _ := runStuck(t, time.Millisecond, syscall.SIGTERM)
	if code != 143 {
		t.Errorf("status %d after the grace period of a SIGTERM, want 143", code)
	}
}
