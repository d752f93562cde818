// Command llm-sim serves a simulated SGLang / OpenAI-compatible LLM server.
package main

import (
	"os"

	"github.com/synthpipe/synthpipe/lib/llmsim"
)

func main() { os.Exit(llmsim.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
