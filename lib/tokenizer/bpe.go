package tokenizer

import (
	"slices"
	"sync"
	"sync/atomic"
)

// bpeModel holds a byte-level BPE vocabulary in raw bytes (the byte-level
// alphabet is undone at load time) and its merge table.
type bpeModel struct {
	// pieceID maps the raw bytes of every vocabulary token to its id.
	pieceID *pieceTable
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
	cache           *pieceCache
	// byConcat (tiktoken) has no merge table: the merge of a pair is its
	// concatenation's rank, looked up in pieceID (mergeByConcat). A table
	// would hold one rule for every way of cutting a token in two, and
	// building it is a quarter of a second of CPU for Kimi-K2.5's 163,840
	// ranks, which a short run never wins back and which, with a worker on
	// every core, is taken from the workers. memo remembers the merges
	// looked up instead (nil where the ids do not fit its slots).
	byConcat bool
	memo     *pairMemo
}

const noRank = ^uint32(0)

func pairKey(left, right uint32) uint64 { return uint64(left)<<32 | uint64(right) }

func (m *bpeModel) merge(left, right uint32) (rank, result uint32) {
	if m.byConcat {
		if m.memo != nil {
			return m.memo.merge(m, left, right)
		}
		return m.mergeByConcat(left, right)
	}
	v, ok := m.merges.get(pairKey(left, right))
	if !ok {
		return noRank, 0
	}
	return uint32(v >> 32), uint32(v)
}

// mergeByConcat is merge without a table: the pair merges into the token
// that is its concatenation, ranked by that token's rank (tiktoken's rule).
func (m *bpeModel) mergeByConcat(left, right uint32) (rank, result uint32) {
	var buf [64]byte
	b := append(append(buf[:0], m.tokenBytes[left]...), m.tokenBytes[right]...)
	id, ok := m.pieceID.getBytes(b)
	if !ok {
		return noRank, 0
	}
	return uint32(id), uint32(id)
}

// longPiece is the symbol count above which the tree-based merge replaces
// the simple scan, whose cost grows with the square of the piece length.
const longPiece = 128

// bpeScratch is per-call working memory, pooled so that concurrent encodes
// do not share state and short pieces allocate nothing.
type bpeScratch struct {
	ids     []uint32
	ranks   []uint32
	syms    []linkedSymbol
	tree    minTree
	results []uint32
	touched []int32
	local   *localCache // lent by the model's pieceCache for one encode
	// An encode's pieces awaiting lookup, queue[:queued] (see
	// pieceQueuer).
	queue  [pieceBatch]queuedPiece
	queued int
	// enc is the state of the encode that holds the scratch (see
	// Tokenizer.newEncoder).
	enc encoder
}

var bpeScratchPool = sync.Pool{New: func() any { return new(bpeScratch) }}

// scratch takes working memory for one encode, with a local cache of the
// model's pieces; release gives it back.
func (m *bpeModel) scratch() *bpeScratch {
	sc := bpeScratchPool.Get().(*bpeScratch)
	sc.local = m.cache.takeLocal()
	return sc
}

func (m *bpeModel) release(sc *bpeScratch) {
	m.cache.putLocal(sc.local)
	sc.local = nil
	sc.enc = encoder{} // let the text and the ids go
	bpeScratchPool.Put(sc)
}

// appendLocalMiss appends the ids of a piece that its local-cache slot s
// (of key k0, k1) does not hold, and makes s hold them.
func (m *bpeModel) appendLocalMiss(dst []int, piece string, s *localSlot, k0, k1 uint64, sc *bpeScratch) []int {
	start := len(dst)
	dst = m.appendUncached(dst, piece, sc)
	s.set(k0, k1, len(piece), dst[start:])
	return dst
}

// appendUnlocal appends the ids of a piece the local cache does not take:
// one byte, or more than maxLocalPiece.
func (m *bpeModel) appendUnlocal(dst []int, piece string, sc *bpeScratch) []int {
	if len(piece) == 1 {
		if id := m.byteID[piece[0]]; id >= 0 {
			dst = append(dst, int(id))
		}
		return dst
	}
	return m.appendUncached(dst, piece, sc)
}

// appendUncached is pieceAppender.piece past the local cache.
func (m *bpeModel) appendUncached(dst []int, piece string, sc *bpeScratch) []int {
	if m.wholePieceFirst {
		if id, ok := m.pieceID.get(piece); ok {
			return append(dst, id)
		}
	}
	cacheable := len(piece) <= maxCachedPiece
	if cacheable {
		var hit bool
		if dst, hit = m.cache.appendCached(dst, piece); hit {
			return dst
		}
	}
	start := len(dst)
	ids := sc.ids[:0]
	for i := 0; i < len(piece); i++ {
		if id := m.byteID[piece[i]]; id >= 0 {
			ids = append(ids, uint32(id))
		}
	}
	if len(ids) > longPiece {
		dst = m.mergeWithTree(dst, ids, sc)
	} else {
		dst = m.mergeByScan(dst, ids, sc)
	}
	sc.ids = ids
	if cacheable {
		m.cache.store(piece, dst[start:])
	}
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

// linkedSymbol is one symbol of a long piece in a doubly linked list.
type linkedSymbol struct {
	id         uint32
	prev, next int32
}

// minTree is a tournament tree over the positions of a long piece: leaf i
// holds rank<<32 | i for the pair starting at symbol i (or noPair), and
// every inner node the minimum of its children, so the root is the pair to
// merge next, lowest rank first and leftmost on ties. Nothing goes stale,
// unlike a heap of candidates.
type minTree []uint64

const noPair = ^uint64(0)

func (t minTree) leaves() int { return len(t) / 2 }

// fix restores the minima above leaf pos after it changed.
func (t minTree) fix(pos int) {
	for i := (t.leaves() + pos) / 2; i >= 1; i /= 2 {
		m := min(t[2*i], t[2*i+1])
		if t[i] == m {
			return // the minimum above does not change
		}
		t[i] = m
	}
}

// fixRange restores the minima above leaves lo to hi, level by level: the
// cost of one pass over the range, where fixing each leaf costs a walk to
// the root.
func (t minTree) fixRange(lo, hi int) {
	for lo, hi = (t.leaves()+lo)/2, (t.leaves()+hi)/2; lo >= 1; lo, hi = lo/2, hi/2 {
		for i := lo; i <= hi; i++ {
			t[i] = min(t[2*i], t[2*i+1])
		}
	}
}

// sweepLookahead is how many symbols past a merge a sweep looks for the
// next pair of the same rank (a run of one character repeats its pairs
// every symbol or few).
const sweepLookahead = 2

// treeMerge is the state of mergeWithTree.
type treeMerge struct {
	m       *bpeModel
	syms    []linkedSymbol
	tree    minTree
	results []uint32 // what the pair at each position merges into
	touched []int32  // the leaves a sweep changed
	// The last pair looked up and its merge: a run of one character looks
	// the same few pairs up over and over, and a compare is cheaper than a
	// probe of the merge table.
	lastPair          uint64
	lastRank, lastRes uint32
}

func (w *treeMerge) leaf(pos int32) *uint64 { return &w.tree[w.tree.leaves()+int(pos)] }

// pairKey is the leaf of the pair starting at pos, noting what it merges into.
func (w *treeMerge) pairKey(pos int32) uint64 {
	next := w.syms[pos].next
	if next < 0 {
		return noPair
	}
	pair := pairKey(w.syms[pos].id, w.syms[next].id)
	if pair != w.lastPair {
		w.lastPair = pair
		w.lastRank, w.lastRes = w.m.merge(w.syms[pos].id, w.syms[next].id)
	}
	r, res := w.lastRank, w.lastRes
	if r == noRank {
		return noPair
	}
	w.results[pos] = res
	return uint64(r)<<32 | uint64(pos)
}

// mergeAt merges the pair at pos and sets the leaves it changes, leaving
// the tree above them to fix; it reports whether a new pair ranks below
// rank, which would be the next to merge.
func (w *treeMerge) mergeAt(pos int32, rank uint64) (lower bool) {
	syms := w.syms
	right := syms[pos].next
	syms[pos].id = w.results[pos]
	syms[pos].next = syms[right].next
	if next := syms[pos].next; next >= 0 {
		syms[next].prev = pos
	}
	*w.leaf(right) = noPair
	k := w.pairKey(pos)
	*w.leaf(pos) = k
	w.touched = append(w.touched, right, pos)
	lower = k>>32 < rank
	if prev := syms[pos].prev; prev >= 0 {
		k = w.pairKey(prev)
		*w.leaf(prev) = k
		w.touched = append(w.touched, prev)
		lower = lower || k>>32 < rank
	}
	return lower
}

// sweep merges the pair at the root, then, while the next pair of the
// same rank is a few symbols on, that one, without the tree: it holds no
// lower rank (a merge's new pairs never have the rank of the merge, and a
// new lower rank ends the sweep) and no pair of that rank further left, so
// that pair is the root's next choice. The tree is fixed once at the end.
func (w *treeMerge) sweep() {
	root := w.tree[1]
	rank, pos := root>>32, int32(uint32(root))
	w.touched = w.touched[:0]
	for !w.mergeAt(pos, rank) {
		next := w.syms[pos].next
		for k := 0; k < sweepLookahead && next >= 0 && *w.leaf(next)>>32 != rank; k++ {
			next = w.syms[next].next
		}
		if next < 0 || *w.leaf(next)>>32 != rank {
			break
		}
		pos = next
	}
	// One merge (three leaves) or leaves far apart: a walk up from each
	// leaf, which mostly stops early; a sweep: one pass over its range.
	if len(w.touched) > 3 {
		if lo, hi := slices.Min(w.touched), slices.Max(w.touched); int(hi-lo) <= 8*len(w.touched) {
			w.tree.fixRange(int(lo), int(hi))
			return
		}
	}
	for _, p := range w.touched {
		w.tree.fix(int(p))
	}
}

// mergeWithTree gives the same result as mergeByScan in O(n log n), and
// close to O(n) on runs of one character, which merge in sweeps.
func (m *bpeModel) mergeWithTree(dst []int, ids []uint32, sc *bpeScratch) []int {
	n := len(ids)
	w := treeMerge{m: m, syms: sc.syms[:0], results: sc.results[:0], touched: sc.touched[:0], lastPair: noPair}
	for i, id := range ids {
		w.syms = append(w.syms, linkedSymbol{id: id, prev: int32(i - 1), next: int32(i + 1)})
		w.results = append(w.results, 0)
	}
	w.syms[n-1].next = -1
	size := 1
	for size < n {
		size *= 2
	}
	w.tree = sc.tree[:0]
	for i := 0; i < 2*size; i++ {
		w.tree = append(w.tree, noPair)
	}
	for i := 0; i < n; i++ {
		*w.leaf(int32(i)) = w.pairKey(int32(i))
	}
	for i := size - 1; i >= 1; i-- {
		w.tree[i] = min(w.tree[2*i], w.tree[2*i+1])
	}
	for w.tree[1] != noPair {
		w.sweep()
	}
	for i := int32(0); i >= 0; i = w.syms[i].next {
		dst = append(dst, int(w.syms[i].id))
	}
	sc.syms, sc.tree, sc.results, sc.touched = w.syms, w.tree, w.results, w.touched
	return dst
}

// pairMemo remembers the merges a byConcat model looked up by
// concatenation, a pair to a slot, the last pair written to a slot
// winning: the pairs a text merges are few enough that most lookups find
// theirs here. With it, Kimi's encoding took 10-12% less CPU than with a
// whole merge table built in the background, the build included (46 MB of
// text, 8 alternating runs), and holds 2 MiB rather than the table's 16. A
// slot is one word, written and read whole, so workers share it without
// locks: valid bit, left and right ids (memoIDBits each) and the result
// (its id, or memoNoMerge).
type pairMemo struct {
	slots []atomic.Uint64
}

const (
	memoIDBits   = 20 // a vocabulary of up to 1,048,576 ids: 1+20+20+21 bits
	memoSlotBits = 18
	memoSlots    = 1 << memoSlotBits
	memoValid    = 1 << 63
	memoNoMerge  = 1<<(memoIDBits+1) - 1
)

// newPairMemo returns a memo for a vocabulary of n ids, or nil when its ids
// do not fit a slot.
func newPairMemo(n int) *pairMemo {
	if n > 1<<memoIDBits {
		return nil
	}
	return &pairMemo{slots: make([]atomic.Uint64, memoSlots)}
}

func (p *pairMemo) merge(m *bpeModel, left, right uint32) (rank, result uint32) {
	key := uint64(left)<<memoIDBits | uint64(right)
	slot := &p.slots[(key*0x9E3779B97F4A7C15)>>(64-memoSlotBits)]
	tag := memoValid | key<<(memoIDBits+1)
	if e := slot.Load(); e&^memoNoMerge == tag {
		if v := uint32(e & memoNoMerge); v != memoNoMerge {
			return v, v
		}
		return noRank, 0
	}
	rank, result = m.mergeByConcat(left, right)
	v := uint64(memoNoMerge)
	if rank != noRank {
		v = uint64(result)
	}
	slot.Store(tag | v)
	return rank, result
}
