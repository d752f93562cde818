package generate

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"
)

// overchargingChat is an OpenAI-compatible server that bills cost dollars
// for every answer, whatever its /models price or --max-price say; it
// counts the answers it sent (and so billed).
func overchargingChat(t *testing.T, cost float64) (string, *atomic.Int64) {
	t.Helper()
	var billed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r) // no /models, no key endpoint: --max-price is the price
			return
		}
		billed.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":1,"cost":%g}}`, cost)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &billed
}

var summaryUSD = regexp.MustCompile(`, \$([0-9.]+)`)

// TestCostBudgetCountsWhatWasCharged: a server that charges $0.50 an answer
// where --max-price implies at most $0.048 cannot make generate spend on
// and on: every answer it billed is written and counted, dispatching stops
// the moment the charges reach --cost-budget, the overshoot is the requests
// already in flight, and the closing lines say so.
func TestCostBudgetCountsWhatWasCharged(t *testing.T) {
	const concurrency = 8
	url, billed := overchargingChat(t, 0.5)
	r := runGenerate(t, chatRequests(200), "--backend", "openai", "--model", "m", "--url", url, "--max-tokens", "8",
		"--concurrency", strconv.Itoa(concurrency), "--cost-budget", "1", "--max-price", "4000")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := r.lines(t)
	if int64(len(lines)) != billed.Load() {
		t.Fatalf("the server billed %d answers, %d were written: paid answers were thrown away\n%s", billed.Load(), len(lines), r.stderr)
	}
	// Two answers reach the budget; at most the requests in flight then,
	// and those that started before the first charge was known, follow.
	if n := billed.Load(); n > 2*concurrency {
		t.Fatalf("%d answers billed at $0.50 for a budget of $1: dispatching went on after the charges reached it\n%s", n, r.stderr)
	}
	m := summaryUSD.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no dollar figure in the summary: %s", r.stderr)
	}
	if got, want := m[1], fmt.Sprintf("%.4f", 0.5*float64(billed.Load())); got != want {
		t.Fatalf("the summary says $%s, the server charged $%s", got, want)
	}
	// Two answers reach the budget exactly; the closing line on the
	// overshoot comes when more were in flight then. A loaded machine may
	// have had none in flight: the answers came back before the third
	// request started.
	wants := []string{"ok, 0 errors", "$1.0000 of $1.00"}
	if billed.Load() > 2 {
		wants = []string{"ok, 0 errors", "cost budget $1.00 passed by $", "answers cost more than their worst case"}
	}
	for _, want := range wants {
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("%d answers billed; stderr does not say %q:\n%s", billed.Load(), want, r.stderr)
		}
	}
	checkSummaryAddsUp(t, r.stderr)
}

// TestTokenBudgetCountsAnswersPastMaxTokens: a server that answers past
// max_tokens (20 ids for 8 asked) has every answer written and counted;
// dispatching stops once what was written reaches --token-budget.
func TestTokenBudgetCountsAnswersPastMaxTokens(t *testing.T) {
	var answered atomic.Int64
	ids := make([]int, 20)
	url := fakeSGLang(t, func(string, int, http.ResponseWriter) *sglangAnswer {
		answered.Add(1)
		return &sglangAnswer{Text: strings.Repeat("x", 20), OutputIDs: ids, Meta: map[string]any{"prompt_tokens": 3, "completion_tokens": 20}}
	})
	r := runGenerate(t, sglangRequests(100, 3), "--url", url, "--max-tokens", "8", "--concurrency", "4", "--token-budget", "100")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := r.lines(t)
	if int64(len(lines)) != answered.Load() {
		t.Fatalf("the server answered %d requests, %d answers were written\n%s", answered.Load(), len(lines), r.stderr)
	}
	var written int64
	for _, l := range lines {
		written += l.Get("prompt_tokens").Int() + l.Get("completion_tokens").Int()
	}
	// Each answer takes 23 tokens: dispatching stops at 100 or before,
	// and at most the 4 requests in flight then add to it, and the one
	// that had its reservation and waited for a slot: a worker frees its
	// slot before the collector counts what its answer spent, so that one
	// may start in between (on a loaded machine, 1 run in 15 here).
	if written > 100+(4+1)*23 {
		t.Fatalf("%d tokens written for a budget of 100\n%s", written, r.stderr)
	}
	if written > 100 && !strings.Contains(r.stderr, fmt.Sprintf("token budget 100 passed by %d (%d total tokens counted)", written-100, written)) {
		t.Fatalf("%d tokens written past a budget of 100, and the closing lines do not say so:\n%s", written, r.stderr)
	}
	if !strings.Contains(r.stderr, "0 cut by budget") && !strings.Contains(r.stderr, "1 cut by budget") {
		t.Fatalf("answers were cut after being paid for:\n%s", r.stderr)
	}
	checkSummaryAddsUp(t, r.stderr)
}

// TestCostBudgetRefusesAnUnknownPrice: a /models price of -1 (what
// OpenRouter lists for variable-price routers such as openrouter/auto),
// "NaN", "Infinity", "1e308" or a word is not a worst case to reserve at:
// the run is refused with 64 before anything is sent, naming the model and
// what was listed; --max-price then runs it.
func TestCostBudgetRefusesAnUnknownPrice(t *testing.T) {
	for _, listed := range []string{`"-1"`, `"NaN"`, `"Infinity"`, `"1e308"`, `"free"`, `-0.5`, `null`} {
		t.Run(listed, func(t *testing.T) {
			var chats atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/models") {
					fmt.Fprintf(w, `{"data":[{"id":"openrouter/auto","pricing":{"prompt":"0.000001","completion":%s}}]}`, listed)
					return
				}
				if strings.HasSuffix(r.URL.Path, "/chat/completions") {
					chats.Add(1)
					io.WriteString(w, `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":1,"cost":0.001}}`)
					return
				}
				http.NotFound(w, r)
			}))
			defer srv.Close()
			args := []string{"--backend", "openai", "--model", "openrouter/auto", "--url", srv.URL, "--max-tokens", "8", "--cost-budget", "1"}
			r := runGenerate(t, chatRequests(3), args...)
			if r.code != 64 || !strings.Contains(r.stderr, `"openrouter/auto" lists its completion price as `+listed) && !strings.Contains(r.stderr, `"openrouter/auto" lists no completion price`) ||
				!strings.Contains(r.stderr, "--max-price") || chats.Load() != 0 {
				t.Fatalf("exit %d, %d requests sent: want 64 naming the model, the price listed and --max-price, nothing sent:\n%s", r.code, chats.Load(), r.stderr)
			}
			r = runGenerate(t, chatRequests(3), append(args, "--max-price", "100")...)
			if r.code != 0 || len(r.lines(t)) != 3 || !strings.Contains(r.stderr, "$0.0030") {
				t.Fatalf("exit %d with --max-price: %s", r.code, r.stderr)
			}
		})
	}
}

// chargingFailures is an OpenRouter-like streaming server: the first
// attempt of each record fails mid-stream with an error chunk that says
// what it was charged (usage.cost 0.25), the next is answered and charged
// 0.05. fail decides which requests fail (by their attempt number).
func chargingFailures(t *testing.T, fail func(attempt int) bool) (string, *atomic.Int64) {
	t.Helper()
	var sent atomic.Int64
	attempts := map[string]int{}
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r)
			return
		}
		sent.Add(1)
		mu.Lock()
		content := gjson.GetBytes(body, "messages.0.content").String()
		attempts[content]++
		n := attempts[content]
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":null}]}\n\n")
		if fail(n) {
			io.WriteString(w, "data: {\"error\":{\"code\":\"server_error\",\"message\":\"Provider disconnected\"},\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1,\"cost\":0.25},\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"error\"}]}\n\n")
			return
		}
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		io.WriteString(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1,\"cost\":0.05}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &sent
}

// TestFailedAttemptsAreCharged: what an error chunk says an attempt was
// charged is spent whether or not the attempt produced an answer: it
// counts against --cost-budget, and shows in the summary and in --errors.
func TestFailedAttemptsAreCharged(t *testing.T) {
	t.Run("retried", func(t *testing.T) {
		url, sent := chargingFailures(t, func(attempt int) bool { return attempt == 1 })
		r := runGenerate(t, chatRequests(4), "--backend", "openai", "--stream", "--model", "m", "--url", url, "--max-tokens", "8",
			"--concurrency", "1", "--max-price", "1")
		if r.code != 0 || len(r.lines(t)) != 4 || sent.Load() != 8 {
			t.Fatalf("exit %d, %d sent: %s", r.code, sent.Load(), r.stderr)
		}
		if !strings.Contains(r.stderr, ", $1.2000 ($1.0000 of it charged for 4 attempts that failed)") {
			t.Fatalf("the summary does not count the charged failures (4 x 0.25 + 4 x 0.05):\n%s", r.stderr)
		}
	})
	t.Run("budget", func(t *testing.T) {
		url, sent := chargingFailures(t, func(int) bool { return true })
		errPath := filepath.Join(t.TempDir(), "errors.jsonl")
		r := runGenerate(t, chatRequests(20), "--backend", "openai", "--stream", "--model", "m", "--url", url, "--max-tokens", "8",
			"--concurrency", "1", "--retries", "1", "--cost-budget", "1", "--max-price", "1", "--errors", errPath)
		// Each attempt is charged $0.25: the budget of $1 is reached at
		// the fourth, and no attempt starts after it: not a retry, nor a
		// first attempt, even one that was waiting for the server (its
		// one slot) while the fourth was charged.
		n := sent.Load()
		if n != 4 {
			t.Fatalf("%d attempts charged $0.25 each went out against a budget of $1:\n%s", n, r.stderr)
		}
		want := fmt.Sprintf("$%.4f ($%.4f of it charged for %d attempts that failed)", 0.25*float64(n), 0.25*float64(n), n)
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("the summary does not say %q:\n%s", want, r.stderr)
		}
		var charged float64
		for _, l := range readLines(t, errPath) {
			charged += l.Get("error.cost").Float()
		}
		if charged != 0.25*float64(n) {
			t.Fatalf("--errors says $%v was charged, the server charged $%v", charged, 0.25*float64(n))
		}
	})
}

// TestCompleteStreamWithoutFinishReason: a stream that reached [DONE]
// without a finish reason is an answer, written and paid for once, as a
// whole completion with a null finish_reason is; it is not sent again.
func TestCompleteStreamWithoutFinishReason(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r)
			return
		}
		sent.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"whole\"},\"finish_reason\":null}]}\n\n")
		io.WriteString(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1,\"cost\":0.01}}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	r := runGenerate(t, chatRequests(2), "--backend", "openai", "--stream", "--model", "m", "--url", srv.URL, "--max-tokens", "8", "--max-price", "1")
	lines := r.lines(t)
	if r.code != 0 || len(lines) != 2 || sent.Load() != 2 || lines[0].Get("text").String() != "whole" || !strings.Contains(r.stderr, "$0.0200") {
		t.Fatalf("exit %d, %d sent for 2 records: %s\n%s", r.code, sent.Load(), r.stdout, r.stderr)
	}
}

// TestErrorBodiesClassifiedByCode: OpenRouter answers HTTP 200 once a
// request is under way and puts the status in error.code; generate treats
// it as that status: 402 stops the run at once with 77, 400 fails the
// record without a retry, 429 and 502 are retried.
func TestErrorBodiesClassifiedByCode(t *testing.T) {
	for _, tc := range []struct {
		code, exit int
		sent       int64 // requests for 3 records, --retries 2, --concurrency 1
		want       string
	}{
		{402, 77, 1, "HTTP 402: Insufficient credits"},
		{400, 0, 3, `3 errors`},
		{429, 75, 9, "after --retries 2"},
		{502, 75, 9, "after --retries 2"},
	} {
		t.Run(strconv.Itoa(tc.code), func(t *testing.T) {
			var sent atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
					http.NotFound(w, r)
					return
				}
				sent.Add(1)
				w.Header().Set("Content-Type", "application/json")
				msg := map[int]string{402: "Insufficient credits", 400: "This endpoint's maximum context length is exceeded", 429: "Rate limit exceeded", 502: "Provider returned error"}[tc.code]
				fmt.Fprintf(w, `{"error":{"code":%d,"message":%q}}`, tc.code, msg)
			}))
			defer srv.Close()
			r := runGenerate(t, chatRequests(3), "--backend", "openai", "--model", "m", "--url", srv.URL, "--max-tokens", "8",
				"--concurrency", "1", "--retries", "2", "--max-retry-wait", "1ms")
			if r.code != tc.exit || sent.Load() != tc.sent || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d (want %d), %d requests (want %d), want %q:\n%s", r.code, tc.exit, sent.Load(), tc.sent, tc.want, r.stderr)
			}
		})
	}
}
