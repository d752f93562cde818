package cliutil

import (
	"fmt"
	"strconv"
	"strings"
	"text/template"
)

// FillHelp fills the {{.Name}} actions of a tool's help text with values,
// so that help prose that states a tuning constant reads it from the code
// that applies it. The text and the values are the tool's own: an error is
// a bug, and panics.
func FillHelp(tool, text string, values any) string {
	var b strings.Builder
	if err := template.Must(template.New(tool).Option("missingkey=error").Parse(text)).Execute(&b, values); err != nil {
		panic(fmt.Sprintf("%s: help: %v", tool, err))
	}
	return b.String()
}

// Percent is a share as help text writes it: 0.1 is "10%".
func Percent(share float64) string {
	return strconv.FormatFloat(share*100, 'f', -1, 64) + "%"
}
