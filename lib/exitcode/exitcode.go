// Package exitcode defines the exit codes of the synthpipe tools and an error
// type that carries one. Any package may return such errors; lib/cliutil is
// the one place that turns errors into a process status.
package exitcode

import "fmt"

// Exit codes, after sysexits.h, so that scripts, xargs and cron can tell a bad
// input (fix the data) from a dead server (try again later). 255 is never
// used: GNU xargs stops the whole fan-out on it.
const (
	OK          = 0   // success, including a downstream reader that closed the pipe
	Failure     = 1   // an internal error: a bug, please report it
	Usage       = 64  // bad flags or arguments
	DataErr     = 65  // invalid input data (bad JSON, a record that breaks the contract)
	NoInput     = 66  // an input file is missing or unreadable
	CantCreate  = 73  // an output file cannot be created
	IOErr       = 74  // writing failed (disk full, I/O error)
	TempFail    = 75  // a temporary failure (server unreachable, rate limited): try again later
	NoPerm      = 77  // permission denied by a server (bad API key, no credits, moderation)
	HungUp      = 129 // SIGHUP (a closed terminal or ssh session), after flushing what was done
	Interrupted = 130 // SIGINT (Ctrl-C), after flushing what was done
	Terminated  = 143 // SIGTERM, after flushing what was done
)

// Error carries an exit code with its cause. The message is the cause's.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ExitCode returns the code.
func (e *Error) ExitCode() int { return e.Code }

// WithCode attaches an exit code to err (nil stays nil).
func WithCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

func coded(code int, format string, args []any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// Usagef is a usage error: exit 64.
func Usagef(format string, args ...any) error { return coded(Usage, format, args) }

// DataErrorf is an invalid-data error: exit 65.
func DataErrorf(format string, args ...any) error { return coded(DataErr, format, args) }

// NoInputf is a missing or unreadable input: exit 66.
func NoInputf(format string, args ...any) error { return coded(NoInput, format, args) }

// CantCreatef is an output that cannot be created: exit 73.
func CantCreatef(format string, args ...any) error { return coded(CantCreate, format, args) }

// IOErrorf is a failed write: exit 74.
func IOErrorf(format string, args ...any) error { return coded(IOErr, format, args) }

// TempFailf is a temporary failure worth retrying later: exit 75.
func TempFailf(format string, args ...any) error { return coded(TempFail, format, args) }

// NoPermf is a refusal by a server (bad key, no credits, moderation): exit 77.
func NoPermf(format string, args ...any) error { return coded(NoPerm, format, args) }
