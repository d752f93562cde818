package jsonl

import "golang.org/x/sys/cpu"

// blockScan: blockMasks exists (in assembly) on this architecture.
const blockScan = true

// hasAVX2: the CPU has AVX2, for blockMasksAVX2.
var hasAVX2 = cpu.X86.HasAVX2

// blockMasks classifies the 64 bytes at p: bit k of each mask is set when
// byte k is a digit, a ',' or a '0'. It is the assembly function for the
// CPU, called through this variable rather than a Go function that would
// choose (which the compiler does not inline: a second call per block).
var blockMasks = blockMasksSSE2

func init() {
	if hasAVX2 {
		blockMasks = blockMasksAVX2
	}
}

// blockMasksSSE2 is blockMasks with SSE2, 16 bytes at a time.
//
//go:noescape
func blockMasksSSE2(p *byte) (digits, commas, zeros uint64)

// blockMasksAVX2 is blockMasks with AVX2, 32 bytes at a time.
//
//go:noescape
func blockMasksAVX2(p *byte) (digits, commas, zeros uint64)
