package tokenizer

import (
	"hash/maphash"
	"strings"
	"sync/atomic"
)

// pieceCache remembers the ids of recently merged pieces, since words
// repeat and merging is most of the encoding time. It is a direct-mapped
// table of immutable entries swapped atomically: concurrent readers and
// writers need no lock, and a collision just replaces the older entry.
type pieceCache struct {
	seed  maphash.Seed
	slots []atomic.Pointer[cachedPiece]
}

type cachedPiece struct {
	piece string
	ids   []int32
}

const (
	pieceCacheSlots = 1 << 15
	// maxCachedPiece bounds the memory an entry holds; longer pieces are
	// rare and merged every time.
	maxCachedPiece = 128
)

func newPieceCache() *pieceCache {
	return &pieceCache{seed: maphash.MakeSeed(), slots: make([]atomic.Pointer[cachedPiece], pieceCacheSlots)}
}

func (c *pieceCache) slot(piece string) *atomic.Pointer[cachedPiece] {
	return &c.slots[maphash.String(c.seed, piece)&(pieceCacheSlots-1)]
}

// appendCached appends the cached ids of piece and reports whether it found them.
func (c *pieceCache) appendCached(dst []int, piece string) ([]int, bool) {
	e := c.slot(piece).Load()
	if e == nil || e.piece != piece {
		return dst, false
	}
	for _, id := range e.ids {
		dst = append(dst, int(id))
	}
	return dst, true
}

// store remembers ids for piece; the piece is copied so that the entry does
// not keep the caller's whole text alive.
func (c *pieceCache) store(piece string, ids []int) {
	e := &cachedPiece{piece: strings.Clone(piece), ids: make([]int32, len(ids))}
	for i, id := range ids {
		e.ids[i] = int32(id)
	}
	c.slot(piece).Store(e)
}
