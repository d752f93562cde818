package flaggroup

import (
	"fmt"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/backend"
)

// parseFlags runs flags over args the way a tool's app does and returns the
// first error.
func parseFlags(t *testing.T, flags []cli.Flag, args ...string) error {
	t.Helper()
	app := &cli.App{Name: "t", Flags: flags, Action: func(*cli.Context) error { return nil },
		ExitErrHandler: func(*cli.Context, error) {}}
	return app.Run(append([]string{"t"}, args...))
}

func TestSampling(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
		check   func(p backend.Params) bool
	}{
		{name: "defaults", check: func(p backend.Params) bool {
			return p.MaxTokens > 1 && p.Temperature == nil && p.TopK == nil && p.Seed == nil && p.Extra == nil
		}},
		{name: "set", args: []string{"--max-tokens", "7", "--temperature", "0.5", "--top-k", "-1", "--seed", "3", "--stop", "a", "--stop", "b", "--extra", `{"x":1}`},
			check: func(p backend.Params) bool {
				return p.MaxTokens == 7 && *p.Temperature == 0.5 && *p.TopK == -1 && *p.Seed == 3 && len(p.Stop) == 2 && string(p.Extra) == `{"x":1}`
			}},
		{name: "every reasoning effort", args: []string{"--reasoning-effort", "minimal"}, check: func(p backend.Params) bool { return p.ReasoningEffort == "minimal" }},
		{name: "none", args: []string{"--reasoning-effort", "none"}, check: func(p backend.Params) bool { return p.ReasoningEffort == "none" }},
		{name: "bad effort", args: []string{"--reasoning-effort", "max"}, wantErr: `--reasoning-effort "max": want none, minimal, low, medium or high`},
		{name: "max tokens", args: []string{"--max-tokens", "0"}, wantErr: "--max-tokens must be at least 1"},
		{name: "top-p", args: []string{"--top-p", "0"}, wantErr: "--top-p 0: want a number above 0 and at most 1"},
		{name: "top-k", args: []string{"--top-k", "0"}, wantErr: "--top-k 0: want 1 or more, or -1 for no limit"},
		{name: "stop id", args: []string{"--stop-token-id", "-2"}, wantErr: "--stop-token-id -2: token ids are 0 or more"},
		{name: "extra", args: []string{"--extra", "[1]"}, wantErr: "--extra: not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p backend.Params
			err := parseFlags(t, Sampling(&p), tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.check(p) {
				t.Fatalf("err = %v, params %+v", err, p)
			}
		})
	}
}

func TestCheckSampling(t *testing.T) {
	three := 3.0
	p := backend.Params{Sampling: backend.Sampling{Temperature: &three}}
	if err := CheckSampling(&p, false); err != nil {
		t.Errorf("native API: %v", err)
	}
	if err := CheckSampling(&p, true); err == nil || !strings.Contains(err.Error(), "want a number from 0 to 2 (0: greedy)") {
		t.Errorf("chat API: %v", err)
	}
}

// TestHelpNamesConstants: the help states the limits the checks apply.
func TestHelpNamesConstants(t *testing.T) {
	var p backend.Params
	help := map[string]string{}
	for _, f := range Sampling(&p) {
		help[f.Names()[0]] = f.(cli.DocGenerationFlag).GetUsage()
	}
	if !strings.Contains(help[FlagTemperature], fmt.Sprintf("at most %d for chat backends", MaxOpenAITemperature)) {
		t.Errorf("--temperature help %q and MaxOpenAITemperature %v disagree", help[FlagTemperature], MaxOpenAITemperature)
	}
	if !strings.Contains(help[FlagReasoningEffort], strings.Join(ReasoningEfforts, ", ")) {
		t.Errorf("--reasoning-effort help %q does not list %v", help[FlagReasoningEffort], ReasoningEfforts)
	}
}

func TestServer(t *testing.T) {
	var kind *backend.Kind
	var urls []string
	var model string
	if err := parseFlags(t, Server(&kind, &urls, &model), "--backend", "openai", "--url", "http://a:1/", "--model", "m"); err != nil {
		t.Fatal(err)
	}
	if kind.Name != "openai" || len(urls) != 1 || urls[0] != "http://a:1" || model != "m" {
		t.Errorf("kind %v, urls %q, model %q", kind.Name, urls, model)
	}
	if err := parseFlags(t, Server(&kind, &urls, &model), "--backend", "nope"); err == nil || !strings.Contains(err.Error(), `--backend "nope": want`) {
		t.Errorf("err = %v", err)
	}
}
