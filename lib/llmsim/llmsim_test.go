package llmsim

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/sim"
)

// configFrom parses args as llm-sim would and returns the sim.Config, or
// the error of a flag or of the configuration's check.
func configFrom(t *testing.T, args ...string) (sim.Config, error) {
	t.Helper()
	cfg := new(config)
	app := NewApp()
	app.Flags = flags(cfg) // bound to the cfg read here
	app.Action = func(c *cli.Context) error { return cfg.check(c) }
	err := app.Run(append([]string{"llm-sim"}, args...))
	return cfg.sim, err
}

func TestFlagsMapToConfig(t *testing.T) {
	cfg, err := configFrom(t, "--max-total-tokens", "5000", "--max-running-requests", "7", "--context-length", "900",
		"--lengths", "lognormal:2300,0.5,10240", "--per-token-time", "20us", "--fault", "http500=0.1", "--fault", "rate_limit=0.2",
		"--retry-after", "2s", "--prompt-price", "1", "--seed", "9", "--model", "m")
	if err != nil {
		t.Fatal(err)
	}
	want := sim.Default()
	want.MaxTotalTokens, want.MaxRunningRequests, want.ContextLength = 5000, 7, 900
	if cfg.MaxTotalTokens != 5000 || cfg.MaxRunningRequests != 7 || cfg.ContextLength != 900 || cfg.ModelName != "m" || cfg.Seed != 9 {
		t.Fatalf("sizes: %+v", cfg)
	}
	if cfg.Lengths.Kind != sim.LengthLognormal || cfg.Lengths.Median != 2300 || cfg.Lengths.Max != 10240 {
		t.Fatalf("lengths: %+v", cfg.Lengths)
	}
	if cfg.PerTokenTime != 20*time.Microsecond || cfg.Faults.HTTP500 != 0.1 || cfg.Faults.RateLimit != 0.2 || cfg.Faults.RetryAfter != 2*time.Second {
		t.Fatalf("timing and faults: %+v", cfg)
	}
	if cfg.PromptPrice != 1e-6 || cfg.CompletionPrice != want.CompletionPrice {
		t.Fatalf("prices: %v %v", cfg.PromptPrice, cfg.CompletionPrice)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--fault", "http500"},
		{"--fault", "nosuch=0.1"},
		{"--fault", "hang=2"},
		{"--lengths", "normal:3"},
		{"--fault", "http500=0.7", "--fault", "hang=0.7"},
	} {
		if _, err := configFrom(t, args...); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}

// TestServesUntilSignal: the URL lands in --url-file, and cancelling the
// context (what SIGTERM does) stops the server cleanly with status 0.
func TestServesUntilSignal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "url")
	ctx, cancel := context.WithCancel(context.Background())
	app := NewApp()
	var stderr bytes.Buffer
	app.ErrWriter = &stderr
	done := make(chan error, 1)
	go func() { done <- app.RunContext(ctx, []string{"llm-sim", "--url-file", path, "--stats"}) }()
	var url string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil {
			url = strings.TrimSpace(string(b))
			break
		}
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("url file holds %q", url)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // a hang guard, not a measure
		t.Fatal("still serving after the stop")
	}
	if !strings.Contains(stderr.String(), `"requests":0`) {
		t.Fatalf("no stats: %s", stderr.String())
	}
}

// TestDefaultsAreTheSimulators: with no flags the server is sim.Default, so
// the defaults --help shows (the flags' values) are the ones it runs with.
func TestDefaultsAreTheSimulators(t *testing.T) {
	cfg, err := configFrom(t)
	if err != nil {
		t.Fatal(err)
	}
	if want := sim.Default(); !reflect.DeepEqual(cfg, want) {
		t.Fatalf("no flags:\n got %+v\nwant %+v", cfg, want)
	}
	var help bytes.Buffer
	if code := Main([]string{"llm-sim", "--help"}, strings.NewReader(""), &help, &help); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	for _, want := range []string{"(default: 159277)", "(default: 0.1)", "(default: 0.4)", "(default: 200ms)", "(default: 1s)"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	// A signal is how llm-sim is stopped: it says so, and exits 0.
	if !regexp.MustCompile(`(?m)^   0 +stopped by SIGINT, SIGTERM or SIGHUP`).MatchString(help.String()) ||
		strings.Contains(help.String(), "after flushing") {
		t.Errorf("EXIT STATUS does not say that a signal stops llm-sim with 0:\n%s", help.String())
	}
}
