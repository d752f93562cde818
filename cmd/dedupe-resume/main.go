// Command dedupe-resume drops JSONL records that are already done or already
// seen, so that a resumed pipeline does only the work that is left.
package main

import (
	"os"

	"github.com/synthpipe/synthpipe/lib/deduperesume"
)

func main() { os.Exit(deduperesume.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
