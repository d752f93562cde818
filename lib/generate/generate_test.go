package generate

import (
	"testing"

	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/sim"
)

func TestSGLangOwnOutputUnderConcurrency(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "whole", true: "stream"}[stream]
		t.Run(name, func(t *testing.T) {
			srv, url := startSim(t, func(c *sim.Config) { c.Lengths = sim.LengthDist{Kind: sim.LengthUniform, Min: 1, Max: 40} })
			args := []string{"--url", url, "--max-tokens", "32", "--concurrency", "200"}
			if stream {
				args = append(args, "--stream")
			}
			r := runGenerate(t, sglangRequests(600, 20), args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			lines := r.lines(t)
			if len(lines) != 600 {
				t.Fatalf("%d results, want 600", len(lines))
			}
			checkOwnOutput(t, srv, lines, 20)
			for _, l := range lines {
				if l.Get("gen.backend").String() != "sglang" || l.Get("gen.attempts").Int() != 1 || !l.Get("completion_tokens").Exists() || l.Get("prompt_tokens").Int() != 20 {
					t.Fatalf("bad result: %s", l.Raw)
				}
			}
		})
	}
}

func TestOpenAIChat(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "whole", true: "stream"}[stream]
		t.Run(name, func(t *testing.T) {
			_, url := startSim(t, nil)
			args := []string{"--backend", "openai", "--url", url + "/v1", "--model", "sim/llm-sim-8b", "--max-tokens", "100"}
			if stream {
				args = append(args, "--stream")
			}
			r := runGenerate(t, chatRequests(50), args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			lines := r.lines(t)
			if len(lines) != 50 {
				t.Fatalf("%d results, want 50", len(lines))
			}
			for _, l := range lines {
				if l.Get("text").String() == "" || l.Get("finish_reason").String() != "stop" || l.Get("gen.backend").String() != "openai" || l.Get("usage").Raw == "" {
					t.Fatalf("bad result: %s", l.Raw)
				}
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"api key flag", []string{"--api-key", "sk-secret", "--url", "http://127.0.0.1:1"}, "there is no --api-key flag"},
		{"no url", []string{}, "--url is required"},
		{"bad backend", []string{"--backend", "vllm", "--url", "http://x"}, "want openai or sglang"},
		{"openai without model", []string{"--backend", "openai", "--url", "http://x"}, "needs --model"},
		{"bad concurrency", []string{"--url", "http://x", "--concurrency", "lots"}, "want a positive number or auto"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runGenerate(t, "", tc.args...)
			if r.code != exitcode.Usage {
				t.Fatalf("exit %d, want %d: %s", r.code, exitcode.Usage, r.stderr)
			}
			if !contains(r.stderr, tc.want) {
				t.Fatalf("stderr %q does not say %q", r.stderr, tc.want)
			}
			if contains(r.stderr, "sk-secret") {
				t.Fatalf("the key was echoed: %s", r.stderr)
			}
		})
	}
}
