package tokenizer

import "math/bits"

// pairTable maps a pair of ids to a merge (rank<<32 | result). It is an
// open-addressing hash table with linear probing: merge lookups are the
// inner loop of BPE, and this is about twice as fast as a Go map there.
type pairTable struct {
	slots []pairSlot
	shift uint
	count int
}

// pairSlot stores key+1 so that the zero value marks an empty slot.
type pairSlot struct {
	keyPlusOne uint64
	value      uint64
}

func newPairTable(capacity int) *pairTable {
	size := 1 << bits.Len(uint(2*capacity+1)) // at most half full
	return &pairTable{slots: make([]pairSlot, size), shift: uint(64 - bits.Len(uint(size-1)))}
}

func (t *pairTable) index(key uint64) int {
	return int((key * 0x9E3779B97F4A7C15) >> t.shift)
}

// put stores value under key, replacing an earlier value (the last merge
// rule for a pair wins, as in HF).
func (t *pairTable) put(key, value uint64) {
	if 2*(t.count+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	for i := t.index(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.keyPlusOne == 0 {
			*s = pairSlot{key + 1, value}
			t.count++
			return
		}
		if s.keyPlusOne == key+1 {
			s.value = value
			return
		}
	}
}

func (t *pairTable) get(key uint64) (uint64, bool) {
	mask := len(t.slots) - 1
	for i := t.index(key); ; i = (i + 1) & mask {
		s := t.slots[i]
		if s.keyPlusOne == key+1 {
			return s.value, true
		}
		if s.keyPlusOne == 0 {
			return 0, false
		}
	}
}

func (t *pairTable) grow() {
	old := t.slots
	bigger := newPairTable(len(old))
	for _, s := range old {
		if s.keyPlusOne != 0 {
			bigger.put(s.keyPlusOne-1, s.value)
		}
	}
	*t = *bigger
}

// pairTableOf makes a table of rules, keyPlusOne-1 to value each, the last
// of a key's rules winning as with put. The rules go in by the order of
// their slots, not their own: a table of a few hundred thousand rules is
// megabytes, and put in the rules' order each one was a cache miss (a
// tenth of a second for gptoss's 446,189 merges); sorted by slot (a
// counting sort on the slot's top bits, which keeps each key's rules in
// their order) the puts walk the table from start to end.
func pairTableOf(rules []pairSlot) *pairTable {
	t := newPairTable(len(rules))
	const bucketBits = 12
	indexBits := bits.Len(uint(len(t.slots) - 1))
	if indexBits <= bucketBits {
		for _, r := range rules {
			t.put(r.keyPlusOne-1, r.value)
		}
		return t
	}
	bucket := func(key uint64) int { return t.index(key) >> (indexBits - bucketBits) } // the top bits of its slot
	var starts [1<<bucketBits + 1]int
	for _, r := range rules {
		starts[bucket(r.keyPlusOne-1)+1]++
	}
	for i := 1; i < len(starts); i++ {
		starts[i] += starts[i-1]
	}
	sorted := make([]pairSlot, len(rules))
	for _, r := range rules {
		b := bucket(r.keyPlusOne - 1)
		sorted[starts[b]] = r
		starts[b]++
	}
	for _, r := range sorted {
		t.put(r.keyPlusOne-1, r.value)
	}
	return t
}
