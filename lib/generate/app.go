// Package generate is the generate tool: it sends request records to one or
// more inference servers (SGLang's native API or OpenAI-compatible chat
// completions), keeps the servers busy without flooding them, retries what is
// worth retrying, and writes each result record as it completes, with exact
// token accounting and budgets.
//
// The command: app.go and help.go (its help, with the tuning constants
// read from the code), flags.go binds every flag to a field of the config
// (the sampling and server flags are lib/flaggroup's, shared with the
// other tools that take them), config.go and checks.go check what involves
// several flags, run.go wires a run in named steps: it reads what the run
// needs first (the --already files, provenance.go; the price, price.go; the
// API key, keycheck.go; the records expected, countrecords.go), translates
// the config into an engine.Config and runs lib/engine, the request engine
// (scheduler, dispatch, workers, budgets, retries, records). What a run
// shows (the progress line, --status-file, --metrics-listen) is
// lib/runview's, reading only the engine's Snapshot.
package generate

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/iostreams"
	"github.com/synthpipe/synthpipe/lib/runview"
)

// Environment variables holding API keys, in the order they are tried.
var apiKeyEnv = []string{"OPENROUTER_API_KEY", "OPENAI_API_KEY"}

// NewApp returns a fresh generate command.
func NewApp() *cliutil.App { return newApp(defaultOptions) }

// newApp is NewApp with options no flag sets (tests retry sooner).
func newApp(opt options) *cliutil.App {
	cfg := new(config)
	cfg.Backoff, cfg.Tuning = opt.firstBackoff, opt.tuning
	return cliutil.NewApp(cliutil.Spec{
		Name:        "generate",
		Usage:       "send request records to inference servers and write the answers as records",
		ArgsUsage:   "[FILE...]",
		Description: description(),
		Flags:       flags(cfg),
		Environment: environment(),
		ExitCodes:   exitCodes(),
		Examples:    examples(),
		SeeAlso:     []string{"budget-cut(1)", "dedupe-resume(1)", "llm-sim(1)", "synthpipe-records(7)", "synthpipe-status(7)"},
		Action:      func(c *cli.Context) error { return run(c, cfg) },
	})
}

// Main runs generate and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return mainWith(defaultOptions, args, stdin, stdout, stderr)
}

// mainWith is Main with options no flag sets (tests retry sooner).
func mainWith(opt options, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if refuseKeyFlag(args, stderr) {
		return exitcode.Usage
	}
	warnURLPassword(args, stderr)
	app := newApp(opt)
	// Every line generate prints, the signal messages included, goes
	// through the console, which keeps the live bar off them; the facts
	// are those of stderr itself.
	streams := iostreams.System(stdin, stdout, stderr)
	return cliutil.Run(app, args, streams.WithErr(runview.NewConsole(stderr)))
}

// warnURLPassword warns when a URL on the command line carries a password
// (http://user:pass@host): it is sent as Basic authentication and never
// printed, but ps and the shell history show the command line. The
// environment ($SYNTHPIPE_URL) keeps it to the user.
func warnURLPassword(args []string, stderr io.Writer) {
	for _, a := range args[1:] {
		_, v, _ := strings.Cut(a, "=")
		if !strings.Contains(a, "=") {
			v = a
		}
		if u, err := url.Parse(v); err == nil && u.User != nil && u.Host != "" {
			if _, ok := u.User.Password(); ok {
				fmt.Fprintf(stderr, "generate: warning: %s carries a password on the command line, where ps and shell history show it; set %s instead\n",
					backend.WithoutUserinfo(v), cliutil.EnvName(flagURL))
				return
			}
		}
	}
}

// refuseKeyFlag stops "--api-key KEY" with a hint, before the flag parser
// would echo it in a generic error: a key typed on the command line is
// already in the shell history, so the message must teach the safe way.
func refuseKeyFlag(args []string, stderr io.Writer) bool {
	for _, a := range args[1:] {
		if a == "--" {
			return false
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "api-key" || name == "key") {
			fmt.Fprintln(stderr, "generate: there is no --api-key flag: a key on the command line shows in ps and shell history;"+
				" set OPENROUTER_API_KEY or OPENAI_API_KEY in the environment, or use --api-key-file FILE")
			return true
		}
	}
	return false
}
