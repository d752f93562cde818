package tokenizer

import "sync"

// bpeModel holds a byte-level BPE vocabulary in raw bytes (the byte-level
// alphabet is undone at load time) and its merge table.
type bpeModel struct {
	// pieceID maps the raw bytes of every vocabulary token to its id.
	pieceID map[string]int
	// tokenBytes maps an id below len(tokenBytes) to its raw bytes; ok
	// tells the ids that exist.
	tokenBytes []string
	tokenOK    []bool
	// byteID is the id of each single byte, or -1.
	byteID [256]int32
	// merges maps a pair of ids (left<<32 | right) to its merge rank and the
	// id it merges into (rank<<32 | result). tokenizer.json ranks are the
	// line numbers of merge rules; tiktoken's are the rank of the result.
	merges *pairTable
	// wholePieceFirst looks a whole piece up before merging: HF's
	// ignore_merges, and what tiktoken always does.
	wholePieceFirst bool
}

const noRank = ^uint32(0)

func pairKey(left, right uint32) uint64 { return uint64(left)<<32 | uint64(right) }

func (m *bpeModel) merge(left, right uint32) (rank, result uint32) {
	v, ok := m.merges.get(pairKey(left, right))
	if !ok {
		return noRank, 0
	}
	return uint32(v >> 32), uint32(v)
}

// longPiece is the symbol count above which the heap-based merge replaces
// the simple scan, whose cost grows with the square of the piece length.
const longPiece = 128

// bpeScratch is per-call working memory, pooled so that concurrent encodes
// do not share state and short pieces allocate nothing.
type bpeScratch struct {
	ids   []uint32
	ranks []uint32
	heap  mergeHeap
	syms  []heapSymbol
}

var bpeScratchPool = sync.Pool{New: func() any { return new(bpeScratch) }}

// appendPiece appends the ids of one pre-tokenized piece.
func (m *bpeModel) appendPiece(dst []int, piece string, sc *bpeScratch) []int {
	if len(piece) == 1 {
		if id := m.byteID[piece[0]]; id >= 0 {
			dst = append(dst, int(id))
		}
		return dst
	}
	if m.wholePieceFirst {
		if id, ok := m.pieceID[piece]; ok {
			return append(dst, id)
		}
	}
	ids := sc.ids[:0]
	for i := 0; i < len(piece); i++ {
		if id := m.byteID[piece[i]]; id >= 0 {
			ids = append(ids, uint32(id))
		}
	}
	if len(ids) > longPiece {
		dst = m.mergeWithHeap(dst, ids, sc)
	} else {
		dst = m.mergeByScan(dst, ids, sc)
	}
	sc.ids = ids
	return dst
}

// mergeByScan repeatedly merges the lowest-ranked adjacent pair, leftmost
// first, keeping the rank of every adjacent pair so a merge only has to
// look up its two new neighbours.
func (m *bpeModel) mergeByScan(dst []int, ids []uint32, sc *bpeScratch) []int {
	ranks := sc.ranks[:0]
	for i := 0; i+1 < len(ids); i++ {
		r, _ := m.merge(ids[i], ids[i+1])
		ranks = append(ranks, r)
	}
	for len(ids) > 1 {
		best, bestRank := -1, noRank
		for i, r := range ranks {
			if r < bestRank {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			break
		}
		_, merged := m.merge(ids[best], ids[best+1])
		ids[best] = merged
		ids = append(ids[:best+1], ids[best+2:]...)
		ranks = append(ranks[:best], ranks[best+1:]...)
		if best > 0 {
			ranks[best-1], _ = m.merge(ids[best-1], ids[best])
		}
		if best < len(ranks) {
			ranks[best], _ = m.merge(ids[best], ids[best+1])
		}
	}
	sc.ranks = ranks
	for _, id := range ids {
		dst = append(dst, int(id))
	}
	return dst
}

// heapSymbol is one symbol of a long piece in a doubly linked list.
type heapSymbol struct {
	id         uint32
	prev, next int32
	gone       bool
}

// mergeCandidate is a pair waiting in the heap: the symbol at pos and its
// successor, expected to merge with rank into result.
type mergeCandidate struct {
	order  uint64 // rank<<32 | pos: one comparison orders by rank, then position
	result uint32
}

func newCandidate(rank, result uint32, pos int32) mergeCandidate {
	return mergeCandidate{order: uint64(rank)<<32 | uint64(uint32(pos)), result: result}
}

func (c mergeCandidate) rank() uint32 { return uint32(c.order >> 32) }
func (c mergeCandidate) pos() int32   { return int32(uint32(c.order)) }

// mergeHeap is a binary min-heap of candidates ordered by rank, then
// position; written out to avoid boxing every candidate in an interface.
type mergeHeap []mergeCandidate

func (h mergeHeap) less(i, j int) bool { return h[i].order < h[j].order }

func (h mergeHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		small := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			small = r
		}
		if !h.less(small, i) {
			return
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
}

func (h mergeHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *mergeHeap) push(c mergeCandidate) {
	*h = append(*h, c)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

func (h *mergeHeap) pop() mergeCandidate {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	q.down(0)
	*h = q
	return top
}

// mergeWithHeap gives the same result as mergeByScan (lowest rank first,
// leftmost on ties) in O(n log n), the way HF's word.rs does it: candidates
// that went stale because a neighbour merged first are skipped when popped.
func (m *bpeModel) mergeWithHeap(dst []int, ids []uint32, sc *bpeScratch) []int {
	syms := sc.syms[:0]
	for i, id := range ids {
		syms = append(syms, heapSymbol{id: id, prev: int32(i - 1), next: int32(i + 1)})
	}
	syms[len(syms)-1].next = -1
	h := sc.heap[:0]
	for i := 0; i+1 < len(syms); i++ {
		if r, res := m.merge(syms[i].id, syms[i+1].id); r != noRank {
			h = append(h, newCandidate(r, res, int32(i)))
		}
	}
	h.init()
	for len(h) > 0 {
		c := h.pop()
		pos := c.pos()
		left := &syms[pos]
		if left.gone || left.next < 0 {
			continue
		}
		rightPos := left.next
		if r, res := m.merge(left.id, syms[rightPos].id); r != c.rank() || res != c.result {
			continue
		}
		left.id = c.result
		syms[rightPos].gone = true
		left.next = syms[rightPos].next
		if left.next >= 0 {
			syms[left.next].prev = pos
			if r, res := m.merge(left.id, syms[left.next].id); r != noRank {
				h.push(newCandidate(r, res, pos))
			}
		}
		if left.prev >= 0 {
			if r, res := m.merge(syms[left.prev].id, left.id); r != noRank {
				h.push(newCandidate(r, res, left.prev))
			}
		}
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		dst = append(dst, int(syms[i].id))
	}
	sc.heap, sc.syms = h, syms
	return dst
}
