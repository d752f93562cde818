package jsonl

// blockScan: blockMasks exists (in assembly) on this architecture.
const blockScan = true

// blockMasks classifies the 64 bytes at p: bit k of each mask is set when
// byte k is a digit, a ',' or a '0'.
//
//go:noescape
func blockMasks(p *byte) (digits, commas, zeros uint64)
