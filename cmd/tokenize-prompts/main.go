// Command tokenize-prompts renders prompts with a chat template and writes
// their token ids.
package main

import (
	"os"

	"github.com/synthpipe/synthpipe/lib/tokenizeprompts"
)

func main() { os.Exit(tokenizeprompts.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
