package jsonl

import "golang.org/x/sys/cpu"

// blockScan: intBlocks exists (in assembly) on this architecture.
const blockScan = true

// hasAVX2: the CPU has AVX2 (and POPCNT, which every CPU with AVX2 has), for
// intBlocksAVX2.
var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasPOPCNT

// blockMasksSSE2 classifies the 64 bytes at p with SSE2, 16 bytes at a
// time: bit k of each mask is set when byte k is a digit, a ',' or a '0'.
//
//go:noescape
func blockMasksSSE2(p *byte) (digits, commas, zeros uint64)

// intBlocksAVX2 is intBlocksMasks on b with AVX2, in assembly: it returns
// the bytes crossed, and start, run and commas after them.
//
//go:noescape
func intBlocksAVX2(b []byte, start uint64, run, commas int) (n int, nstart uint64, nrun, ncommas int)
