// Command tokstat counts the records and tokens of a JSONL dataset and
// checks its health.
package main

import (
	"os"

	"github.com/synthpipe/synthpipe/lib/tokstat"
)

func main() { os.Exit(tokstat.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
