// Command generate sends request records to inference servers and writes the
// answers as records.
package main

import (
	"os"

	"github.com/synthpipe/synthpipe/lib/generate"
)

func main() { os.Exit(generate.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
