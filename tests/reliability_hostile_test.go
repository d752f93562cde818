package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The hostile-server family runs generate, the real binary, against
// servers on loopback that are broken or malicious: malformed answers,
// huge ones, deeply nested ones, answers dripped slowly, servers that go
// silent mid-answer, redirect elsewhere, or lie about the tokens they
// used. Whatever they do, generate must not crash, hang or run out of
// memory, must write nothing that is not a checked answer to its own
// request, must account for every record, and must end with a documented
// exit status and a message that says what happened.

// hostileServer serves handler on loopback and counts the requests that
// reached it.
type hostileServer struct {
	*httptest.Server
	hits atomic.Int64
}

func startHostile(t *testing.T, handler http.HandlerFunc) *hostileServer {
	t.Helper()
	h := &hostileServer{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.hits.Add(1)
		// Read whole first: net/http notices that the client left (and
		// ends r.Context) only once the request body has been read.
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		handler(w, r)
	}))
	t.Cleanup(h.Close)
	return h
}

// sglangAnswerJSON is a well-formed /generate answer for rid; usage is
// the meta_info's count members, as a server states them (or lies).
func sglangAnswerJSON(rid, usage string) string {
	return `{"text":" ok</s>","output_ids":[7,2],"meta_info":{"id":"` + rid + `","finish_reason":{"type":"stop","matched":2}` + usage + `}}`
}

// ridOf reads the rid a /generate request was sent with.
func ridOf(r *http.Request) string {
	var body struct {
		RID string `json:"rid"`
	}
	json.NewDecoder(r.Body).Decode(&body)
	return body.RID
}

// honest answers /generate correctly, /server_info with nothing useful.
func honest(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/generate" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, sglangAnswerJSON(ridOf(r), `,"prompt_tokens":3,"completion_tokens":2`))
}

// deepJSON is what once crashed generate with a stack overflow in gjson's
// validation. It is made on first use: a package-level value would be made
// at the start of every process of the test binary, each tool run included.
var deepJSON = sync.OnceValue(func() string { return strings.Repeat("[", 12<<20) })

func TestReliabilityHostileServers(t *testing.T) {
	requireTools(t, "generate", "budget-cut")
	t.Parallel()
	elsewhere := startHostile(t, honest) // where a redirect points: nothing may reach it

	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		args    []string
		env     []string
		// want is generate's exit status; check looks at the rest.
		want  int
		check func(t *testing.T, run hostileRun)
	}{
		{name: "malformed", want: 75, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"text":" unterminated`)
		}, check: func(t *testing.T, run hostileRun) { run.allFailed(t, "protocol", "answer is not JSON") }},

		{name: "deep_body", want: 75, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, deepJSON())
		}, check: func(t *testing.T, run hostileRun) { run.allFailed(t, "protocol", "answer is not JSON") }},

		{name: "deep_event", want: 75, args: []string{"--stream"}, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: "+deepJSON()+"\n\n")
		}, check: func(t *testing.T, run hostileRun) { run.allFailed(t, "protocol", "answer is not JSON") }},

		{name: "deep_server_info", want: 0, args: []string{"--concurrency", "auto"}, handler: func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/server_info" {
				io.WriteString(w, deepJSON())
				return
			}
			honest(w, r)
		}, check: func(t *testing.T, run hostileRun) {
			run.allAnswered(t)
			if !strings.Contains(run.stderr, "no capacity information (answer is not JSON") {
				t.Errorf("stderr does not say why the capacity is unknown:\n%s", run.stderr)
			}
		}},

		// Answers of 64 MiB each, four at a time, against a bound of 4 MiB
		// for all of them together.
		{name: "huge", want: 75, args: []string{"--max-answer-memory", "4Mi"}, handler: hugeAnswers(64 << 20),
			check: func(t *testing.T, run hostileRun) { run.tooLarge(t, 4<<20, 200<<10) }},
		{name: "slow", want: 0, handler: func(w http.ResponseWriter, r *http.Request) {
			body := sglangAnswerJSON(ridOf(r), `,"prompt_tokens":3,"completion_tokens":2`)
			w.Header().Set("Content-Type", "application/json")
			for i := range len(body) {
				io.WriteString(w, body[i:i+1])
				w.(http.Flusher).Flush()
				time.Sleep(time.Millisecond)
			}
		}, check: func(t *testing.T, run hostileRun) { run.allAnswered(t) }},

		// Silent after the first event: only --idle-timeout ends these.
		{name: "silent_stream", want: 75, args: []string{"--stream", "--idle-timeout", "300ms"}, handler: func(w http.ResponseWriter, r *http.Request) {
			rid := ridOf(r)
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"text":" o","output_ids":[7],"meta_info":{"id":"`+rid+`","finish_reason":null,"completion_tokens":1}}`+"\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, check: func(t *testing.T, run hostileRun) {
			run.allFailed(t, "timeout", "the server sent nothing for --idle-timeout 300ms")
		}},

		{name: "silent", want: 75, args: []string{"--timeout", "300ms"}, handler: func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, check: func(t *testing.T, run hostileRun) {
			run.allFailed(t, "timeout", "no complete answer within --timeout 300ms")
		}},

		{name: "redirecting", want: 77, env: []string{"OPENROUTER_API_KEY=sk-hostile-redirect"}, handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusFound)
		}, check: func(t *testing.T, run hostileRun) {
			if !strings.Contains(run.stderr, "redirected to "+elsewhere.URL+"/generate (HTTP 302), not followed") {
				t.Errorf("stderr does not name the Location:\n%s", run.stderr)
			}
			if n := elsewhere.hits.Load(); n > 0 {
				t.Errorf("%d requests followed the redirect to another origin", n)
			}
		}},

		// A negative count, one past any context, one missing: each is
		// counted from the ids the server returned, and what is written
		// is what the other tools accept.
		{name: "lying_about_usage", want: 0, handler: func(w http.ResponseWriter, r *http.Request) {
			lies := []string{`,"prompt_tokens":3,"completion_tokens":-5`, `,"prompt_tokens":3,"completion_tokens":1e300`, `,"prompt_tokens":3`}
			rid := ridOf(r)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, sglangAnswerJSON(rid, lies[len(rid)%len(lies)]))
		}, check: func(t *testing.T, run hostileRun) {
			run.allAnswered(t)
			for _, line := range bytes.Split(bytes.TrimSpace(run.stdout), []byte("\n")) {
				var rec struct {
					ID               string `json:"id"`
					CompletionTokens int64  `json:"completion_tokens"`
				}
				json.Unmarshal(line, &rec)
				if rec.CompletionTokens != 2 {
					t.Errorf("%s: completion_tokens %d written, want the 2 output_ids returned", rec.ID, rec.CompletionTokens)
				}
			}
			if !strings.Contains(run.stderr, "implausible usage") {
				t.Errorf("no warning about the server's usage:\n%s", run.stderr)
			}
			code, _, stderr := runTool(t, 30*time.Second, nil, bytes.NewReader(run.stdout), "budget-cut", "--tokens", "1M")
			if code != 0 {
				t.Errorf("budget-cut refused what generate wrote (exit %d): %s", code, stderr)
			}
		}},
	} {
		if tc.name == "huge" && stressRun() {
			// As reported: answers of 300 MB, all in flight at once, under
			// the default bound (1 GiB together, 256 MiB one).
			tc.args, tc.handler = []string{"--concurrency", "8"}, hugeAnswers(300<<20)
			// 1 GiB of answers, 512 MiB for the rest (the soft memory limit
			// generate sets), and a quarter more for the collector to lag.
			tc.check = func(t *testing.T, run hostileRun) { run.tooLarge(t, 256<<20, 1920<<10) }
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startHostile(t, tc.handler)
			run := runHostile(t, srv.URL, tc.env, tc.args...)
			if run.code != tc.want {
				t.Fatalf("generate exited %d, want %d\n%s", run.code, tc.want, tail(run.stderr, 3000))
			}
			tc.check(t, run)
		})
	}
}

// hugeAnswers answers every request with a JSON body of size bytes,
// declared in Content-Length and sent as fast as the client reads.
func hugeAnswers(size int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(size))
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		io.WriteString(w, `{"text":"`)
		for sent := 0; sent < size-16; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return // the client gave up, as it should
			}
		}
	}
}

// tooLarge checks that every record failed for the size of its answer,
// alone (past min(256 MiB, the bound)) or with the others in flight, and
// that generate's memory peaked below peakKiB.
func (r hostileRun) tooLarge(t *testing.T, oneMax int, peakKiB int64) {
	t.Helper()
	r.allFailed(t, "protocol", "")
	for _, e := range r.errors {
		if msg := e.Error.Message; !strings.Contains(msg, fmt.Sprintf("answer larger than %d bytes", oneMax)) && !strings.Contains(msg, "--max-answer-memory") {
			t.Errorf("%s: %q does not say the answer was too large", e.ID, msg)
		}
	}
	if r.peakKiB > peakKiB {
		t.Errorf("generate peaked at %d MiB of memory, more than %d MiB", r.peakKiB>>10, peakKiB>>10)
	}
	t.Logf("generate peaked at %d MiB", r.peakKiB>>10)
}

// hostileRequests is how many records each hostile run sends.
const hostileRequests = 6

// hostileRun is what one run of generate against a hostile server did.
type hostileRun struct {
	code     int
	stdout   []byte
	stderr   string
	errors   []errorRecord
	answered int
	peakKiB  int64
}

// runHostile runs generate (sglang, four requests at a time, one retry)
// on hostileRequests records against url and checks what holds whatever
// the server did: no crash, every record either answered or in --errors.
func runHostile(t *testing.T, url string, env []string, extra ...string) hostileRun {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	for i := range hostileRequests {
		fmt.Fprintf(&b, `{"id":"rec-%d","input_ids":[1,2,3]}`+"\n", i)
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	outPath, errPath := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "errors.jsonl")
	args := append([]string{"--url", url, "--max-tokens", "8", "--retries", "1", "--concurrency", "4", "--errors", errPath}, extra...)
	w := runWatched(testDeadline(t, 2*time.Minute), env, outPath, "generate", append(args, in)...)
	if w.err != nil || w.timedOut {
		t.Fatalf("generate did not run to its end (%v, timed out %v)\n%s", w.err, w.timedOut, tail(string(w.stderr), 3000))
	}
	if w.code == 2 || strings.Contains(string(w.stderr), "goroutine ") {
		t.Fatalf("generate crashed (exit %d):\n%s", w.code, tail(string(w.stderr), 3000))
	}
	run := hostileRun{code: w.code, stderr: string(w.stderr), peakKiB: w.peakKiB}
	run.stdout, _ = os.ReadFile(outPath)
	var err error
	if run.errors, err = readErrors(errPath, false); err != nil && !os.IsNotExist(err) {
		t.Fatalf("the errors file: %v", err)
	}
	results, err := readResults(outPath, false)
	if err != nil {
		t.Fatalf("the output: %v", err)
	}
	run.answered = len(results)
	// A run that a refusal stopped (77) cancels the rest, and says so; it
	// may stop before it has read every record (how many depends on how
	// soon the refusal came back). Any other run reads and settles every
	// record.
	settled := run.answered + len(run.errors)
	read := hostileRequests
	if m := regexp.MustCompile(`(\d+) records? read: (\d+) ok, `).FindStringSubmatch(run.stderr); m != nil && run.code == 77 {
		read, _ = strconv.Atoi(m[1])
	}
	records := fmt.Sprintf("%d records", read)
	if read == 1 {
		records = "1 record"
	}
	if settled > read || read > hostileRequests || run.code != 77 && settled != hostileRequests ||
		!strings.Contains(run.stderr, fmt.Sprintf("%s read: %d ok, ", records, run.answered)) {
		t.Errorf("%d answered and %d in --errors of %d records (%d read)\n%s", run.answered, len(run.errors), hostileRequests, read, tail(run.stderr, 3000))
	}
	return run
}

// allFailed checks that every record is in --errors with kind, and a
// message that says want.
func (r hostileRun) allFailed(t *testing.T, kind, want string) {
	t.Helper()
	if len(r.errors) != hostileRequests {
		t.Fatalf("%d of %d records in --errors\n%s", len(r.errors), hostileRequests, tail(r.stderr, 3000))
	}
	for _, e := range r.errors {
		if e.Error.Kind != kind || !strings.Contains(e.Error.Message, want) || e.Error.Attempts != 2 {
			t.Errorf("%s: error %+v, want kind %s after 2 attempts saying %q", e.ID, e.Error, kind, want)
		}
	}
}

// allAnswered checks that every record was answered.
func (r hostileRun) allAnswered(t *testing.T) {
	t.Helper()
	if r.answered != hostileRequests {
		t.Fatalf("%d of %d records answered\n%s", r.answered, hostileRequests, tail(r.stderr, 3000))
	}
}
