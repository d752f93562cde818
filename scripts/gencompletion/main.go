// Command gencompletion writes bash and zsh completion scripts for every
// synthpipe tool: gencompletion bash|zsh DIR. `make install` runs it.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/toolset"
)

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "bash" && os.Args[1] != "zsh") {
		fmt.Fprintln(os.Stderr, "usage: gencompletion bash|zsh DIR")
		os.Exit(64)
	}
	shell, dir := os.Args[1], os.Args[2]
	for _, t := range toolset.All() {
		app := t.NewApp()
		name, text := t.Name, cliutil.BashCompletion(app)
		if shell == "zsh" {
			name, text = "_"+t.Name, cliutil.ZshCompletion(app)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gencompletion:", err)
			os.Exit(74)
		}
	}
}
