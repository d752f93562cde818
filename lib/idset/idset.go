// Package idset is an exact set of byte-string ids, compact enough to hold
// tens of millions of them: the ids are appended to a chunked byte arena and
// found through an open-addressing table of uint64 slots. It costs the id's
// length plus 1 byte in the arena and 11 to 21 bytes of table per id, against
// 70 to 90 bytes for a Go map[string]struct{}, and gives the garbage
// collector no pointers to scan.
//
// Membership compares the ids themselves: a hash collision never makes two
// different ids look equal.
package idset

import (
	"encoding/binary"
	"hash/maphash"
)

const (
	// chunkBits sets the arena's unit of growth (4 MiB): big enough that the
	// chunk list stays short, small enough that growing never copies much.
	chunkBits = 22
	chunkSize = 1 << chunkBits
	// A slot holds 0 (empty) or tag<<posBits | position+1, where position
	// is chunk<<chunkBits | offset and the tag is the hash's top bits, which
	// settle most mismatches without touching the arena.
	posBits = 40
	posMask = 1<<posBits - 1
	tagMask = ^uint64(posMask)
	// maxChunks is how many chunks positions can address (1 TiB of ids).
	maxChunks = 1 << (posBits - chunkBits)
)

// IDOverhead is about what an id costs beside its bytes, for the memory
// the help announces (dedupe-resume's): its length's byte in the arena and
// its share of the 8-byte slots, which the table keeps between 3/8 and 3/4
// full (11 to 21 bytes). TestIDOverhead checks it against the set's layout.
const IDOverhead = 20

var seed = maphash.MakeSeed()

// defaultHash is fast and well mixed. It is seeded per process: only the
// set's answers need be stable, not its layout.
func defaultHash(b []byte) uint64 { return maphash.Bytes(seed, b) }

// Set is an exact set of ids. The zero value is not ready: use New.
type Set struct {
	hash   func([]byte) uint64
	slots  []uint64
	mask   uint64
	n      int
	chunks [][]byte // arena: each id as a uvarint length and its bytes
}

// New returns an empty set sized for about expect ids (0 is fine: the table
// grows by doubling).
func New(expect int) *Set { return newWithHash(expect, defaultHash) }

// newWithHash lets tests force collisions with a poor hash.
func newWithHash(expect int, hash func([]byte) uint64) *Set {
	n := 1024
	for n/4*3 < expect {
		n *= 2
	}
	return &Set{hash: hash, slots: make([]uint64, n), mask: uint64(n - 1)}
}

// Len is the number of ids in the set.
func (s *Set) Len() int { return s.n }

// Bytes is the memory the set holds: table and arena.
func (s *Set) Bytes() int64 {
	b := int64(len(s.slots)) * 8
	for _, c := range s.chunks {
		b += int64(cap(c))
	}
	return b
}

// Contains reports whether id is in the set.
func (s *Set) Contains(id []byte) bool {
	_, found := s.find(id, s.hash(id))
	return found
}

// ContainsString is Contains for a string id.
func (s *Set) ContainsString(id string) bool { return s.Contains(stringBytes(id)) }

// Add inserts id and reports whether it was new.
func (s *Set) Add(id []byte) bool {
	h := s.hash(id)
	i, found := s.find(id, h)
	if found {
		return false
	}
	if (s.n+1)*4 > len(s.slots)*3 { // keep probes short: load at most 3/4
		s.grow()
		i, _ = s.find(id, h)
	}
	s.slots[i] = h&tagMask | (s.store(id) + 1)
	s.n++
	return true
}

// AddString is Add for a string id.
func (s *Set) AddString(id string) bool { return s.Add(stringBytes(id)) }

// find returns the slot holding id, or the empty slot where it would go.
func (s *Set) find(id []byte, h uint64) (int, bool) {
	tag := h & tagMask
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		v := s.slots[i]
		if v == 0 {
			return int(i), false
		}
		if v&tagMask == tag && string(s.at(v&posMask-1)) == string(id) {
			return int(i), true
		}
	}
}

// grow doubles the table and places every id again, walking the arena in
// order (sequential reads) rather than the old table.
func (s *Set) grow() {
	s.slots = make([]uint64, 2*len(s.slots))
	s.mask = uint64(len(s.slots) - 1)
	for ci, c := range s.chunks {
		for off := 0; off < len(c); {
			n, k := binary.Uvarint(c[off:])
			id := c[off+k : off+k+int(n)]
			h := s.hash(id)
			i := h & s.mask
			for s.slots[i] != 0 {
				i = (i + 1) & s.mask
			}
			s.slots[i] = h&tagMask | (uint64(ci)<<chunkBits | uint64(off)) + 1
			off += k + int(n)
		}
	}
}

// store appends id to the arena and returns its position. An id never spans
// two chunks; one too long for a chunk gets a chunk of its own, so offsets
// always fit in chunkBits.
func (s *Set) store(id []byte) uint64 {
	var lenBuf [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(lenBuf[:], uint64(len(id)))
	need := k + len(id)
	last := len(s.chunks) - 1
	if last < 0 || len(s.chunks[last])+need > cap(s.chunks[last]) {
		if len(s.chunks) == maxChunks {
			panic("idset: more than 1 TiB of ids")
		}
		s.chunks = append(s.chunks, make([]byte, 0, max(chunkSize, need)))
		last++
	}
	c := s.chunks[last]
	off := len(c)
	c = append(c, lenBuf[:k]...)
	s.chunks[last] = append(c, id...)
	return uint64(last)<<chunkBits | uint64(off)
}

// at returns the id stored at pos.
func (s *Set) at(pos uint64) []byte {
	c := s.chunks[pos>>chunkBits]
	off := int(pos & (chunkSize - 1))
	n, k := binary.Uvarint(c[off:])
	return c[off+k : off+k+int(n)]
}
