package generate

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// hangingSGLang is an SGLang /generate server that, for the requests hang
// picks by rid, sends the head of a stream and one event and then nothing,
// holding the connection open until the client leaves; the others get a
// whole one-token stream.
func hangingSGLang(t *testing.T, hang func(rid string) bool) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rid := gjson.GetBytes(body, "rid").String()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"text":"a","output_ids":[7],"meta_info":{"id":"`+rid+`","finish_reason":null,"completion_tokens":1}}`+"\n\n")
		if hang(rid) {
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		io.WriteString(w, `data: {"text":"ab","output_ids":[7,2],"meta_info":{"id":"`+rid+`","finish_reason":{"type":"stop","matched":2},"prompt_tokens":3,"completion_tokens":2}}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestStreamIdleTimeout: a server that stops sending mid-answer (a stopped
// process, a dead peer behind a proxy) is noticed by --idle-timeout and the
// attempt is retried as after a reset; a server that never resumes leaves
// the record in --errors naming the flag. The server hangs for ever: only
// the idle timeout can end those attempts.
func TestStreamIdleTimeout(t *testing.T) {
	url := hangingSGLang(t, func(rid string) bool {
		return strings.HasPrefix(rid, "stuck#") || strings.HasPrefix(rid, "once#1.")
	})
	errPath := filepath.Join(t.TempDir(), "errors.jsonl")
	input := `{"id":"once","input_ids":[1,2,3]}` + "\n" + `{"id":"stuck","input_ids":[1,2,3]}` + "\n"
	r := runGenerate(t, input, "--url", url, "--stream", "--idle-timeout", "500ms", "--retries", "2",
		"--concurrency", "2", "--max-tokens", "8", "--errors", errPath)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := r.lines(t)
	if len(lines) != 1 || lines[0].Get("id").String() != "once" || lines[0].Get("gen.attempts").Int() < 2 {
		t.Fatalf("want the record that hung once answered on a later attempt, got %v", lines)
	}
	errs := readLines(t, errPath)
	if len(errs) != 1 || errs[0].Get("id").String() != "stuck" {
		t.Fatalf("want the record that always hung in --errors, got %v", errs)
	}
	e := errs[0].Get("error")
	if e.Get("kind").String() != "timeout" || e.Get("attempts").Int() != 3 || !strings.Contains(e.Get("message").String(), "--idle-timeout 500ms") {
		t.Fatalf("error %s: want a timeout after 3 attempts naming --idle-timeout", e.Raw)
	}
}

// TestTimeoutNamesTheFlag: an attempt cut by --timeout says so, not
// "caller's deadline exceeded".
func TestTimeoutNamesTheFlag(t *testing.T) {
	url := hangingSGLang(t, func(string) bool { return true })
	errPath := filepath.Join(t.TempDir(), "errors.jsonl")
	r := runGenerate(t, `{"id":"x","input_ids":[1,2,3]}`+"\n", "--url", url, "--timeout", "300ms", "--retries", "0",
		"--concurrency", "1", "--max-tokens", "8", "--errors", errPath)
	if r.code != 75 {
		t.Fatalf("exit %d, want 75 (nothing succeeded): %s", r.code, r.stderr)
	}
	errs := readLines(t, errPath)
	if len(errs) != 1 || errs[0].Get("error.message").String() != "no complete answer within --timeout 300ms" {
		t.Fatalf("errors %v", errs)
	}
}
