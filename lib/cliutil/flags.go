package cliutil

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// Names of the flags that mean the same in every tool.
const (
	FlagIDPath      = "id-path"
	FlagQuiet       = "quiet"
	FlagMaxLine     = "max-line"
	FlagSkipInvalid = "skip-invalid"
)

// EnvVars is a flag's EnvVars: the one variable, EnvName(flag), that sets it.
func EnvVars(flag string) []string { return []string{EnvName(flag)} }

// EnvName is the environment variable that sets a flag: SYNTHPIPE_<FLAG>.
func EnvName(flag string) string {
	b := []byte("SYNTHPIPE_")
	for i := 0; i < len(flag); i++ {
		c := flag[i]
		switch {
		case c == '-':
			c = '_'
		case c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
		}
		b = append(b, c)
	}
	return string(b)
}

// IDPathFlag is --id-path: where a record's id is.
func IDPathFlag() cli.Flag {
	return &cli.StringFlag{Name: FlagIDPath, Value: record.FieldID, EnvVars: []string{EnvName(FlagIDPath)},
		Usage: "gjson `PATH` of each record's unique string id"}
}

// QuietFlag is -q/--quiet: no summary on stderr.
func QuietFlag() cli.Flag {
	return &cli.BoolFlag{Name: FlagQuiet, Aliases: []string{"q"}, EnvVars: []string{EnvName(FlagQuiet)},
		Usage: "print no summary on stderr (errors and warnings still are)"}
}

// MaxLineFlag is --max-line: the longest line read; its default and its
// cap are jsonl's.
func MaxLineFlag() cli.Flag {
	return &cli.StringFlag{Name: FlagMaxLine, Value: ByteSize(jsonl.DefaultMaxLine), EnvVars: []string{EnvName(FlagMaxLine)},
		Usage: "longest input line accepted, in bytes (`SIZE`: " + ByteSize(jsonl.DefaultMaxLine) + ", 256Mi, " + ByteSize(jsonl.MaxLineLimit) + " at most)"}
}

// SkipInvalidFlag is --skip-invalid: count and skip bad lines.
func SkipInvalidFlag() cli.Flag {
	return &cli.BoolFlag{Name: FlagSkipInvalid, EnvVars: []string{EnvName(FlagSkipInvalid)},
		Usage: "count and skip lines that are not valid records instead of stopping with exit 65"}
}

// InputOptions builds the reader options shared by every tool from its flags:
// --max-line, --skip-invalid, warnings to stderr prefixed with the tool name,
// and reading that stops on the first signal (unless the tool is a consumer
// reading a pipe: see Spec.FinishPipedInput).
func InputOptions(c *cli.Context) (jsonl.Options, error) {
	finishPipedInput(c)
	opt := jsonl.Options{
		MaxLineFlag: "--" + FlagMaxLine,
		SkipInvalid: c.Bool(FlagSkipInvalid),
		Warn:        Warner(c),
		Context:     c.Context,
	}
	if s := c.String(FlagMaxLine); s != "" {
		n, err := ParseCount(s)
		if err != nil {
			// ParseCount's hints are token counts (250k, 10M); this is bytes.
			return opt, Usagef("--%s %q: not a size in bytes (try %s, 256Mi or %s)", FlagMaxLine, s, ByteSize(jsonl.DefaultMaxLine), ByteSize(jsonl.MaxLineLimit))
		}
		if n < 1 || n > jsonl.MaxLineLimit {
			return opt, Usagef("--%s %s: must be between 1 and %s", FlagMaxLine, s, ByteSize(jsonl.MaxLineLimit))
		}
		opt.MaxLine = int(n)
	}
	return opt, nil
}

// Warner returns a function that prints a note on stderr, prefixed with the
// tool's name. Warnings show even with --quiet: they are about the data.
func Warner(c *cli.Context) func(string) {
	w, name := c.App.ErrWriter, c.App.Name
	return func(msg string) { Notef(w, name, "%s", msg) }
}

// Notef prints "tool: message" on w.
func Notef(w io.Writer, tool, format string, args ...any) {
	fmt.Fprintf(w, "%s: %s\n", tool, fmt.Sprintf(format, args...))
}
