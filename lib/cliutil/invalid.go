package cliutil

import (
	"fmt"
	"sync"
)

// ShownInvalid is how many lines skipped as invalid a tool names on
// stderr; past them it says how many there were in all.
const ShownInvalid = 5

// InvalidNamer names the first ShownInvalid lines a tool skips as invalid
// (--skip-invalid, or tokstat, which never stops at one) in the house
// format, "FILE:LINE: why (counted as invalid, skipped)", and Done says
// how many there were when there were more. Safe for concurrent use: a
// reader and the workers after it may both skip lines.
type InvalidNamer struct {
	mu   sync.Mutex
	n    int64
	warn func(msg string)
}

// NewInvalidNamer names skipped lines through warn.
func NewInvalidNamer(warn func(msg string)) *InvalidNamer {
	return &InvalidNamer{warn: warn}
}

// Name counts one skipped line at pos ("FILE:LINE") and names it if it is
// among the first ShownInvalid.
func (v *InvalidNamer) Name(pos string, cause error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.n++
	if v.n <= ShownInvalid {
		v.warn(fmt.Sprintf("%s: %v (counted as invalid, skipped)", pos, cause))
	}
}

// Done says how many lines were skipped in all when some went unnamed.
func (v *InvalidNamer) Done() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.n > ShownInvalid {
		v.warn(fmt.Sprintf("%s in all (the first %d are named above)", Count(v.n, "invalid line"), ShownInvalid))
	}
}
