//go:build !unix

package conversation

// processCPU is not measured here: the benchmarks report 0 CPU time.
func processCPU() int64 { return 0 }
