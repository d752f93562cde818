package jsonl

import (
	"math/rand/v2"
	"testing"
)

// blockBytes fills block with bytes drawn mostly from digits and commas (so
// that many blocks pass intBlocks' checks), and for the first 256 calls
// with every byte value in every position.
func blockBytes(rng *rand.Rand, i int, block []byte) {
	for k := range block {
		switch {
		case i < 256:
			block[k] = byte(i + k)
		case rng.IntN(4) == 0:
			block[k] = ','
		case rng.IntN(64) == 0:
			block[k] = byte(rng.IntN(256))
		default:
			block[k] = '0' + byte(rng.IntN(10))
		}
	}
}

// TestBlockMasks checks the SSE2 masks against the masks computed byte by
// byte.
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
	rng := rand.New(rand.NewPCG(1, 2))
	block := make([]byte, 64)
	for i := range 20000 {
		blockBytes(rng, i, block)
		wd, wc, wz := reference(block)
		if d, c, z := blockMasksSSE2(&block[0]); d != wd || c != wc || z != wz {
			t.Fatalf("on %q: masks %x %x %x, want %x %x %x", block, d, c, z, wd, wc, wz)
		}
	}
}

// TestIntBlocksAVX2 checks the assembly loop against intBlocksMasks on runs
// of blocks that pass and fail each check (an empty element, a leading
// zero, 10 digits in a row, within a block and across two, other bytes),
// from every state a block may begin in.
func TestIntBlocksAVX2(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 64*6+50)
	crossed := 0
	for i := range 50000 {
		for k := 0; k < len(buf); k += 64 {
			blockBytes(rng, i, buf[k:min(k+64, len(buf))])
		}
		if i%3 == 0 { // a run of well-formed ids, as token arrays are
			for k := 0; k < len(buf); {
				k += copy(buf[k:], []byte{'1' + byte(rng.IntN(9))})
				for n := rng.IntN(7); n > 0 && k < len(buf); n-- {
					buf[k] = '0' + byte(rng.IntN(10))
					k++
				}
				if k < len(buf) {
					buf[k] = ','
					k++
				}
			}
		}
		b := buf[:rng.IntN(len(buf)+1)]
		start, run := uint64(rng.IntN(2))<<7, rng.IntN(10)
		wi, ws, wr, wc := intBlocksMasks(b, 0, start, run, 5)
		n, s, r, c := intBlocksAVX2(b, start, run, 5)
		if n != wi || s != ws || r != wr || c != wc {
			t.Fatalf("on %q (start %#x, run %d): crossed %d (start %#x, run %d, commas %d), want %d (%#x, %d, %d)", b, start, run, n, s, r, c, wi, ws, wr, wc)
		}
		crossed += n
	}
	if crossed < 64*20000 {
		t.Fatalf("%d blocks crossed: too few for the test to check the blocks that pass", crossed/64)
	}
}
