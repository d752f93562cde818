// Package cputime reads the CPU time the process has used, so that
// benchmarks can report speed per CPU-second, which a shared machine
// disturbs far less than wall time.
package cputime
