package generate

import (
	"strings"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/sim"
)

// TestRetryableFaults: every record succeeds in the end, some after retries.
func TestRetryableFaults(t *testing.T) {
	cases := []struct {
		name    string
		kind    sim.FaultKind
		set     func(*sim.FaultConfig)
		backend string
		stream  bool
		extra   []string
	}{
		{"http500", sim.FaultHTTP500, func(f *sim.FaultConfig) { f.HTTP500 = 0.3 }, "sglang", false, nil},
		{"rate limit with Retry-After", sim.FaultRateLimit, func(f *sim.FaultConfig) { f.RateLimit = 0.1 }, "openai", false, nil},
		{"reset mid-body", sim.FaultReset, func(f *sim.FaultConfig) { f.Reset = 0.3 }, "sglang", false, nil},
		{"reset mid-stream", sim.FaultReset, func(f *sim.FaultConfig) { f.Reset = 0.3 }, "openai", true, nil},
		{"hang past the timeout", sim.FaultHang, func(f *sim.FaultConfig) { f.Hang = 0.2 }, "sglang", false, []string{"--timeout", "300ms"}},
		{"slow first token", sim.FaultSlowFirstToken, func(f *sim.FaultConfig) { f.SlowFirstToken = 0.3 }, "openai", true, nil},
		{"mid-stream error chunk", sim.FaultMidStreamError, func(f *sim.FaultConfig) { f.MidStreamError = 0.3 }, "openai", true, nil},
		{"mid-stream error sglang", sim.FaultMidStreamError, func(f *sim.FaultConfig) { f.MidStreamError = 0.3 }, "sglang", true, nil},
		{"garbage body", sim.FaultGarbage, func(f *sim.FaultConfig) { f.Garbage = 0.3 }, "sglang", false, nil},
		{"html proxy page", sim.FaultHTML, func(f *sim.FaultConfig) { f.HTML = 0.3 }, "openai", false, nil},
		{"sglang abort", sim.FaultAbort, func(f *sim.FaultConfig) { f.Abort = 0.3 }, "sglang", false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, url := startSim(t, func(c *sim.Config) {
				tc.set(&c.Faults)
				c.Faults.RetryAfter = time.Second
			})
			args := []string{"--url", url, "--max-tokens", "32", "--retries", "8", "--backend", tc.backend}
			input := sglangRequests(40, 8)
			if tc.backend == "openai" {
				args = append(args, "--model", "sim/llm-sim-8b")
				args[1] += "/v1"
				input = chatRequests(40)
			}
			if tc.stream {
				args = append(args, "--stream")
			}
			r := runGenerate(t, input, append(args, tc.extra...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			lines := r.lines(t)
			if len(lines) != 40 {
				t.Fatalf("%d results, want 40: %s", len(lines), r.stderr)
			}
			retried := 0
			for _, l := range lines {
				if l.Get("gen.attempts").Int() > 1 {
					retried++
				}
			}
			if srv.Stats().Faults[tc.kind] == 0 {
				t.Fatalf("no %v fault was injected", tc.kind)
			}
			if tc.kind != sim.FaultSlowFirstToken && retried == 0 {
				t.Fatalf("no record needed a retry despite %d faults", srv.Stats().Faults[tc.kind])
			}
			if tc.backend == "sglang" {
				checkOwnOutput(t, srv, lines, 8)
			}
		})
	}
}

// TestBadRequestIsAnErrorRecord: a 400 is not retried; the record goes to
// the errors file at once and the others succeed. --context-length says more
// than the server has, so that the request is sent and refused (the server's
// own would cap its max tokens instead).
func TestBadRequestIsAnErrorRecord(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) { c.ContextLength = 100 })
	dir := t.TempDir()
	input := sglangRequests(3, 10) + `{"id":"long","input_ids":` + string(jsonl.AppendIntArray(nil, promptIDs(9, 95))) + `,"error":{"kind":"old"}}` + "\n"
	r := runGenerate(t, input, "--url", url, "--max-tokens", "20", "--context-length", "1000", "--errors", dir+"/err.jsonl")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if n := len(r.lines(t)); n != 3 {
		t.Fatalf("%d results, want 3", n)
	}
	errs := readLines(t, dir+"/err.jsonl")
	if len(errs) != 1 || errs[0].Get("id").String() != "long" || errs[0].Get("error.status").Int() != 400 ||
		errs[0].Get("error.attempts").Int() != 1 || errs[0].Get("error.retryable").Bool() || errs[0].Get("error.kind").String() != "context_overflow" {
		t.Fatalf("errors file: %v", errs)
	}
	if strings.Count(errs[0].Raw, `"error"`) != 1 {
		t.Fatalf("the old error member was kept: %s", errs[0].Raw)
	}
	if !strings.Contains(r.stderr, "3 ok") || !strings.Contains(r.stderr, ", 1 error (1 context overflow; in ") {
		t.Fatalf("summary: %s", r.stderr)
	}
}

// TestNothingSucceededExitStatus: when no record succeeded and some failed
// after all their retries with a failure a later run may not meet, the run
// exits 75 (try again later); one success, or only records refused for
// themselves (HTTP 400), exit 0 with the failures in --errors.
func TestNothingSucceededExitStatus(t *testing.T) {
	overContext := `{"id":"long","input_ids":` + string(jsonl.AppendIntArray(nil, promptIDs(9, 95))) + "}\n"
	cases := []struct {
		name     string
		set      func(*sim.Config)
		input    string
		wantCode int
	}{
		{"every answer HTTP 500", func(c *sim.Config) { c.Faults.HTTP500 = 1 }, sglangRequests(4, 8), exitcode.TempFail},
		{"every answer an HTML page", func(c *sim.Config) { c.Faults.HTML = 1 }, sglangRequests(4, 8), exitcode.TempFail},
		{"every answer garbage", func(c *sim.Config) { c.Faults.Garbage = 1 }, sglangRequests(4, 8), exitcode.TempFail},
		{"every answer timed out", func(c *sim.Config) { c.Faults.Hang = 1 }, sglangRequests(2, 8), exitcode.TempFail},
		{"some succeed", func(c *sim.Config) { c.Faults.HTTP500 = 0.5; c.ContextLength = 100 }, sglangRequests(40, 8), 0},
		{"only a 400", func(c *sim.Config) { c.ContextLength = 100 }, overContext, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, url := startSim(t, tc.set)
			errs := t.TempDir() + "/err.jsonl"
			// --context-length above the server's: the long prompt is sent, and refused.
			r := runGenerate(t, tc.input, "--url", url, "--max-tokens", "10", "--context-length", "1000", "--retries", "1", "--timeout", "200ms", "--errors", errs)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tc.wantCode, r.stderr)
			}
			said := strings.Contains(r.stderr, "no record succeeded") && strings.Contains(r.stderr, "try again later") && strings.Contains(r.stderr, errs)
			if said != (tc.wantCode == exitcode.TempFail) {
				t.Fatalf("exit %d with stderr: %s", r.code, r.stderr)
			}
			if n := len(readLines(t, errs)); n == 0 {
				t.Fatal("no error records")
			}
		})
	}
}

// TestRefusalsStopTheRun: 401, 402 and 403 stop everything with exit 77.
func TestRefusalsStopTheRun(t *testing.T) {
	cases := []struct {
		name string
		set  func(*sim.Config)
		env  string
	}{
		{"401 bad key", func(c *sim.Config) { c.APIKey = "right" }, "wrong"},
		{"402 no credits", func(c *sim.Config) { c.Faults.NoCredits = 1 }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OPENROUTER_API_KEY", tc.env)
			srv, url := startSim(t, tc.set)
			r := runGenerate(t, chatRequests(200), "--backend", "openai", "--url", url+"/v1", "--model", "m", "--max-tokens", "10", "--concurrency", "4")
			if r.code != exitcode.NoPerm {
				t.Fatalf("exit %d, want 77: %s", r.code, r.stderr)
			}
			if st := srv.Stats(); st.Requests+st.Rejected+int64(len(st.Faults)) > 50 {
				t.Fatalf("the run went on after the refusal: %+v", st)
			}
			if strings.Contains(r.stderr, "wrong") {
				t.Fatalf("the key was printed: %s", r.stderr)
			}
		})
	}
}

// TestModerationIsPerRecord: OpenRouter's 403 for a flagged input refuses
// that input, not the key: an error record, and the run goes on.
func TestModerationIsPerRecord(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) { c.Faults.Moderation = 0.5 })
	errs := t.TempDir() + "/err.jsonl"
	r := runGenerate(t, chatRequests(40), "--backend", "openai", "--url", url+"/v1", "--model", "m", "--max-tokens", "10", "--errors", errs)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	bad := readLines(t, errs)
	if len(bad) == 0 || len(bad)+len(r.lines(t)) != 40 {
		t.Fatalf("%d errors + %d results, want 40 with some errors", len(bad), len(r.lines(t)))
	}
	for _, e := range bad {
		if e.Get("error.status").Int() != 403 || e.Get("error.attempts").Int() != 1 {
			t.Fatalf("error record: %s", e.Raw)
		}
	}
}
