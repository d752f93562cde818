package tests

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/sim"
	"github.com/synthpipe/synthpipe/lib/simtest"
)

// The secrets tests give generate a distinctive API key and look for it
// everywhere a person, a log collector or another user of the machine
// could read it: every process's argv while it runs, stderr (progress lines
// included), stdout, the errors file, and a goroutine dump. They walk every
// failure path: the key accepted, refused (401), a server that echoes the
// request, headers and all, in its error body, and a crash.

// newSecretKey returns an OpenRouter-shaped key with a random part no
// output could contain by chance.
func newSecretKey(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "sk-or-v1-synthpipe-secret-" + hex.EncodeToString(b)
}

// leakCheck collects what the tools showed and reports any trace of the
// key: the whole key, or its random part alone (a key cut short or masked
// at one end still gives most of it away).
type leakCheck struct {
	key     string
	also    []string // other forms of the secret, looked for whole
	mu      sync.Mutex
	sources map[string][]byte
}

func newLeakCheck(key string, also ...string) *leakCheck {
	return &leakCheck{key: key, also: also, sources: map[string][]byte{}}
}

func (l *leakCheck) add(source string, b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sources[source] = append(l.sources[source], b...)
}

// addFile adds a file's contents; a file never written is nothing to leak.
func (l *leakCheck) addFile(source, path string) {
	if b, err := os.ReadFile(path); err == nil {
		l.add(source, b)
	}
}

func (l *leakCheck) check(t *testing.T) {
	t.Helper()
	random := l.key[len(l.key)-32:]
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, source := range sortedKeys(l.sources) {
		text := l.sources[source]
		for _, needle := range append([]string{l.key, random[:12], random[len(random)-12:]}, l.also...) {
			if i := bytes.Index(text, []byte(needle)); i >= 0 {
				from, to := max(i-80, 0), min(i+len(needle)+40, len(text))
				t.Errorf("the API key shows in %s: ...%s...", source, text[from:to])
				break
			}
		}
	}
}

// watchArgv samples /proc/PID/cmdline of every stage while the pipeline
// runs, as ps would show it to any user of the machine.
func (l *leakCheck) watchArgv(p *pipeline) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			for _, s := range p.stages {
				if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", s.cmd.Process.Pid)); err == nil {
					l.add("the argv of "+s.name, append(bytes.ReplaceAll(b, []byte{0}, []byte{' '}), '\n'))
				}
			}
			select {
			case <-quit:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() { close(quit); <-done }
}

// addPipeline adds every stage's stderr and the pipeline's files.
func (l *leakCheck) addPipeline(p *pipeline, files map[string]string) {
	for _, s := range p.stages {
		l.add("the stderr of "+s.name, []byte(s.stderr()))
	}
	for source, path := range files {
		l.addFile(source, path)
	}
}

// echoServer answers every request with status and a body that repeats
// the request, headers included, as a debugging proxy or a careless server
// might; asJSON wraps the dump in an OpenAI-style error object, so that
// generate's message extraction reads it too.
func echoServer(t *testing.T, status int, asJSON bool, key string) (url string, sawKey func() bool) {
	t.Helper()
	var mu sync.Mutex
	saw := false
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dump, _ := httputil.DumpRequest(r, true)
		mu.Lock()
		saw = saw || bytes.Contains(dump, []byte(key))
		mu.Unlock()
		if asJSON {
			body, _ := json.Marshal(map[string]any{"error": map[string]any{"code": status, "message": "bad request: " + string(dump)}})
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			w.Write(body)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		fmt.Fprintf(w, "upstream said no; your request was:\n%s", dump)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), func() bool { mu.Lock(); defer mu.Unlock(); return saw }
}

func TestReliabilitySecrets(t *testing.T) {
	requireTools(t, "dedupe-resume", "generate", "budget-cut")
	t.Parallel() // mostly waiting on servers and pipes: it runs beside the other reliability tests
	key := newSecretKey(t)
	keyEnv := []string{"OPENROUTER_API_KEY=" + key}

	// pacedWithKey is a server that demands a key and answers slowly
	// enough for several progress lines.
	pacedWithKey := func(demand string) *simtest.Server {
		cfg := quickSimConfig()
		cfg.APIKey = demand
		cfg.StepTime = 10 * time.Millisecond
		cfg.Lengths.Max = 48
		return simtest.Start(t, cfg)
	}

	for _, backend := range []string{"sglang", "openai"} {
		t.Run("accepted_"+backend, func(t *testing.T) {
			srv := pacedWithKey(key)
			leakyRun(t, key, keyEnv, backend, srv.URL, 0, nil)
		})
		t.Run("refused_401_"+backend, func(t *testing.T) {
			srv := pacedWithKey(newSecretKey(t))
			leakyRun(t, key, keyEnv, backend, srv.URL, 77, nil)
		})
		for _, tc := range []struct {
			status int
			asJSON bool
			want   int
		}{
			{http.StatusInternalServerError, false, anyEndCode}, {http.StatusInternalServerError, true, anyEndCode},
			{http.StatusBadRequest, false, 0}, {http.StatusBadRequest, true, 0},
			{http.StatusUnauthorized, true, 77},
		} {
			name := fmt.Sprintf("echoed_%d_json=%v_%s", tc.status, tc.asJSON, backend)
			t.Run(name, func(t *testing.T) {
				url, sawKey := echoServer(t, tc.status, tc.asJSON, key)
				leakyRun(t, key, keyEnv, backend, url, tc.want, []string{"--retries", "1", "--concurrency", "4"})
				if !sawKey() {
					t.Errorf("generate never sent the key to the server: the test proved nothing")
				}
			})
		}
	}
	t.Run("key_file", func(t *testing.T) {
		srv := pacedWithKey(key)
		keyFile := filepath.Join(t.TempDir(), "key")
		if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		leakyRun(t, key, nil, "openai", srv.URL, 0, []string{"--api-key-file", keyFile})
	})
	// A user and password in --url are sent as Basic authentication: the
	// password, and the header a server may echo, must show nowhere.
	for _, backend := range []string{"sglang", "openai"} {
		t.Run("url_userinfo_"+backend, func(t *testing.T) {
			pass := newSecretKey(t)
			basic := base64.StdEncoding.EncodeToString([]byte("alice:" + pass))
			withCreds := func(url string) string { return strings.Replace(url, "http://", "http://alice:"+pass+"@", 1) }
			// From the environment: on the command line ps would show it
			// (generate warns about that).
			srv := pacedWithKey("")
			leakyRun(t, pass, []string{"SYNTHPIPE_URL=" + withCreds(srv.URL)}, backend, "", 0, nil, basic, "alice")
			url, sawKey := echoServer(t, http.StatusInternalServerError, true, basic)
			leakyRun(t, pass, []string{"SYNTHPIPE_URL=" + withCreds(url)}, backend, "", anyEndCode, []string{"--retries", "1", "--concurrency", "4"}, basic, "alice")
			if !sawKey() {
				t.Errorf("generate never sent the credentials to the server: the test proved nothing")
			}
		})
	}
	t.Run("goroutine_dump", func(t *testing.T) { goroutineDump(t, key, keyEnv) })
	t.Run("key_flag_refused", func(t *testing.T) { keyFlagRefused(t, key) })
}

// anyEndCode accepts 0 or 75 from generate, when which of them a run ends
// with is not what a test is about.
const anyEndCode = -1

// leakyRun runs dedupe-resume | generate | budget-cut with the key in the
// environment against url (none: $SYNTHPIPE_URL in env), checks generate's
// exit code, and looks for the key, and the other forms of a secret in
// also, everywhere the run left text.
func leakyRun(t *testing.T, key string, env []string, backend, url string, wantCode int, extra []string, also ...string) {
	dir := t.TempDir()
	rs := syntheticRequests(t, dir, 60, 3)
	outPath, errPath := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "errors.jsonl")
	var urls []string
	if url != "" {
		urls = []string{url}
	}
	gen := generateArgs(backend, urls, 48, errPath, append([]string{"--progress-interval", "100ms"}, extra...)...)
	p := startPipeline(t, dir, "secret", pipelineIO{env: env}, resumePipeline(rs, outPath, gen)...)
	leaks := newLeakCheck(key, also...)
	stopArgv := leaks.watchArgv(p)
	err := p.wait(3 * time.Minute) // a hang: retries' backoffs take a while on a busy machine
	stopArgv()
	if err != nil {
		t.Fatalf("%v\n%s", err, p.describe())
	}
	g := p.stageNamed("generate")
	if code := g.exitCode(); code != wantCode && !(wantCode == anyEndCode && (code == 0 || code == 75)) {
		t.Errorf("generate exited %d, want %d\n%s", g.exitCode(), wantCode, p.describe())
	}
	leaks.addPipeline(p, map[string]string{"the output": outPath, "the errors file": errPath})
	leaks.check(t)
	if wantCode == 0 && !summaryPattern.MatchString(g.stderr()) {
		t.Errorf("no summary on stderr: the run did not get far enough to test its messages\n%s", p.describe())
	}
	if wantCode == 0 && countLines(outPath) > 0 && !strings.Contains(g.stderr(), " in flight, ") {
		t.Errorf("no progress line on stderr (--progress-interval 100ms): they went unchecked\n%s", p.describe())
	}
	t.Logf("generate exited %d; %d bytes of stderr, %d output lines, %d error lines", g.exitCode(), len(g.stderr()),
		countLines(outPath), countLines(errPath))
}

// goroutineDump: SIGQUIT makes a Go program print every goroutine's stack
// and exit; requests in flight are on those stacks. The dump is what a
// user pastes into a bug report, so it must not carry the key.
func goroutineDump(t *testing.T, key string, env []string) {
	dir := t.TempDir()
	rs := syntheticRequests(t, dir, 20, 5)
	cfg := quickSimConfig()
	cfg.APIKey = key
	cfg.Faults.Hang = 1 // every request stays in flight until the dump
	srv := simtest.Start(t, cfg)
	for _, backend := range []string{"sglang", "openai"} {
		errPath := filepath.Join(dir, backend+".errors.jsonl")
		gen := generateArgs(backend, []string{srv.URL}, 48, errPath, "--concurrency", "8", rs.path)
		p := startPipeline(t, dir, "dump-"+backend, pipelineIO{env: append(env, "GOTRACEBACK=all")}, stage("generate", gen...))
		leaks := newLeakCheck(key)
		stopArgv := leaks.watchArgv(p)
		// Requests hanging in the server are requests in flight in generate.
		hanging := srv.Stats().Faults[sim.FaultHang] + 8
		for deadline := time.Now().Add(10 * time.Second); srv.Stats().Faults[sim.FaultHang] < hanging && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		p.stages[0].cmd.Process.Signal(syscall.SIGQUIT)
		err := p.wait(10 * time.Second)
		stopArgv()
		if err != nil {
			t.Fatalf("%v\n%s", err, p.describe())
		}
		dump := p.stages[0].stderr()
		if !strings.Contains(dump, "goroutine ") || !strings.Contains(dump, "SIGQUIT") {
			t.Errorf("%s: SIGQUIT gave no goroutine dump (exit %d):\n%s", backend, p.stages[0].exitCode(), tail(dump, 2000))
		}
		leaks.addPipeline(p, map[string]string{"the errors file": errPath})
		leaks.check(t)
	}
}

// keyFlagRefused: a key typed on the command line is refused with a hint
// to the safe ways, and the message does not repeat it.
func keyFlagRefused(t *testing.T, key string) {
	for _, args := range [][]string{
		{"--api-key", key},
		{"--api-key=" + key},
		{"--url", "http://127.0.0.1:1", "-api-key", key},
		{"--key", key},
	} {
		code, stdout, stderr := runTool(t, 10*time.Second, nil, strings.NewReader(""), "generate", args...)
		shown := strings.ReplaceAll(strings.Join(args, " "), key, "KEY")
		if code != 64 {
			t.Errorf("generate %s exited %d, want 64", shown, code)
		}
		if !strings.Contains(string(stderr), "OPENROUTER_API_KEY") || !strings.Contains(string(stderr), "--api-key-file") {
			t.Errorf("generate %s: the refusal does not point to $OPENROUTER_API_KEY and --api-key-file:\n%s", shown, stderr)
		}
		leaks := newLeakCheck(key)
		leaks.add("stdout of generate "+shown, stdout)
		leaks.add("stderr of generate "+shown, stderr)
		leaks.check(t)
	}
}
