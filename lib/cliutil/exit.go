// Package cliutil holds what every synthpipe tool shares at its edge: the one
// mapping from errors to exit codes, the common flags, signal handling, help
// and man page rendering.
package cliutil

import (
	"context"
	"errors"
	"io/fs"
	"syscall"

	"github.com/synthpipe/synthpipe/lib/exitcode"
)

// ExitStatus documents one exit code for --help and the man pages.
type ExitStatus struct {
	Code    int
	Meaning string
}

// CommonExitStatuses are the codes every tool may return.
var CommonExitStatuses = []ExitStatus{
	{exitcode.OK, "success; also when a downstream reader (head, budget-cut) closed the pipe"},
	{exitcode.Failure, "internal error (a bug: please report it)"},
	{exitcode.Usage, "usage error: unknown flag, bad flag value, flag after a file argument, an output that is also an input"},
	{exitcode.DataErr, "invalid input data: the message names the file and line"},
	{exitcode.NoInput, "an input file does not exist or cannot be read"},
	{exitcode.CantCreate, "an output file cannot be created"},
	{exitcode.IOErr, "writing the output failed (disk full, I/O error); only whole records were written"},
	{exitcode.HungUp, "hung up (SIGHUP: a closed terminal or ssh session), after flushing what was done, as for SIGTERM"},
	{exitcode.Interrupted, "interrupted by SIGINT, after flushing what was done"},
	{exitcode.Terminated, "terminated by SIGTERM, after flushing what was done"},
}

// Usagef is a usage error: exit 64.
func Usagef(format string, args ...any) error { return exitcode.Usagef(format, args...) }

// SignalError says the run stopped because of a signal; it maps to 128+signal.
type SignalError struct{ Signal syscall.Signal }

func (e *SignalError) Error() string { return "stopped by " + signalName(e.Signal) }

// ExitCode maps a signal to 128+signal, as shells do.
func (e *SignalError) ExitCode() int { return 128 + int(e.Signal) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return s.String()
}

// IsBrokenPipe reports whether err comes from writing to a closed pipe, which
// for a filter means "the reader has all it wants": not a failure.
func IsBrokenPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE)
}

// ExitCode maps err to the process exit status. It is the only place that
// does, so that every tool answers the same way.
func ExitCode(err error) int {
	if err == nil || IsBrokenPipe(err) {
		return exitcode.OK
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		if c := coded.ExitCode(); c > 0 && c < 255 {
			return c
		}
		return exitcode.Failure
	}
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EIO), errors.Is(err, syscall.EDQUOT), errors.Is(err, syscall.EFBIG):
		return exitcode.IOErr
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		return exitcode.NoInput
	case errors.Is(err, context.Canceled):
		return exitcode.Interrupted
	}
	return exitcode.Failure
}
