//go:build unix

package tokenizer

import (
	"syscall"
	"time"
)

// processCPUTime is the user+system time of the whole process, so that the
// benchmarks can report speed by CPU time, which a shared machine disturbs
// far less than wall time.
func processCPUTime() (time.Duration, bool) {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0, false
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), true
}
