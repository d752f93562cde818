package generate

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/record"
	"github.com/synthpipe/synthpipe/lib/sim"
)

// fakeChat is an OpenAI-compatible /chat/completions server whose every
// answer is text with the usage object the test gives (raw JSON, "" for
// none).
func fakeChat(t *testing.T, text, usage string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r)
			return
		}
		content, _ := json.Marshal(text)
		body := `{"id":"x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":` + string(content) + `},"finish_reason":"stop"}]`
		if usage != "" {
			body += `,"usage":` + usage
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body+"}")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// checkReadable demands that every tool can read what generate wrote:
// record.Scanner is the reader of budget-cut, tokstat, dedupe-resume and
// to-train.
func checkReadable(t *testing.T, lines []gjson.Result) {
	t.Helper()
	sc := record.NewScanner("id", true, "")
	for _, l := range lines {
		if _, err := sc.Scan([]byte(l.Raw)); err != nil {
			t.Fatalf("the other tools would refuse a written record: %v: %.300s", err, l.Raw)
		}
	}
}

// TestUsageFromTheServerIsChecked: counts a server reports are taken only
// when they can be true; otherwise they are counted from the answer, with
// one warning for the run and a total at the end.
func TestUsageFromTheServerIsChecked(t *testing.T) {
	ids := []int{5, 6, 7}
	for _, tc := range []struct {
		name                   string
		meta                   map[string]any
		wantPrompt, wantAnswer int64
		wantSays               string
	}{
		{"negative completion", map[string]any{"prompt_tokens": 3, "completion_tokens": -5}, 3, 3, "completion_tokens -5 is negative; counted 3 from its output_ids"},
		{"huge completion", map[string]any{"prompt_tokens": 3, "completion_tokens": 1e300}, 3, 3, "is more than any answer holds; counted 3"},
		{"fractional completion", map[string]any{"prompt_tokens": 3, "completion_tokens": 2.5}, 3, 3, "but 3 output_ids came back; counted 3"},
		{"completion disagrees with the ids", map[string]any{"prompt_tokens": 3, "completion_tokens": 0}, 3, 3, "completion_tokens 0, but 3 output_ids came back; counted 3"},
		{"negative prompt", map[string]any{"prompt_tokens": -1, "completion_tokens": 3}, 3, 3, "prompt_tokens -1 is negative; counted 3 from the request"},
		{"prompt disagrees with input_ids", map[string]any{"prompt_tokens": 1000, "completion_tokens": 3}, 3, 3, "prompt_tokens 1000 for a prompt of 3 input_ids; counted 3"},
	} {
		t.Run("sglang "+tc.name, func(t *testing.T) {
			url := fakeSGLang(t, func(string, int, http.ResponseWriter) *sglangAnswer {
				return &sglangAnswer{Text: "abc", OutputIDs: ids, Meta: tc.meta}
			})
			r := runGenerate(t, sglangRequests(4, 3), "--url", url, "--concurrency", "2", "--max-tokens", "8")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			lines := r.lines(t)
			checkReadable(t, lines)
			for _, l := range lines {
				if l.Get("prompt_tokens").Int() != tc.wantPrompt || l.Get("completion_tokens").Int() != tc.wantAnswer ||
					l.Get("usage.completion_tokens").Int() != tc.wantAnswer {
					t.Fatalf("want prompt_tokens %d and completion_tokens %d (in usage too): %s", tc.wantPrompt, tc.wantAnswer, l.Raw)
				}
			}
			if !strings.Contains(r.stderr, tc.wantSays) || strings.Count(r.stderr, "implausible usage") != 1 ||
				!strings.Contains(r.stderr, "4 answers counted from the answer itself") {
				t.Fatalf("want one warning saying %q and a total of 4: %s", tc.wantSays, r.stderr)
			}
		})
	}
	for _, tc := range []struct {
		name, usage string
		wantAnswer  int64
		wantSays    string
	}{
		{"no usage", "", 8, "completion_tokens missing (the answer has no usage); counted 8 from the 8 asked for"},
		{"negative", `{"prompt_tokens":4,"completion_tokens":-7}`, 8, "completion_tokens -7 is negative"},
		{"a string", `{"prompt_tokens":4,"completion_tokens":"many"}`, 8, `completion_tokens is "many", not a number`},
		{"more than asked and than the text holds", `{"prompt_tokens":4,"completion_tokens":5000}`, 8, "more than the 8 asked for"},
	} {
		t.Run("openai "+tc.name, func(t *testing.T) {
			url := fakeChat(t, "twelve bytes", tc.usage)
			r := runGenerate(t, chatRequests(3), "--backend", "openai", "--model", "m", "--url", url, "--concurrency", "1", "--max-tokens", "8")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			lines := r.lines(t)
			checkReadable(t, lines)
			for _, l := range lines {
				if l.Get("completion_tokens").Int() != tc.wantAnswer || l.Get("prompt_tokens").Int() < 1 {
					t.Fatalf("want completion_tokens %d and a prompt count: %s", tc.wantAnswer, l.Raw)
				}
			}
			if !strings.Contains(r.stderr, tc.wantSays) || strings.Count(r.stderr, "implausible usage") != 1 {
				t.Fatalf("want one warning saying %q: %s", tc.wantSays, r.stderr)
			}
		})
	}
	t.Run("openai negative cost", func(t *testing.T) {
		url := fakeChat(t, "ok", `{"prompt_tokens":4,"completion_tokens":1,"cost":-0.5}`)
		r := runGenerate(t, chatRequests(2), "--backend", "openai", "--model", "m", "--url", url, "--max-tokens", "8",
			"--cost-budget", "1", "--max-price", "1000")
		if r.code != 0 || !strings.Contains(r.stderr, "cost -0.5 is not an amount of 0 or more; counted at the worst-case price") {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		for _, l := range r.lines(t) {
			if l.Get("usage.cost").Exists() {
				t.Fatalf("a cost that is not an amount was written: %s", l.Raw)
			}
		}
		// Two answers of 5 tokens at $1000 per million.
		if !strings.Contains(r.stderr, "$0.0100") {
			t.Fatalf("the summary must count the worst-case price of both answers ($0.0100): %s", r.stderr)
		}
	})
}

// TestUsageMissingDoesNotUndercountTheBudget: a server that reports no
// completion tokens for answers that hold 50 cannot make --token-budget
// let ten times the budget through.
func TestUsageMissingDoesNotUndercountTheBudget(t *testing.T) {
	answer := make([]int, 50)
	url := fakeSGLang(t, func(string, int, http.ResponseWriter) *sglangAnswer {
		return &sglangAnswer{Text: strings.Repeat("x", 50), OutputIDs: answer, Meta: map[string]any{"prompt_tokens": 3, "completion_tokens": 0}}
	})
	r := runGenerate(t, sglangRequests(100, 3), "--url", url, "--concurrency", "4", "--max-tokens", "60", "--token-budget", "600")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var total int64
	for _, l := range r.lines(t) {
		total += l.Get("prompt_tokens").Int() + int64(len(l.Get("output_ids").Array()))
	}
	if total > 600 {
		t.Fatalf("%d tokens written in a budget of 600: the server's 0 was believed: %s", total, r.stderr)
	}
}

// TestUsageOfAnHonestServerIsTaken: the simulator reports true usage; no
// warning, nothing recounted.
func TestUsageOfAnHonestServerIsTaken(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) { c.Lengths = sim.LengthDist{Kind: sim.LengthUniform, Min: 1, Max: 20} })
	for _, args := range [][]string{
		{"--url", url, "--max-tokens", "20"},
		{"--url", url, "--max-tokens", "20", "--stream"},
		{"--backend", "openai", "--model", "m", "--url", url + "/v1", "--max-tokens", "20"},
		{"--backend", "openai", "--model", "m", "--url", url + "/v1", "--max-tokens", "20", "--stream"},
	} {
		input := sglangRequests(20, 5)
		if args[0] == "--backend" {
			input = chatRequests(20)
		}
		r := runGenerate(t, input, args...)
		if r.code != 0 || strings.Contains(r.stderr, "implausible") || strings.Contains(r.stderr, "counted from the answer") {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
	}
}
