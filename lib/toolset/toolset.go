// Package toolset lists the synthpipe tools in one place, for what handles
// them all alike: man pages, shell completion, the end-to-end tests.
package toolset

import (
	"io"

	"github.com/synthpipe/synthpipe/lib/budgetcut"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/deduperesume"
	"github.com/synthpipe/synthpipe/lib/estimate"
	"github.com/synthpipe/synthpipe/lib/generate"
	"github.com/synthpipe/synthpipe/lib/llmsim"
	"github.com/synthpipe/synthpipe/lib/tokenizeprompts"
	"github.com/synthpipe/synthpipe/lib/tokstat"
	"github.com/synthpipe/synthpipe/lib/totrain"
)

// Tool is one binary of the toolkit.
type Tool struct {
	Name   string
	NewApp func() *cliutil.App
	Main   func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// All returns every tool, in pipeline order.
func All() []Tool {
	return []Tool{
		{"tokenize-prompts", tokenizeprompts.NewApp, tokenizeprompts.Main},
		{"dedupe-resume", deduperesume.NewApp, deduperesume.Main},
		{"generate", generate.NewApp, generate.Main},
		{"budget-cut", budgetcut.NewApp, budgetcut.Main},
		{"tokstat", tokstat.NewApp, tokstat.Main},
		{"estimate", estimate.NewApp, estimate.Main},
		{"to-train", totrain.NewApp, totrain.Main},
		{"llm-sim", llmsim.NewApp, llmsim.Main},
	}
}
