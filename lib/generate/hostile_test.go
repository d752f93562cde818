package generate

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

// authSGLang answers /generate with a one-token answer and records the
// Authorization header of each request.
func authSGLang(t *testing.T) (url string, auths func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodGet {
			// The server view's questions (/metrics, /v1/loads,
			// /get_load): not requests.
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"a","output_ids":[2],"meta_info":{"finish_reason":{"type":"stop","matched":2},"prompt_tokens":3,"completion_tokens":1}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(seen) }
}

// TestAPIKeyFile: a key file with a byte order mark sends the key without
// it; one with two lines is a usage error naming the file (it went out as
// a header no server accepts, and the run ended with 75, "no server is
// reachable"), and the message does not show the key.
func TestAPIKeyFile(t *testing.T) {
	url, auths := authSGLang(t)
	dir := t.TempDir()
	bom, twoLines := filepath.Join(dir, "bom.key"), filepath.Join(dir, "two.key")
	os.WriteFile(bom, []byte("\uFEFFsk-bom-key\r\n"), 0o600)
	os.WriteFile(twoLines, []byte("sk-first-line\nsk-second-line\n"), 0o600)
	in := `{"id":"a","input_ids":[1,2,3]}` + "\n"
	r := runGenerate(t, in, "--url", url, "--concurrency", "1", "--max-tokens", "8", "--api-key-file", bom)
	if r.code != 0 || !slices.Equal(auths(), []string{"Bearer sk-bom-key"}) {
		t.Fatalf("exit %d, Authorization %q: %s", r.code, auths(), r.stderr)
	}
	r = runGenerate(t, in, "--url", url, "--concurrency", "1", "--max-tokens", "8", "--api-key-file", twoLines)
	if r.code != 64 || !strings.Contains(r.stderr, "--api-key-file "+twoLines+" holds more than one line") || strings.Contains(r.stderr, "sk-") {
		t.Fatalf("exit %d, want 64 naming the file without the key: %s", r.code, r.stderr)
	}
	if len(auths()) != 1 {
		t.Fatalf("a request went out with the bad key file")
	}
}

// TestModelsTimeout: --cost-budget reads the price from /models; a list
// that does not answer in time is a temporary failure (75), not a usage
// error (64), which stays for a list without the model.
func TestModelsTimeout(t *testing.T) {
	list := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"data":[{"id":"other","pricing":{"prompt":"0.000001","completion":"0.000002"}}]}`)
	}))
	defer list.Close()
	r := runGenerate(t, chatRequests(1), "--backend", "openai", "--model", "m", "--url", list.URL, "--cost-budget", "1")
	if r.code != 64 || !strings.Contains(r.stderr, `does not list "m"`) {
		t.Fatalf("exit %d, want 64 for a model the list does not price: %s", r.code, r.stderr)
	}
	opt := testOptions
	opt.tuning.ServerInfoTimeout = 200 * time.Millisecond
	url := hangingSGLang(t, func(string) bool { return true }) // answers nothing useful, and never ends
	r = runGenerateWith(t, opt, chatRequests(1), "--backend", "openai", "--model", "m", "--url", url, "--cost-budget", "1")
	if r.code != 75 || !strings.Contains(r.stderr, "/models: no answer within 200ms") || !strings.Contains(r.stderr, "--max-price") {
		t.Fatalf("exit %d, want 75 naming /models and --max-price: %s", r.code, r.stderr)
	}
}

// TestURLCredentials: a user and password in --url go out as Basic
// authentication and appear nowhere in what generate writes or prints:
// not in gen.endpoint, the errors file, the start-up notes or the summary.
func TestURLCredentials(t *testing.T) {
	const pass = "url-secret-2718"
	url, auths := authSGLang(t)
	dead := "http://bob:" + pass + "@127.0.0.1:1"
	withCreds := strings.Replace(url, "http://", "http://alice:"+pass+"@", 1)
	errPath := filepath.Join(t.TempDir(), "errors.jsonl")
	r := runGenerate(t, sglangRequests(3, 4), "--url", withCreds, "--url", dead, "--max-tokens", "8", "--retries", "1", "--errors", errPath)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "warning: "+url+" carries a password on the command line") {
		t.Errorf("no warning about the password on the command line:\n%s", r.stderr)
	}
	errs, _ := os.ReadFile(errPath)
	for what, text := range map[string]string{"stdout": r.stdout, "stderr": r.stderr, "the errors file": string(errs)} {
		if strings.Contains(text, pass) || strings.Contains(text, "alice") || strings.Contains(text, "bob") {
			t.Errorf("the credentials of --url show in %s:\n%s", what, text)
		}
	}
	for _, l := range r.lines(t) {
		if l.Get("gen.endpoint").String() != url {
			t.Errorf("gen.endpoint %s, want %s", l.Get("gen.endpoint"), url)
		}
	}
	if got := auths(); len(got) == 0 || got[0] != "Basic "+base64.StdEncoding.EncodeToString([]byte("alice:"+pass)) {
		t.Errorf("Authorization %q: want Basic with the user and password of --url", got)
	}
	r = runGenerate(t, "", "--url", "ftp://carol:"+pass+"@host")
	if r.code != 64 || strings.Contains(r.stderr, pass) {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}
