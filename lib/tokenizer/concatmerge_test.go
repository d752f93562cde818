package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
)

// tiktokenFamily loads the tokenizer of fam, a family read from tiktoken
// ranks (its merges looked up by concatenation).
func tiktokenFamily(t *testing.T, fam string) *Tokenizer {
	t.Helper()
	tok, err := Load(filepath.Join(unpackedModels(t), fam))
	if err != nil {
		t.Fatal(err)
	}
	if !tok.model.byConcat {
		t.Skipf("%s is not read from tiktoken ranks", fam)
	}
	return tok
}

// A tiktoken model looks merges up by concatenation, through its pairMemo:
// the concatenation, the memo and the table it stands for answer every pair
// alike, and encode alike.
func TestMergesByConcatenationAreTheTable(t *testing.T) {
	for _, fam := range []string{"kimi_k2", "kimi_k25"} {
		t.Run(fam, func(t *testing.T) {
			tok := tiktokenFamily(t, fam)
			m := tok.model
			table := concatMergeTable(m)
			if table.count == 0 {
				t.Fatal("no merge rules")
			}
			for _, s := range table.slots {
				if s.keyPlusOne == 0 {
					continue
				}
				key := s.keyPlusOne - 1
				rank, result := m.mergeByConcat(uint32(key>>32), uint32(key))
				if rank != uint32(s.value>>32) || result != uint32(s.value) {
					t.Fatalf("pair %d+%d: by concatenation %d->%d, the table %d->%d", key>>32, uint32(key), rank, result, s.value>>32, uint32(s.value))
				}
				for range 2 { // the second from the memo, unless another pair took its slot
					if rank, result := m.merge(uint32(key>>32), uint32(key)); rank != uint32(s.value>>32) || result != uint32(s.value) {
						t.Fatalf("pair %d+%d: through the memo %d->%d, the table %d->%d", key>>32, uint32(key), rank, result, s.value>>32, uint32(s.value))
					}
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range 100000 {
				l, r := uint32(rng.IntN(len(m.tokenBytes))), uint32(rng.IntN(len(m.tokenBytes)))
				if !m.tokenOK[l] || !m.tokenOK[r] {
					continue
				}
				_, inTable := table.get(pairKey(l, r))
				if rank, _ := m.mergeByConcat(l, r); (rank != noRank) != inTable {
					t.Fatalf("pair %d+%d: by concatenation rank %d, in the table %v", l, r, rank, inTable)
				}
				for range 2 {
					if rank, _ := m.merge(l, r); (rank != noRank) != inTable {
						t.Fatalf("pair %d+%d: through the memo rank %d, in the table %v", l, r, rank, inTable)
					}
				}
			}
			var texts []string
			for _, c := range corpus(t) {
				texts = append(texts, c.Text)
			}
			var before [][]int
			for _, text := range texts {
				before = append(before, tok.Encode(text, true))
			}
			if m.memo == nil {
				t.Fatal("a tiktoken model of under 2^20 ids has no pair memo")
			}
			// From here on, the table; encode again, not from the cache.
			m.byConcat, m.memo, m.merges = false, nil, table
			tok.model.cache = newPieceCache()
			for i, text := range texts {
				if after := tok.Encode(text, true); !slices.Equal(before[i], after) {
					t.Fatalf("%q: %v through the memo, %v by the table", text, before[i], after)
				}
			}
		})
	}
}

// concatMergeTable is the merge table that merging by concatenation
// stands for: for every token (the id pieceID gives its bytes) and every
// way of cutting it into two tokens, a rule ranked by the token.
func concatMergeTable(m *bpeModel) *pairTable {
	table := newPairTable(2 * m.pieceID.len())
	for id, tok := range m.tokenBytes {
		if first, _ := m.pieceID.get(tok); !m.tokenOK[id] || first != id {
			continue
		}
		for cut := 1; cut < len(tok); cut++ {
			left, okL := m.pieceID.get(tok[:cut])
			right, okR := m.pieceID.get(tok[cut:])
			if okL && okR {
				table.put(pairKey(uint32(left), uint32(right)), uint64(id)<<32|uint64(id))
			}
		}
	}
	return table
}

// TestPairMemoShared: workers that share a pairMemo, its slots written over
// by pairs that collide, each get every pair's merge right.
func TestPairMemoShared(t *testing.T) {
	m := tiktokenFamily(t, "kimi_k25").model
	table := concatMergeTable(m)
	var pairs [][2]uint32
	for _, s := range table.slots {
		if s.keyPlusOne != 0 && len(pairs) < 200000 {
			key := s.keyPlusOne - 1
			pairs = append(pairs, [2]uint32{uint32(key >> 32), uint32(key)})
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100000 { // mostly pairs that do not merge
		pairs = append(pairs, [2]uint32{uint32(rng.IntN(len(m.tokenBytes))), uint32(rng.IntN(len(m.tokenBytes)))})
	}
	m.memo = newPairMemo(len(m.tokenBytes))
	errs := make(chan string, 4)
	for w := range 4 {
		go func() {
			order := rand.New(rand.NewPCG(uint64(w), 5))
			for range 3 * len(pairs) {
				p := pairs[order.IntN(len(pairs))]
				if !m.tokenOK[p[0]] || !m.tokenOK[p[1]] {
					continue
				}
				want := uint64(noRank) << 32
				if v, ok := table.get(pairKey(p[0], p[1])); ok {
					want = v
				}
				rank, result := m.memo.merge(m, p[0], p[1])
				if got := uint64(rank)<<32 | uint64(result); got != want && !(rank == noRank && want>>32 == uint64(noRank)) {
					errs <- fmt.Sprintf("pair %d+%d: %d->%d, the table %d->%d", p[0], p[1], rank, result, want>>32, uint32(want))
					return
				}
			}
			errs <- ""
		}()
	}
	for range 4 {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}
}
