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

// ByteSize is a size in bytes as help text writes it and ParseCount reads
// it back: in the largest binary unit that divides it, 64<<20 is "64Mi"
// and 1<<30 "1Gi"; a size no unit divides is a plain number.
func ByteSize(n int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"Ti", 40}, {"Gi", 30}, {"Mi", 20}, {"Ki", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// smallNumbers are the counts help prose writes in words.
var smallNumbers = [...]string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}

// Word is a count as help prose writes it: 5 is "five"; past ten, digits.
func Word(n int) string {
	if n >= 0 && n < len(smallNumbers) {
		return smallNumbers[n]
	}
	return strconv.Itoa(n)
}
