package generate

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/sim"
	"github.com/synthpipe/synthpipe/lib/simtest"
)

// testOptions retry after 5 ms, not 500: the tests need not wait.
var testOptions = options{firstBackoff: 5 * time.Millisecond}

// startSim starts a simulated server for one test; mutate adjusts
// sim.Default.
func startSim(t testing.TB, mutate func(*sim.Config)) (*sim.Server, string) {
	t.Helper()
	cfg := sim.Default()
	if mutate != nil {
		mutate(&cfg)
	}
	s := simtest.Start(t, cfg)
	// Cleanups run last first: idle keep-alive connections are closed
	// before the server, whose Close would wait for them.
	t.Cleanup(backend.SharedClient().CloseIdleConnections)
	return s.Server, s.URL
}

// result is what one in-process run of generate did.
type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

func (r result) lines(t testing.TB) []gjson.Result {
	t.Helper()
	var out []gjson.Result
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if l == "" {
			continue
		}
		if !gjson.Valid(l) {
			t.Fatalf("invalid output line: %.200s", l)
		}
		out = append(out, gjson.Parse(l))
	}
	return out
}

// runGenerate runs generate in-process with stdin and arguments.
func runGenerate(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	return runGenerateWith(t, testOptions, stdin, args...)
}

// runGenerateWith is runGenerate with the options opt.
func runGenerateWith(t testing.TB, opt options, stdin string, args ...string) result {
	t.Helper()
	return runGenerateOpt(t, opt, stdin, &bytes.Buffer{}, args...)
}

func runGenerateTo(t testing.TB, stdin string, stdout interface {
	Write([]byte) (int, error)
	String() string
}, args ...string) result {
	t.Helper()
	return runGenerateOpt(t, testOptions, stdin, stdout, args...)
}

// runGenerateOpt runs generate with the options opt, its output to stdout.
func runGenerateOpt(t testing.TB, opt options, stdin string, stdout interface {
	Write([]byte) (int, error)
	String() string
}, args ...string) result {
	t.Helper()
	var stderr syncBuffer
	start := time.Now()
	code := mainWith(opt, append([]string{"generate"}, args...), strings.NewReader(stdin), stdout, &stderr)
	r := result{code: code, stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	if testing.Verbose() {
		t.Logf("generate %s -> %d in %v\n%s", strings.Join(args, " "), code, r.elapsed, r.stderr)
	}
	return r
}

// syncBuffer is a bytes.Buffer safe for the progress goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// promptIDs is request i's prompt: distinct per request.
func promptIDs(i, n int) []int {
	ids := make([]int, n)
	for k := range ids {
		ids[k] = (i*7919 + k*31 + 5) % 30000
	}
	return ids
}

// sglangRequests are n request records with prompts of promptLen ids.
func sglangRequests(n, promptLen int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"id":"r%d","input_ids":%s,"meta":{"n":%d}}`+"\n", i, string(jsonl.AppendIntArray(nil, promptIDs(i, promptLen))), i)
	}
	return b.String()
}

// chatRequests are n chat request records.
func chatRequests(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"id":"c%d","messages":[{"role":"user","content":"question number %d"}]}`+"\n", i, i)
	}
	return b.String()
}

// checkOwnOutput checks that every sglang result's output_ids are the ones
// the simulator generates for that record's own prompt.
func checkOwnOutput(t testing.TB, srv *sim.Server, lines []gjson.Result, promptLen int) {
	t.Helper()
	for _, l := range lines {
		var i int
		fmt.Sscanf(l.Get("id").String(), "r%d", &i)
		got := l.Get("output_ids").Array()
		want := srv.ExpectedOutputIDs(promptIDs(i, promptLen), len(got))
		for k, g := range got {
			if l.Get("finish_reason").String() == "stop" && k == len(got)-1 {
				continue // the EOS id
			}
			if int(g.Int()) != want[k] {
				t.Fatalf("record %s: output id %d is %d, want %d: the answer belongs to another request", l.Get("id"), k, g.Int(), want[k])
			}
		}
		if l.Get("meta.n").Int() != int64(i) {
			t.Fatalf("record %s lost its own fields: %s", l.Get("id"), l.Raw)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// readLines reads a JSONL file.
func readLines(t testing.TB, path string) []gjson.Result {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return result{stdout: string(b)}.lines(t)
}
