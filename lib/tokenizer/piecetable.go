package tokenizer

import (
	"hash/maphash"
	"math/bits"
)

// pieceTable maps the raw bytes of a vocabulary token to its id, as a
// map[string]int would, for the vocabulary of one model: an
// open-addressing table with linear probing whose slots hold ids only, the
// key of a slot being its id's entry in the model's tokenBytes. Every run
// that tokenizes builds one for the whole vocabulary (163,840 entries for
// Kimi-K2.5) before it encodes anything, which takes a Go map three times
// as long: the map stores a copy of each key and fills ten times the
// memory.
type pieceTable struct {
	tokens []string // the model's tokenBytes, shared
	slots  []uint32 // id+1; 0 marks an empty slot
	shift  uint
	count  int
	seed   maphash.Seed
}

// newPieceTable makes a table for up to capacity ids of tokens without
// growing (it grows past that).
func newPieceTable(tokens []string, capacity int) *pieceTable {
	size := 1 << bits.Len(uint(2*capacity+1)) // at most half full
	return &pieceTable{tokens: tokens, slots: make([]uint32, size),
		shift: uint(64 - bits.Len(uint(size-1))), seed: maphash.MakeSeed()}
}

func (t *pieceTable) index(hash uint64) int {
	return int((hash * 0x9E3779B97F4A7C15) >> t.shift)
}

// put maps tokens[id] to id, replacing the id it mapped to before.
func (t *pieceTable) put(id int) {
	if 2*(t.count+1) > len(t.slots) {
		t.grow()
	}
	piece := t.tokens[id]
	mask := len(t.slots) - 1
	for i := t.index(maphash.String(t.seed, piece)); ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			t.slots[i] = uint32(id) + 1
			t.count++
			return
		}
		if t.tokens[s-1] == piece {
			t.slots[i] = uint32(id) + 1
			return
		}
	}
}

// get returns the id that piece maps to.
func (t *pieceTable) get(piece string) (int, bool) {
	mask := len(t.slots) - 1
	for i := t.index(maphash.String(t.seed, piece)); ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if t.tokens[s-1] == piece {
			return int(s - 1), true
		}
	}
}

// getBytes is get for a piece held in a byte slice, which it does not
// copy.
func (t *pieceTable) getBytes(piece []byte) (int, bool) {
	mask := len(t.slots) - 1
	for i := t.index(maphash.Bytes(t.seed, piece)); ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if t.tokens[s-1] == string(piece) {
			return int(s - 1), true
		}
	}
}

// len is the number of distinct pieces mapped.
func (t *pieceTable) len() int { return t.count }

func (t *pieceTable) grow() {
	bigger := newPieceTable(t.tokens, len(t.slots))
	for _, s := range t.slots {
		if s != 0 {
			bigger.put(int(s - 1))
		}
	}
	*t = *bigger
}
