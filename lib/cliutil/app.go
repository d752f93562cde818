package cliutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/exitcode"
)

// Example is one worked example for --help and the man page.
type Example struct {
	Comment string // what it does, one line
	Command string // the shell command
}

// EnvVar documents an environment variable a tool reads.
type EnvVar struct {
	Name    string
	Meaning string
}

// Spec describes a tool once; NewApp turns it into a cli.App and the man page
// generator reads it back, so help and man page cannot disagree.
type Spec struct {
	Name        string
	Usage       string // one line for NAME
	ArgsUsage   string // e.g. "[FILE...]"
	Description string // paragraphs separated by blank lines
	Flags       []cli.Flag
	Examples    []Example
	Environment []EnvVar     // only what is no flag's: EnvVars adds the flags'
	ExitCodes   []ExitStatus // tool-specific codes, added to CommonExitStatuses
	SeeAlso     []string     // e.g. "tokstat(1)"
	Action      cli.ActionFunc
}

const specKey = "synthpipe.spec"

// Version is the toolkit version printed by --version.
var Version = "0.1.0"

// NewApp builds a fresh cli.App from s with the settings every tool shares:
// usage errors returned (not printed to stdout), no os.Exit inside the
// library, no comma splitting of list flags (file names may hold commas).
func NewApp(s Spec) *cli.App {
	app := &cli.App{
		Name:                      s.Name,
		Usage:                     s.Usage,
		ArgsUsage:                 s.ArgsUsage,
		Description:               s.Description,
		Flags:                     s.Flags,
		Action:                    s.Action,
		Version:                   Version,
		HideHelpCommand:           true,
		DisableSliceFlagSeparator: true,
		UseShortOptionHandling:    false,
		Metadata:                  map[string]any{specKey: &s},
		CustomAppHelpTemplate:     helpTemplate(&s),
		ExitErrHandler:            func(*cli.Context, error) {},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return Usagef("%s (see --help)", longFlagDashes(err.Error()))
		},
	}
	return app
}

// flagInMessage is a flag as Go's flag package names it in its errors: with
// one dash, whatever its length.
var flagInMessage = regexp.MustCompile(`(not defined: |for (?:flag )?)-([A-Za-z0-9][A-Za-z0-9-]+)`)

// longFlagDashes writes the long flags of a parser error with two dashes, as
// --help shows them and users type them ("-timeout" becomes "--timeout").
func longFlagDashes(msg string) string {
	return flagInMessage.ReplaceAllString(msg, "$1--$2")
}

// SpecOf returns the Spec an app was built from, or nil.
func SpecOf(app *cli.App) *Spec {
	s, _ := app.Metadata[specKey].(*Spec)
	return s
}

// ExitStatuses lists the codes a tool documents: the common ones and its own,
// in numeric order.
func (s *Spec) ExitStatuses() []ExitStatus {
	all := append([]ExitStatus(nil), CommonExitStatuses...)
	for _, e := range s.ExitCodes {
		replaced := false
		for i := range all {
			if all[i].Code == e.Code {
				all[i], replaced = e, true
			}
		}
		if !replaced {
			all = append(all, e)
		}
	}
	for i := 1; i < len(all); i++ {
		for j := i; j > 0 && all[j].Code < all[j-1].Code; j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	return all
}

func helpTemplate(s *Spec) string {
	var b strings.Builder
	b.WriteString(`NAME:
   {{.Name}} - {{.Usage}}

USAGE:
   {{.Name}} [options] {{.ArgsUsage}}
{{if .Description}}
DESCRIPTION:
{{.Description | indentBlock}}
{{end}}
OPTIONS:{{range .VisibleFlags}}
   {{.}}{{end}}
`)
	if env := s.EnvVars(); len(env) > 0 {
		b.WriteString("\nENVIRONMENT:\n")
		width := 0
		for _, e := range env {
			width = max(width, len(e.Name))
		}
		for _, e := range env {
			fmt.Fprintf(&b, "   %-*s  %s\n", width, e.Name, escapeTemplate(e.Meaning))
		}
	}
	b.WriteString("\nEXIT STATUS:\n")
	for _, e := range s.ExitStatuses() {
		fmt.Fprintf(&b, "   %-4d %s\n", e.Code, e.Meaning)
	}
	if len(s.Examples) > 0 {
		b.WriteString("\nEXAMPLES:\n")
		for _, ex := range s.Examples {
			fmt.Fprintf(&b, "   # %s\n   %s\n\n", escapeTemplate(ex.Comment), escapeTemplate(ex.Command))
		}
	}
	if len(s.SeeAlso) > 0 {
		fmt.Fprintf(&b, "SEE ALSO:\n   %s\n", strings.Join(s.SeeAlso, ", "))
	}
	return b.String()
}

// escapeTemplate keeps text that holds "{{" from being read as template code.
func escapeTemplate(s string) string {
	return strings.ReplaceAll(s, "{{", `{{"{{"}}`)
}

func init() {
	cli.FlagStringer = flagHelp
	cli.HelpPrinter = func(w io.Writer, templ string, data any) {
		funcs := map[string]any{"indentBlock": indentBlock}
		cli.HelpPrinterCustom(w, templ, data, funcs)
	}
}

func indentBlock(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "   " + l
		}
	}
	return strings.Join(lines, "\n")
}

// Main runs app with the given streams and returns the exit status. It is
// the whole of every cmd/<tool>/main.go:
//
//	func main() { os.Exit(budgetcut.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
//
// It rejects flags placed after file arguments, turns SIGPIPE into an EPIPE
// error (so a closed downstream ends the run quietly with 0), turns the first
// SIGINT/SIGTERM into a cancelled context, and prints any error once, prefixed
// with the tool's name.
func Main(app *cli.App, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	watched := &watchedWriter{w: stdout}
	app.Reader, app.Writer, app.ErrWriter = stdin, watched, stderr
	if err := checkFlagOrder(app, args); err != nil {
		return report(app, stderr, err)
	}
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signalContext(context.Background(), stderr, app.Name)
	defer stop()
	err := app.RunContext(ctx, args)
	if werr := watched.failed(); err == nil && werr != nil && !IsBrokenPipe(werr) {
		// Only what was printed unchecked gets here: the tools' own
		// writes return their errors.
		err = exitcode.WithCode(exitcode.IOErr, fmt.Errorf("write stdout: %w", unwrapPath(werr)))
	}
	// A signalled pipeline stops from both ends: a tool that was told to stop
	// may then meet the pipe its neighbour closed. It stopped because of the
	// signal, not because its reader had all it wanted, and says so in its
	// status. (A tool that finished its work cleanly keeps its own status:
	// llm-sim, say, stops gracefully on SIGTERM and exits 0.)
	var sig *SignalError
	if errors.As(context.Cause(ctx), &sig) && IsBrokenPipe(err) {
		err = sig
	}
	return report(app, stderr, err)
}

func report(app *cli.App, stderr io.Writer, err error) int {
	code := ExitCode(err)
	if err != nil && code != exitcode.OK {
		msg := err.Error()
		if !strings.HasPrefix(msg, app.Name+": ") {
			msg = app.Name + ": " + msg
		}
		fmt.Fprintln(stderr, msg)
	}
	return code
}

// checkFlagOrder refuses "tool FILE --flag": urfave/cli would take --flag for
// a file name, and a user would wonder why the flag did nothing.
func checkFlagOrder(app *cli.App, args []string) error {
	takesValue := map[string]bool{}
	for _, f := range app.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	sawFile := ""
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return nil
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			if sawFile == "" {
				sawFile = a
			}
			continue
		}
		if name := strings.TrimLeft(a, "-"); !strings.Contains(name, "=") && takesValue[name] {
			i++ // the flag's value, even when it looks like a file
		}
		if sawFile != "" {
			return Usagef("flag %s must come before file arguments (it follows %q; see --help)", a, sawFile)
		}
	}
	return nil
}

// signalGrace is how long a tool may take to flush and return after the first
// signal before Main exits anyway (it may be blocked reading a quiet pipe).
const signalGrace = 3 * time.Second

// signalContext cancels the returned context, with a *SignalError as cause,
// on the first SIGINT or SIGTERM. A second signal, or a tool that does not
// return within signalGrace, exits at once with 128+signal: the readers flush
// output before every blocking read, so nothing finished is lost.
func signalContext(parent context.Context, stderr io.Writer, name string) (context.Context, func()) {
	grace := new(atomic.Int64)
	grace.Store(int64(signalGrace))
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, graceKey{}, grace))
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		var first syscall.Signal
		for {
			select {
			case <-done:
				return
			case s := <-ch:
				sig := s.(syscall.Signal)
				if first != 0 {
					fmt.Fprintf(stderr, "%s: second %s: stopping now\n", name, signalName(sig))
					os.Exit(128 + int(first))
				}
				first = sig
				cancel(&SignalError{Signal: sig})
				time.AfterFunc(time.Duration(grace.Load()), func() {
					select {
					case <-done:
					default:
						os.Exit(128 + int(first))
					}
				})
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// graceKey finds the grace period of Main's signal handling in a context.
type graceKey struct{}

// SetSignalGrace changes how long Main waits, after the first signal, for the
// tool to return before exiting anyway. A tool that drains work in flight on
// a signal (generate --drain-timeout) sets it to cover the drain. It does
// nothing for a context that did not come from Main.
func SetSignalGrace(ctx context.Context, d time.Duration) {
	if g, ok := ctx.Value(graceKey{}).(*atomic.Int64); ok {
		g.Store(int64(d))
	}
}

// Interrupted returns the signal error that cancelled ctx, or nil. Loops call
// it between records.
func Interrupted(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	return ctx.Err()
}

// unwrapPath drops a *PathError's "write /dev/stdout:" so that a message names
// the stream once.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
