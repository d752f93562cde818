package jsonl

import (
	"math/rand/v2"
	"testing"
)

// TestBlockMasks checks both assembly paths (AVX2 where the CPU has it,
// SSE2 always) against the masks computed byte by byte, on bytes drawn
// mostly from digits and commas, and on every byte value.
func TestBlockMasks(t *testing.T) {
	reference := func(b []byte) (d, c, z uint64) {
		for k, x := range b[:64] {
			if x >= '0' && x <= '9' {
				d |= 1 << k
			}
			if x == ',' {
				c |= 1 << k
			}
			if x == '0' {
				z |= 1 << k
			}
		}
		return d, c, z
	}
	paths := map[string]func(*byte) (uint64, uint64, uint64){"SSE2": blockMasksSSE2}
	if hasAVX2 {
		paths["AVX2"] = blockMasksAVX2
	}
	rng := rand.New(rand.NewPCG(1, 2))
	block := make([]byte, 64)
	for i := range 20000 {
		for k := range block {
			switch {
			case i < 256:
				block[k] = byte(i + k) // every byte value, in every position
			case rng.IntN(4) == 0:
				block[k] = ','
			case rng.IntN(16) == 0:
				block[k] = byte(rng.IntN(256))
			default:
				block[k] = '0' + byte(rng.IntN(10))
			}
		}
		wd, wc, wz := reference(block)
		for name, masks := range paths {
			if d, c, z := masks(&block[0]); d != wd || c != wc || z != wz {
				t.Fatalf("%s on %q: masks %x %x %x, want %x %x %x", name, block, d, c, z, wd, wc, wz)
			}
		}
	}
}
