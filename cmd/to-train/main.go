// Command to-train turns generated records into training data.
package main

import (
	"os"

	"github.com/synthpipe/synthpipe/lib/totrain"
)

func main() { os.Exit(totrain.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
