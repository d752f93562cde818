// Package tests runs the synthpipe tools end to end: each testdata/script/*.txtar
// is a shell-like script that runs the real commands as processes (stdin,
// stdout, stderr, exit status) and checks what they did.
package tests

import (
	"os"
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
	testscript.Main(m, cmds)
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup:               setupEnv,
		Cmds:                scriptCommands,
	})
}
