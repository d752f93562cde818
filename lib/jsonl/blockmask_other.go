//go:build !amd64

package jsonl

// blockScan: no intBlocks on this architecture; intRun uses its 16-byte
// path alone.
const blockScan = false

const hasAVX2 = false

func blockMasksSSE2(p *byte) (digits, commas, zeros uint64) {
	panic("blockMasksSSE2: not on this architecture")
}

func intBlocksAVX2(b []byte, start uint64, run, commas int) (n int, nstart uint64, nrun, ncommas int) {
	panic("intBlocksAVX2: not on this architecture")
}
