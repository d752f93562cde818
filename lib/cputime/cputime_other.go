//go:build !unix

package cputime

import "time"

// Process is not measured on this platform.
func Process() (d time.Duration, ok bool) { return 0, false }
