package tests

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/rogpeppe/go-internal/testscript"
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
	"gzip":    compressCmd("gzip"),
	"zstd":    compressCmd("zstd"),
	"bigline": bigLine,
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
