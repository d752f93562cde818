package cliutil

import (
	"fmt"
	"strconv"
	"strings"
	"text/template"

	"github.com/urfave/cli/v2"
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

// Unsaid returns the phrases a help text does not say, with its white
// space folded so that a phrase may cross the text's line breaks, and
// names a template action left unfilled as one more. The tests that hold
// each tool's help to the constants of its code use it.
func Unsaid(help string, phrases ...string) []string {
	help = strings.Join(strings.Fields(help), " ")
	var missing []string
	for _, p := range phrases {
		if !strings.Contains(help, p) {
			missing = append(missing, p)
		}
	}
	if i := strings.Index(help, "{{"); i >= 0 {
		missing = append(missing, "(a template action left unfilled: "+help[i:min(len(help), i+40)]+")")
	}
	return missing
}

// FlagHelp is the help line of the flag named name among flags, as --help
// prints it (usage, default and environment), or "" when none has that name.
func FlagHelp(flags []cli.Flag, name string) string {
	for _, f := range flags {
		if f.Names()[0] == name {
			return fmt.Sprint(f)
		}
	}
	return ""
}
