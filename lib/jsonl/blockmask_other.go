//go:build !amd64

package jsonl

// blockScan: no blockMasks on this architecture; intRun uses its 16-byte
// path alone.
const blockScan = false

func blockMasks(p *byte) (digits, commas, zeros uint64) {
	panic("blockMasks: not on this architecture")
}
