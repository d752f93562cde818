//go:build unix

package conversation

import "syscall"

// processCPU is the CPU time (user and system, every thread's: the
// garbage collector's too) the process has used, in nanoseconds.
func processCPU() int64 {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return u.Utime.Nano() + u.Stime.Nano()
}
