// Command budget-cut passes JSONL records until a token budget is reached.
package main

import (
	"os"

	"github.com/synthpipe/synthpipe/lib/budgetcut"
)

func main() { os.Exit(budgetcut.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
