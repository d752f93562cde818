package tests

// Every example of every tool's --help and every ```sh block of the README
// runs here as written, against llm-sim: a user pastes them, so each must
// work. Only what names the user's world is substituted (one table,
// exampleSubstitutions): servers, model folders, file locations, budgets
// and cron schedules. A block that is not a pipeline to paste is skipped
// with its reason (readmeSkips).

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/tidwall/sjson"

	"github.com/synthpipe/synthpipe/lib/bundle"
	"github.com/synthpipe/synthpipe/lib/record"
	"github.com/synthpipe/synthpipe/lib/sim"
	"github.com/synthpipe/synthpipe/lib/simtest"
	"github.com/synthpipe/synthpipe/lib/toolset"
)

// exampleSubstitutions is what an example names of the user's world and what
// the test puts in its place. $SIM and $SIM2 are SGLang simulators, $ROUTER
// one serving the OpenAI routes and /api/v1/models (OpenRouter) with the
// model the example names, $REPO the repository.
var exampleSubstitutions = [][2]string{
	// Servers.
	{"http://gpu1:30000", "$SIM"},
	{"http://gpu2:30000", "$SIM2"},
	{"--url URL", "--url $SIM"},
	{"https://openrouter.ai/api/v1", "$ROUTER/api/v1"},
	{"$local", "$SIM"},
	{"$router", "$ROUTER"},
	// GNU parallel's other machines are this one.
	{"--sshlogin 1/m1,1/m2,1/m3,1/m4 --workdir /data/run ", ""},
	// Model folders: the bundled tokenizer.
	{"--tokenizer DIR", "--tokenizer builtin:kimi-k2.5"},
	{"~/models/Qwen3-8B", "builtin:kimi-k2.5"},
	{"~/models/Kimi-K2.5", "builtin:kimi-k2.5"},
	{"./Kimi-K2.5", "builtin:kimi-k2.5"},
	{"/models/Kimi-K2.5", "builtin:kimi-k2.5"},
	{"/models/kimi", "builtin:kimi-k2.5"},
	// Cron schedules run once, in the test's folder.
	{"0 * * * * cd /data && ", ""},
	{"*/30 * * * * cd /data/run && ", ""},
	{"0 * * * * cd /srv/distill && ", ""},
	{"0 2 * * * ", ""},
	{"/data/", ""},
	// watch redraws forever: once is enough.
	{"watch -n 10 ", ""},
	// The repository's files.
	{"lib/bundle/prompts/", "$REPO/lib/bundle/prompts/"},
	{"scripts/fanout.sh", "$REPO/scripts/fanout.sh"},
	// Budgets of millions of tokens become a few thousand.
	{"--tokens 10M", "--tokens 3k"},
	{"SYNTHPIPE_BUDGET=10M", "SYNTHPIPE_BUDGET=3k"},
	// A request reserves its prompt and its answer limit: 10,240 would not
	// fit in 3k, and 2,900 fits once, so that each dataset of the README's
	// job stops with work left for its estimate and its API loop.
	{"SYNTHPIPE_MAX_TOKENS=10240", "SYNTHPIPE_MAX_TOKENS=2900"},
	// A server that runs until stopped listens on a free port.
	{"llm-sim --port 30000", "llm-sim --port 0"},
}

// readmeSkips are the README blocks (by their first command) that are not
// pipelines to paste, and why.
var readmeSkips = map[string]string{
	"make demo":                 "make targets: make test is this suite itself, and make demo runs the tools these examples run",
	"make install":              "installs into /usr/local or fetches from the network (go install ...@latest): not for a test",
	"to-train --format turns":   "needs generate --turns all output of SGLang answers in Kimi-K2.5's format: lib/totrain's conversation tests run the same command on such output from llm-sim --answer-format kimi-k2.5",
	"export SYNTHPIPE_SCRIPTS=": "sbatch lines for a Slurm cluster with SGLang: TestRecipeSlurmArray submits the same jobs (the server, the array after it, the server's scancel after the array) to a cluster it starts, with llm-sim as the server",
}

type example struct {
	name, script string
}

// helpExamples are the EXAMPLES of every tool's --help. llm-sim's examples
// go together: the second starts the server the third uses.
func helpExamples() []example {
	var out []example
	for _, tool := range toolset.All() {
		exs := tool.NewApp().Spec.Examples
		if tool.Name == "llm-sim" {
			var b strings.Builder
			for _, ex := range exs {
				b.WriteString(ex.Command + "\n")
			}
			out = append(out, example{tool.Name + ": all examples in order", b.String()})
			continue
		}
		for _, ex := range exs {
			out = append(out, example{tool.Name + ": " + ex.Comment, ex.Command})
		}
	}
	return out
}

// readmeBlocks are the README's ```sh blocks.
func readmeBlocks(t *testing.T) []example {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []example
	var block *strings.Builder
	start := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case block == nil && line == "```sh":
			block, start = &strings.Builder{}, n
		case block != nil && line == "```":
			out = append(out, example{fmt.Sprintf("README.md:%d", start), block.String()})
			block = nil
		case block != nil:
			block.WriteString(line + "\n")
		}
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// substitute applies exampleSubstitutions.
func substitute(script string) string {
	for _, r := range exampleSubstitutions {
		script = strings.ReplaceAll(script, r[0], r[1])
	}
	return script
}

// backgrounded waits after a command sent to the background until the server
// it started listens (it writes url.txt), and stops what the script left
// running when it ends.
func backgrounded(script string) string {
	var b strings.Builder
	b.WriteString("trap 'st=$?; kill $(jobs -p) 2>/dev/null || true; exit $st' EXIT\n")
	for _, line := range strings.Split(script, "\n") {
		if strings.HasPrefix(line, "llm-sim ") && !strings.Contains(line, "--url-file") {
			// Runs until stopped: started, seen listening, stopped.
			line = strings.TrimSuffix(strings.TrimSpace(line), "&")
			b.WriteString(line + " > port-url.txt &\n")
			b.WriteString("until [ -s port-url.txt ]; do sleep 0.05; done; kill $!; wait $! || exit 1\n")
			continue
		}
		b.WriteString(line + "\n")
		if strings.HasSuffix(strings.TrimSpace(line), "&") {
			b.WriteString("until [ -s url.txt ]; do sleep 0.05; done\n")
		}
	}
	return b.String()
}

var routerModel = regexp.MustCompile(`--model ([a-z0-9-]+/[a-z0-9.-]+)`)

func TestExamplesRunAsWritten(t *testing.T) {
	t.Parallel()
	requireTools(t, "tokenize-prompts", "dedupe-resume", "generate", "budget-cut", "tokstat", "to-train", "estimate", "llm-sim")
	for _, tool := range []string{"parallel", "jq", "flock", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: the examples use it (scripts/ensure-test-deps.sh installs it)", tool)
		}
	}
	world := exampleWorld(t)
	// The README's blocks first: its whole job is the longest example, and
	// a subtest started last would end the package's run alone.
	examples := append(readmeBlocks(t), helpExamples()...)
	if len(examples) < 30 {
		t.Fatalf("found %d examples: the --help examples or the README's blocks were not read", len(examples))
	}
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			first, _, _ := strings.Cut(strings.TrimSpace(ex.script), " ")
			for prefix, why := range readmeSkips {
				if strings.HasPrefix(strings.TrimSpace(ex.script), prefix) {
					t.Skipf("%s: %s", first, why)
				}
			}
			t.Parallel()
			dir := t.TempDir()
			if out, err := exec.Command("cp", "-a", world+"/.", dir).CombinedOutput(); err != nil {
				t.Fatalf("copy the example's files: %v\n%s", err, out)
			}
			script := backgrounded(substitute(ex.script))
			c := exec.Command("bash", "-e", "-c", script)
			c.Dir = dir
			c.Env = exampleEnv(t, dir, ex.script)
			// A failure bound only: the README's whole job runs twelve datasets
			// twice, which a loaded 2-core machine takes minutes over.
			out, err := runWithin(c, 10*time.Minute)
			if err != nil {
				t.Fatalf("%v\nas written:\n%s\nas run:\n%s\noutput:\n%s", err, ex.script, script, tail(out, 4000))
			}
			// Per-dataset figures name the datasets, in the README's layout
			// too, whose prompts carry no dataset field.
			if strings.Contains(ex.script, "--by dataset") && strings.Contains(out, record.NoGroup) {
				t.Errorf("--by dataset put records in %s:\nas run:\n%s\noutput:\n%s", record.NoGroup, script, tail(out, 4000))
			}
		})
	}
}

// exampleEnv is the environment an example runs in, in the folder dir: the
// simulators it names started ($SIM, $SIM2, $ROUTER serving the model the
// example names), the repository, an API key.
func exampleEnv(t *testing.T, dir, script string) []string {
	t.Helper()
	router := sim.Default()
	router.ModelName = "moonshotai/kimi-k2.5"
	if m := routerModel.FindStringSubmatch(script); m != nil {
		router.ModelName = m[1]
	}
	routerURL := simtest.Start(t, router).URL
	return append(os.Environ(),
		"SIM="+simtest.Start(t, quickSimConfig()).URL,
		"SIM2="+simtest.Start(t, quickSimConfig()).URL,
		"ROUTER="+routerURL,
		"SYNTHPIPE_OPENROUTER_URL="+routerURL+"/api/v1", // estimate's price list
		"REPO="+repoRoot(t),
		"demo="+filepath.Join(dir, "demo"),
		"OPENROUTER_API_KEY=sk-test",
	)
}

// exampleWorld is a folder holding every file the examples name, made once
// per run of the package with the tools themselves (makeExampleWorld) and
// shared by the tests that need it: they copy it and never write in it.
func exampleWorld(t *testing.T) string {
	t.Helper()
	world.once.Do(func() {
		world.err = errors.New("making it failed in the first test that needed it (see that test)")
		dir, err := packageTempDir("example-world-")
		if err != nil {
			world.err = err
			return
		}
		makeExampleWorld(t, dir) // a failure fails t here and leaves world.err set
		world.dir, world.err = dir, nil
	})
	if world.err != nil {
		t.Fatalf("the example world: %v", world.err)
	}
	return world.dir
}

// world is exampleWorld's folder, or why there is none.
var world struct {
	once sync.Once
	dir  string
	err  error
}

// makeExampleWorld fills dir with every file the examples name, made with
// the tools themselves: prompts, requests, outputs (some of the prompts
// done), compressed copies, and per-dataset folders.
func makeExampleWorld(t *testing.T, dir string) {
	t.Helper()
	srv := simtest.Start(t, quickSimConfig())
	router := sim.Default()
	router.ModelName = "moonshotai/kimi-k2.5"
	rsrv := simtest.Start(t, router)

	src, err := bundle.Prompts()
	if err != nil {
		t.Fatal(err)
	}
	all, err := readAllClose(src)
	if err != nil {
		t.Fatal(err)
	}
	var chat [][]byte // prompts with messages, which every backend takes
	for _, l := range bytes.Split(all, []byte("\n")) {
		if bytes.Contains(l, []byte(`"messages"`)) {
			chat = append(chat, l)
		}
	}
	if len(chat) < 40 {
		t.Fatalf("the bundled prompts hold %d with messages", len(chat))
	}
	lines := func(from, n int) []byte { return append(bytes.Join(chat[from:from+n], []byte("\n")), '\n') }
	write := func(name string, b []byte) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".zst") {
			b = zstdBytes(t, b)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(stdin []byte, name string, args ...string) []byte {
		t.Helper()
		code, out, stderr := runTool(t, 2*time.Minute, nil, bytes.NewReader(stdin), name, args...)
		if code != 0 {
			t.Fatalf("%s %s: exit %d\n%s", name, strings.Join(args, " "), code, stderr)
		}
		return out
	}
	prompts := lines(0, 12)
	for _, name := range []string{"prompts.jsonl", "p.jsonl", "tools.jsonl"} {
		write(name, prompts)
	}
	req := run(prompts, "tokenize-prompts", tokenizeArgs()...)
	write("req.jsonl", req)
	write("req.jsonl.zst", req)
	done := run(req, "generate", "--url", srv.URL, "--max-tokens", "64", "-q")
	half := bytes.SplitAfter(done, []byte("\n"))
	out := bytes.Join(half[:6], nil) // half done: the rest is what a resume does
	for _, name := range []string{"out.jsonl", "out.jsonl.zst", "big.jsonl.zst", "out-0.jsonl.zst", "out-1.jsonl.zst"} {
		write(name, out)
	}
	write("errors.jsonl", nil)
	// Requests with ids and messages, for the OpenAI backend.
	chatReq := func(from, n int) []byte { return run(lines(from, n), "tokenize-prompts", tokenizeArgs()...) }
	answers := run(chatReq(12, 4), "generate", "--backend", "openai", "--url", rsrv.URL+"/api/v1", "--model", "moonshotai/kimi-k2.5", "-q")
	write("openrouter.jsonl", answers)
	write("trial.jsonl", answers)
	// data/: datasets as files (GNU parallel examples) and as folders
	// (fanout.sh and the README's story).
	for i, name := range []string{"a", "b"} {
		write("data/"+name+".jsonl.zst", lines(16+2*i, 2))
		write("data/"+name+".jsonl", chatReq(16+2*i, 2))
	}
	for i, d := range []string{"chat", "code", "math", "tools", "agent", "writing", "qa", "translate", "sql", "science"} {
		// Real prompts rarely name their dataset: its folder does.
		p := withoutField(t, lines(20+2*i%20, 2), record.FieldDataset)
		write("data/"+d+"/prompts.jsonl.zst", p)
		todo := run(p, "tokenize-prompts", tokenizeArgs()...)
		write("data/"+d+"/todo.jsonl", todo)
		write("data/"+d+"/todo.jsonl.zst", todo)
	}
	write("data/chat/out.jsonl", withoutField(t, out, record.FieldDataset))
	// The README's demo folder and trial, as make demo leaves them.
	for _, d := range []string{"chat", "code", "math", "tools"} {
		write("demo/"+d+".jsonl", out)
	}
}

// withoutField is JSONL lines with field deleted from each.
func withoutField(t *testing.T, lines []byte, field string) []byte {
	t.Helper()
	var out []byte
	for _, l := range bytes.SplitAfter(lines, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		l, err := sjson.DeleteBytes(bytes.TrimSuffix(l, []byte("\n")), field)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, l...), '\n')
	}
	return out
}

func readAllClose(r interface {
	Read([]byte) (int, error)
	Close() error
}) ([]byte, error) {
	defer r.Close()
	var b bytes.Buffer
	_, err := b.ReadFrom(r)
	return b.Bytes(), err
}

func zstdBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := zstd.NewWriter(&out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
