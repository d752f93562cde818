package generate

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
)

// sglangAnswer is one answer of a fake SGLang server: the ids and usage it
// reports, as written to meta_info.
type sglangAnswer struct {
	Text      string
	OutputIDs []int
	Meta      map[string]any // finish_reason, prompt_tokens, completion_tokens... ; id is added
}

// fakeSGLang is an SGLang /generate server whose every answer the test
// decides: reply gets the record's id (the rid without its attempt
// suffix), the attempt number of that id (1, 2, ...) and the writer, and
// either writes a whole reply itself or returns the answer to send.
func fakeSGLang(t *testing.T, reply func(id string, attempt int, w http.ResponseWriter) *sglangAnswer) string {
	t.Helper()
	var mu sync.Mutex
	attempts := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/generate" {
			http.NotFound(w, r) // no /server_info, no /metrics: only answers
			return
		}
		body, _ := io.ReadAll(r.Body)
		rid := gjson.GetBytes(body, "rid").String()
		id, _, _ := strings.Cut(rid, "#")
		mu.Lock()
		attempts[id]++
		n := attempts[id]
		mu.Unlock()
		a := reply(id, n, w)
		if a == nil {
			return
		}
		meta := map[string]any{"id": rid, "finish_reason": map[string]any{"type": "stop"}}
		for k, v := range a.Meta {
			meta[k] = v
		}
		if a.OutputIDs == nil {
			a.OutputIDs = []int{}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"text": a.Text, "output_ids": a.OutputIDs, "meta_info": meta})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestRetryAfterIsCapped: a Retry-After of decades (a number of seconds, or
// a date in the year 9999) waits --max-retry-wait at most, before the retry
// and before the server gets another request.
func TestRetryAfterIsCapped(t *testing.T) {
	for _, after := range []string{"999999999", "Fri, 31 Dec 9999 23:59:59 GMT"} {
		t.Run(after, func(t *testing.T) {
			url := fakeSGLang(t, func(id string, attempt int, w http.ResponseWriter) *sglangAnswer {
				if attempt == 1 {
					w.Header().Set("Retry-After", after)
					http.Error(w, `{"error":"slow down"}`, http.StatusTooManyRequests)
					return nil
				}
				return &sglangAnswer{Text: "ok", OutputIDs: []int{5, 2}, Meta: map[string]any{"prompt_tokens": 3, "completion_tokens": 2}}
			})
			r := runGenerate(t, sglangRequests(3, 3), "--url", url, "--concurrency", "3", "--max-tokens", "8", "--max-retry-wait", "50ms")
			if r.code != 0 || len(r.lines(t)) != 3 {
				t.Fatalf("exit %d, %d of 3 records: %s", r.code, len(r.lines(t)), r.stderr)
			}
			for _, l := range r.lines(t) {
				if l.Get("gen.attempts").Int() != 2 {
					t.Fatalf("record %s: %d attempts, want 2 (one 429, one answer)", l.Get("id"), l.Get("gen.attempts").Int())
				}
			}
		})
	}
}

// TestMaxRetryWaitFlag: the cap is a positive duration.
func TestMaxRetryWaitFlag(t *testing.T) {
	for _, v := range []string{"0", "-1s"} {
		r := runGenerate(t, sglangRequests(1, 3), "--url", closedPort(t), "--max-retry-wait", v)
		if want := fmt.Sprintf("--max-retry-wait %s: must be positive", map[string]string{"0": "0s", "-1s": "-1s"}[v]); r.code != 64 || !strings.Contains(r.stderr, want) {
			t.Fatalf("--max-retry-wait %s: exit %d, want 64 with %q: %s", v, r.code, want, r.stderr)
		}
	}
}

// TestRefusedConnectionMovesToALiveServer: a record sent to a server that
// is gone (its connections refused) moves to a live one without using a
// retry: with --retries 0 not one record fails while a server is up.
func TestRefusedConnectionMovesToALiveServer(t *testing.T) {
	_, live := startSim(t, nil)
	dead := closedPort(t)
	errPath := t.TempDir() + "/errors.jsonl"
	r := runGenerate(t, sglangRequests(200, 3), "--url", dead, "--url", live, "--concurrency", "4", "--retries", "0",
		"--max-tokens", "8", "--errors", errPath)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if n := len(r.lines(t)); n != 200 {
		t.Fatalf("%d of 200 records answered while a server was up: %s", n, r.stderr)
	}
	for _, l := range r.lines(t) {
		if a := l.Get("gen.attempts").Int(); a != 1 || l.Get("gen.endpoint").String() != live {
			t.Fatalf("record %s: %d attempts on %s, want 1 on %s (a refused connection is not an attempt)", l.Get("id"), a, l.Get("gen.endpoint"), live)
		}
	}
	checkSummaryAddsUp(t, r.stderr)
}

// TestEveryServerRefusing: with no server up a record is not failed for
// it either: the run stops with 75 and a later run does the records.
func TestEveryServerRefusing(t *testing.T) {
	errPath := t.TempDir() + "/errors.jsonl"
	r := runGenerate(t, sglangRequests(5, 3), "--url", closedPort(t), "--url", closedPort(t), "--concurrency", "2", "--retries", "1",
		"--max-tokens", "8", "--errors", errPath)
	if r.code != 75 || !strings.Contains(r.stderr, "no server is reachable") {
		t.Fatalf("exit %d, want 75 naming the unreachable servers: %s", r.code, r.stderr)
	}
	if lines := readLines(t, errPath); len(lines) != 0 {
		t.Fatalf("%d records failed for servers being down, want them left for a later run", len(lines))
	}
}
