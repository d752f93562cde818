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
	"sync"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/iostreams"
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

// Spec describes a tool once; NewApp turns it into a cli.App and keeps it
// beside it (App), where the man page generator reads it back, so help and
// man page cannot disagree.
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
	// FinishPipedInput marks a consumer at the end of a pipeline
	// (budget-cut, to-train, tokstat). Ctrl-C signals every stage at once;
	// the stages before it stop and close its input, generate after
	// writing the answers it drains. So on the first signal a consumer
	// that reads a pipe does not stop: it reads on until the input ends,
	// writes what came, and then exits 128+signal. A second signal stops
	// it at once. Reading regular files, it stops at once as every tool.
	FinishPipedInput bool
}

// finishPipedInputHelp ends the description of a Spec.FinishPipedInput tool.
const finishPipedInputHelp = `Signals. Ctrl-C signals every stage of a pipeline at once. Reading a pipe,
this tool then reads on until the stages before it have stopped and closed
it (generate writes the answers it drains first), writes what came, and
exits 130 (SIGINT), 143 (SIGTERM) or 129 (SIGHUP); a second signal stops it
at once. Reading files, it stops at once, after flushing whole records.`

// Version is the toolkit version printed by --version.
var Version = "0.1.0"

// App is a tool: the cli.App that parses its command line and runs it, and
// the Spec it was built from, which its man page, its completions and
// Run read.
type App struct {
	*cli.App
	Spec *Spec
}

// NewApp builds a fresh App from s with the settings every tool shares:
// usage errors returned (not printed to stdout), no os.Exit inside the
// library, no comma splitting of list flags (file names may hold commas).
func NewApp(s Spec) *App {
	if s.FinishPipedInput {
		s.Description = strings.TrimRight(s.Description, "\n") + "\n\n" + finishPipedInputHelp
	}
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
		CustomAppHelpTemplate:     helpTemplate(&s),
		ExitErrHandler:            func(*cli.Context, error) {},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return Usagef("%s (see --help)", longFlagDashes(err.Error()))
		},
	}
	return &App{App: app, Spec: &s}
}

// flagInMessage is a flag as Go's flag package names it in its errors: with
// one dash, whatever its length.
var flagInMessage = regexp.MustCompile(`(not defined: |for (?:flag )?)-([A-Za-z0-9][A-Za-z0-9-]+)`)

// longFlagDashes writes the long flags of a parser error with two dashes, as
// --help shows them and users type them ("-timeout" becomes "--timeout").
func longFlagDashes(msg string) string {
	return flagInMessage.ReplaceAllString(msg, "$1--$2")
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
// SIGINT, SIGTERM or SIGHUP into a cancelled context (or, for a consumer
// reading a pipe, into a status once its input ends: see
// Spec.FinishPipedInput), and prints any error once, prefixed with the
// tool's name.
func Main(app *App, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return Run(app, args, iostreams.System(stdin, stdout, stderr))
}

// flagParsing lets one run at a time parse its flags: urfave/cli writes to
// its package-wide --help and --version flags (cli.HelpFlag,
// cli.VersionFlag) as it parses, which races when a process runs tools
// side by side (the tests do; go test -race reports it). It is released
// once the flags are parsed (the App's Before), not held while the tool
// runs.
var flagParsing sync.Mutex

// Run is Main with streams whose terminal facts the caller gives: a test
// says "stdout is a terminal" with iostreams.Test and SetStdoutTTY. The tool
// finds them with Streams.
func Run(app *App, args []string, streams *iostreams.IOStreams) int {
	stdin, stderr := streams.In, streams.Err
	watched := &watchedWriter{w: streams.Out, terminal: streams.IsStdoutTTY()}
	streams = streams.WithOut(watched)
	app.Reader, app.Writer, app.ErrWriter = stdin, watched, stderr
	if err := checkFlagOrder(app.App, args); err != nil {
		return report(app.App, stderr, err)
	}
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	ctx, sigs := signalContext(context.WithValue(context.Background(), streamsKey{}, streams), stderr, app.Name, app.Spec.FinishPipedInput)
	defer sigs.stop()
	// The tool runs in a goroutine so that a second signal, or a tool that
	// outlives its grace period, ends Main with a status to return instead
	// of an os.Exit behind the caller's back; the process exits with it and
	// takes the goroutine along.
	ran := make(chan error, 1)
	flagParsing.Lock()
	parsed := sync.OnceFunc(flagParsing.Unlock)
	app.Before = func(*cli.Context) error { parsed(); return nil }
	go func() {
		err := app.RunContext(ctx, args)
		parsed() // --help, --version and usage errors end before Before
		ran <- err
	}()
	var err error
	select {
	case err = <-ran:
	case status := <-sigs.forced:
		select {
		case err = <-ran: // it had just returned: its own result stands
		default:
			return status
		}
	}
	if werr := watched.failed(); err == nil && werr != nil && !IsBrokenPipe(werr) {
		// Only what was printed unchecked gets here: the tools' own
		// writes return their errors.
		err = exitcode.WithCode(exitcode.IOErr, fmt.Errorf("write stdout: %w", unwrapPath(werr)))
	}
	if pending := sigs.deferred(); pending != nil && (err == nil || IsBrokenPipe(err)) {
		// A consumer read its input to the end after the signal: it
		// stopped because of the signal all the same.
		err = pending
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
	return report(app.App, stderr, err)
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

// streamsKey finds a run's *iostreams.IOStreams in its context.
type streamsKey struct{}

// Streams is the streams of the run c belongs to, with their terminal
// facts: those Run was given (stdout as the tool writes to it), or, for an
// app not started by Main or Run, facts read from the app's own streams.
func Streams(c *cli.Context) *iostreams.IOStreams {
	if c.Context != nil {
		if s, ok := c.Context.Value(streamsKey{}).(*iostreams.IOStreams); ok {
			return s
		}
	}
	return iostreams.System(c.App.Reader, c.App.Writer, c.App.ErrWriter)
}
