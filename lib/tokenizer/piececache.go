package tokenizer

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"strings"
	"sync"
	"sync/atomic"
)

// pieceCache remembers the ids of recently merged pieces, since words
// repeat and merging is most of the encoding time. It is a direct-mapped
// table of immutable entries swapped atomically: concurrent readers and
// writers need no lock, and a collision just replaces the older entry.
type pieceCache struct {
	seed  maphash.Seed
	slots []atomic.Pointer[cachedPiece]
	// locals are the goroutines' own caches of short pieces (localCache),
	// here so that a new pieceCache empties them too.
	locals sync.Pool
}

type cachedPiece struct {
	piece string
	ids   []int32
}

const (
	pieceCacheSlots = 1 << 15
	// maxCachedPiece bounds the memory an entry holds; longer pieces are
	// rare and merged every time. HF's BPE caches words of up to 256
	// characters; runs of CJK or Thai of 43 to 85 characters (129 to 256
	// bytes) are common pieces, and the longest to merge.
	maxCachedPiece = 256
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

// localCache is one goroutine's cache of short pieces, in front of the
// shared pieceCache and of the vocabulary's own table: each slot holds its
// piece and ids in one cache line, so that a hit costs one memory read
// where the shared cache costs four dependent ones (slot, entry, piece,
// ids) and the vocabulary table three, most of them misses in tables of
// megabytes. A goroutine takes one from its pieceCache's pool for the
// length of an encode, so no slot is ever shared.
type localCache struct {
	slots [localSlots]localSlot
}

// localSlot is a piece of at most 16 bytes, zero-padded into two words,
// and its ids. n is the piece's length, 0 for an empty slot.
type localSlot struct {
	k0, k1   uint64
	n, count uint8
	ids      [maxLocalIDs]uint32
}

const (
	localBits     = 13 // 8,192 slots, 512 KiB: half of a core's L2 on common CPUs
	localSlots    = 1 << localBits
	maxLocalPiece = 16
	maxLocalIDs   = 11 // what fills the slot's 64 bytes
)

// localKey packs a piece of 2 to maxLocalPiece bytes into two words that,
// with its length, tell it from any other: its first and last 8 bytes, or 4
// bytes, or bytes 0, n/2 and n-1, whichever cover it, read in place (a copy
// into a zeroed buffer was a thirteenth of encoding prose).
func localKey(piece string) (k0, k1 uint64) {
	switch n := len(piece); {
	case n >= 8:
		return binary.LittleEndian.Uint64([]byte(piece[:8])), binary.LittleEndian.Uint64([]byte(piece[n-8:]))
	case n >= 4:
		return uint64(binary.LittleEndian.Uint32([]byte(piece[:4]))) | uint64(binary.LittleEndian.Uint32([]byte(piece[n-4:])))<<32, 0
	default:
		return uint64(piece[0]) | uint64(piece[n/2])<<8 | uint64(piece[n-1])<<16, 0
	}
}

// localSlotOf is the slot of the piece of key k0, k1 (localKey) and length n.
func localSlotOf(k0, k1 uint64, n int) uint {
	return uint((k0 ^ bits.RotateLeft64(k1, 29) ^ uint64(n)<<56) * 0x9E3779B97F4A7C15 >> (64 - localBits))
}

// holds reports whether s holds the piece of key k0, k1 (localKey) and
// length n. The caller works the key and the slot out once per piece and
// hands them to set on a miss.
func (s *localSlot) holds(k0, k1 uint64, n int) bool {
	return int(s.n) == n && s.k0 == k0 && s.k1 == k1
}

// appendIDs appends the ids s holds. A plain loop of appends: small
// enough to be inlined where a piece is looked up, which growing dst once
// (slices.Grow) was not.
func (s *localSlot) appendIDs(dst []int) []int {
	for _, id := range s.ids[:s.count] {
		dst = append(dst, int(id))
	}
	return dst
}

// set makes s hold ids for the piece of key k0, k1 and length n, when they
// fit.
func (s *localSlot) set(k0, k1 uint64, n int, ids []int) {
	if len(ids) > maxLocalIDs {
		return
	}
	s.k0, s.k1, s.n, s.count = k0, k1, uint8(n), uint8(len(ids))
	for i, id := range ids {
		s.ids[i] = uint32(id)
	}
}

// takeLocal lends the calling goroutine a localCache until putLocal.
func (c *pieceCache) takeLocal() *localCache {
	if l, ok := c.locals.Get().(*localCache); ok {
		return l
	}
	return new(localCache)
}

func (c *pieceCache) putLocal(l *localCache) { c.locals.Put(l) }
