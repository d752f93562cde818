//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Process is the user and system time of the whole process (every
// thread's, the garbage collector's too); ok is false where it cannot be
// read.
func Process() (d time.Duration, ok bool) {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0, false
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), true
}
