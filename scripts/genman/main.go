// Command genman writes the synthpipe man pages into a folder: one page of
// section 1 per tool, rendered from its CLI definition, and the section-7
// record format page copied from lib/toolset. `make man` runs it; a test
// fails when the committed pages are stale.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/synthpipe/synthpipe/lib/toolset"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: genman DIR")
		os.Exit(64)
	}
	for name, page := range toolset.ManPages() {
		if err := os.WriteFile(filepath.Join(os.Args[1], name), page, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "genman:", err)
			os.Exit(74)
		}
	}
}
