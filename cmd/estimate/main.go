// Command estimate says what the rest of a job will cost, in time, tokens
// and money, on each backend it could run on.
package main

import (
	"os"

	"github.com/synthpipe/synthpipe/lib/estimate"
)

func main() { os.Exit(estimate.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
