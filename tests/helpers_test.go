package tests

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/tidwall/gjson"
)

// helperCommands are small programs the scripts run as processes beside the
// tools: making big or binary inputs that a .txtar cannot hold literally.
var helperCommands = map[string]func(){
	"gen-records": genRecords,
}

// genRecords writes N records with a given number of prompt and completion
// ids: gen-records N PROMPT COMPLETION [ID-PREFIX].
func genRecords() {
	args := os.Args[1:]
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: gen-records N PROMPT COMPLETION [ID-PREFIX]")
		os.Exit(2)
	}
	n, _ := strconv.Atoi(args[0])
	p, _ := strconv.Atoi(args[1])
	c, _ := strconv.Atoi(args[2])
	prefix := "r"
	if len(args) > 3 {
		prefix = args[3]
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, `{"id":"%s%d","input_ids":%s,"prompt_tokens":%d,"output_ids":%s,"completion_tokens":%d,"finish_reason":"stop"}`+"\n",
			prefix, i, ids(p, i), p, ids(c, i+7), c)
	}
}

func ids(n, seed int) string {
	var b strings.Builder
	b.WriteByte('[')
	for k := 0; k < n; k++ {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa((seed*7919 + k*31) % 151000))
	}
	b.WriteByte(']')
	return b.String()
}

func setupEnv(env *testscript.Env) error {
	env.Setenv("NO_COLOR", "1")
	return nil
}

// scriptCommands are script verbs that run inside the test process.
var scriptCommands = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"status":   statusCmd,
	"gzip":     compressCmd("gzip"),
	"zstd":     compressCmd("zstd"),
	"bigline":  bigLine,
	"waitfile": waitFile,
	"waitsim":  waitSim,
	"urlenv":   urlEnv,
	"httpget":  httpCmd("GET"),
	"httppost": httpCmd("POST"),
	"truncate": func(ts *testscript.TestScript, neg bool, args []string) {
		// truncate FILE N: keep the first N bytes
		if len(args) != 2 {
			ts.Fatalf("usage: truncate FILE N")
		}
		n, err := strconv.ParseInt(args[1], 10, 64)
		ts.Check(err)
		ts.Check(os.Truncate(ts.MkAbs(args[0]), n))
	},
}

// statusCmd: status N COMMAND [ARGS...] runs COMMAND like exec and checks
// that it exits with status N exactly (exec only tells zero from non-zero).
// Its stdout and stderr are kept for the stdout and stderr commands.
func statusCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status N COMMAND [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = exitErr.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// compressCmd: gzip|zstd SRC DST compresses a file.
func compressCmd(kind string) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 2 {
			ts.Fatalf("usage: %s SRC DST", kind)
		}
		data, err := os.ReadFile(ts.MkAbs(args[0]))
		ts.Check(err)
		f, err := os.Create(ts.MkAbs(args[1]))
		ts.Check(err)
		defer f.Close()
		switch kind {
		case "gzip":
			zw := gzip.NewWriter(f)
			_, err = zw.Write(data)
			ts.Check(err)
			ts.Check(zw.Close())
		case "zstd":
			zw, err := zstd.NewWriter(f)
			ts.Check(err)
			_, err = zw.Write(data)
			ts.Check(err)
			ts.Check(zw.Close())
		}
	}
}

// bigLine FILE ID BYTES writes one record whose "text" pads it to BYTES bytes.
func bigLine(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: bigline FILE ID BYTES")
	}
	n, err := strconv.Atoi(args[2])
	ts.Check(err)
	head := fmt.Sprintf(`{"id":%q,"prompt_tokens":1,"completion_tokens":1,"text":"`, args[1])
	pad := n - len(head) - 2
	if pad < 0 {
		pad = 0
	}
	line := head + strings.Repeat("x", pad) + "\"}\n"
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	ts.Check(err)
	defer f.Close()
	_, err = f.WriteString(line)
	ts.Check(err)
}

// waitFile FILE [SECONDS] waits until FILE exists and ends in a newline: a
// server started in the background (llm-sim --url-file FILE &) writes it
// when it is ready. The limit (a minute unless given) only bounds a server
// that never gets there: on a busy machine a start takes seconds.
func waitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitfile FILE [SECONDS]")
	}
	limit := time.Minute
	if len(args) == 2 {
		s, err := strconv.Atoi(args[1])
		ts.Check(err)
		limit = time.Duration(s) * time.Second
	}
	deadline := time.Now().Add(limit)
	for {
		b, err := os.ReadFile(ts.MkAbs(args[0]))
		if err == nil && strings.HasSuffix(string(b), "\n") {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s did not appear within %v", args[0], limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitSim URL FIELD N waits until the number FIELD of llm-sim's /metrics at
// URL is at least N: "waitsim $SIM running 4" waits until four requests are
// being answered, an event a script can act on where a sleep would guess.
// A server that never gets there fails the command after a minute.
func waitSim(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: waitsim URL FIELD N")
	}
	want, err := strconv.ParseInt(args[2], 10, 64)
	ts.Check(err)
	const limit = time.Minute
	var got int64
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		resp, err := http.Get(args[0] + "/metrics")
		if err != nil {
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			continue
		}
		if got = gjson.GetBytes(b, args[1]).Int(); got >= want {
			return
		}
	}
	ts.Fatalf("llm-sim's %s stayed at %d for %v, want %d", args[1], got, limit, want)
}

// urlEnv FILE VAR sets the script variable VAR to FILE's first line, so that
// later commands can say $VAR (a server's URL written by --url-file).
func urlEnv(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: urlenv FILE VAR")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	line, _, _ := strings.Cut(string(b), "\n")
	ts.Setenv(args[1], strings.TrimSpace(line))
}

// httpCmd: httpget URL / httppost URL BODY sends one request and prints the
// response body on stdout; a status of 400 or more fails the command.
func httpCmd(method string) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		var body io.Reader
		switch {
		case method == "GET" && len(args) == 1:
		case method == "POST" && len(args) == 2:
			body = strings.NewReader(args[1])
		default:
			ts.Fatalf("usage: httpget URL | httppost URL BODY")
		}
		req, err := http.NewRequest(method, args[0], body)
		ts.Check(err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		ts.Check(err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		ts.Check(err)
		ts.Stdout().Write(b)
		if failed := resp.StatusCode >= 400; failed != neg {
			ts.Fatalf("%s %s: status %d", method, args[0], resp.StatusCode)
		}
	}
}

func init() { scriptCommands["hugeline"] = hugeLine }

// hugeLine FILE ID BYTES appends one record of BYTES bytes (newline included),
// like bigline, but writes its padding in chunks: a 100 MB line costs the
// test process 1 MiB of memory, not 100 MB.
func hugeLine(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: hugeline FILE ID BYTES")
	}
	n, err := strconv.Atoi(args[2])
	ts.Check(err)
	head := fmt.Sprintf(`{"id":%q,"prompt_tokens":1,"completion_tokens":1,"text":"`, args[1])
	const tail = "\"}\n"
	pad := max(n-len(head)-len(tail), 0)
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	ts.Check(err)
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	_, err = w.WriteString(head)
	ts.Check(err)
	chunk := strings.Repeat("x", 1<<20)
	for pad > 0 {
		k := min(pad, len(chunk))
		_, err = w.WriteString(chunk[:k])
		ts.Check(err)
		pad -= k
	}
	_, err = w.WriteString(tail)
	ts.Check(err)
	ts.Check(w.Flush())
}

func init() { scriptCommands["deepline"] = deepLine }

// deepLine: deepline FILE N appends a record whose "x" opens N arrays and
// never closes them: what once crashed a tool whose JSON validation
// recursed once per level.
func deepLine(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: deepline FILE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	ts.Check(err)
	defer f.Close()
	_, err = f.WriteString(`{"id":"deep","input_ids":[1],"prompt_tokens":1,"completion_tokens":1,"text":"t","messages":[{"role":"user","content":"c"}],"x":` + strings.Repeat("[", n) + "}\n")
	ts.Check(err)
}
