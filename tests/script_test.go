// Package tests runs the synthpipe tools end to end: each testdata/script/*.txtar
// is a shell-like script that runs the real commands as processes (stdin,
// stdout, stderr, exit status) and checks what they did.
package tests

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/synthpipe/synthpipe/lib/toolset"
)

func TestMain(m *testing.M) {
	cmds := map[string]func(){}
	for _, t := range toolset.All() {
		cmds[t.Name] = func() { os.Exit(t.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
	}
	for name, f := range helperCommands {
		cmds[name] = f
	}
	testscript.Main(suite{m}, cmds)
}

// packageTemp is the folder of what the tests make once and share
// (packageTempDir), removed when they have all run.
var packageTemp struct {
	mu  sync.Mutex
	dir string
}

// packageTempDir makes a new folder under packageTemp: a fixture made once
// and shared by several tests, which outlives the test that made it.
func packageTempDir(pattern string) (string, error) {
	packageTemp.mu.Lock()
	defer packageTemp.mu.Unlock()
	if packageTemp.dir == "" {
		dir, err := os.MkdirTemp("", "synthpipe-tests-")
		if err != nil {
			return "", err
		}
		packageTemp.dir = dir
	}
	return os.MkdirTemp(packageTemp.dir, pattern)
}

// parallelTests is how many tests run at once (at least one per core) when
// -test.parallel is not given: most of their time is spent waiting on the
// tools' processes, simulated servers, pipes and daemons, not on a core, so
// that the default of one per core leaves the cores idle most of the time.
// More would crowd the waits that are bounded (a server's start, a run's
// end) on a loaded machine.
const parallelTests = 4

// suite runs the tests (the test binary runs as one of the tools
// otherwise): parallelTests at once unless -test.parallel says otherwise;
// then it removes packageTemp.
type suite struct{ m *testing.M }

func (s suite) Run() int {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(max(parallelTests, runtime.GOMAXPROCS(0))))
	}
	code := s.m.Run()
	packageTemp.mu.Lock()
	defer packageTemp.mu.Unlock()
	if packageTemp.dir != "" {
		os.RemoveAll(packageTemp.dir)
	}
	return code
}

func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup:               setupEnv,
		Cmds:                scriptCommands,
	})
}
