package tokenizer

import (
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

// A tiktoken model looks merges up by concatenation until it has built its
// table (bpeModel.byConcat): both answer every pair alike, and encode
// alike, so a run that never builds the table tokenizes as one that does.
func TestMergesByConcatenationAreTheTable(t *testing.T) {
	for _, fam := range []string{"kimi_k2", "kimi_k25"} {
		t.Run(fam, func(t *testing.T) {
			tok := tiktokenFamily(t, fam)
			m := tok.model
			table := m.concatMerges()
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
			}
			var texts []string
			for _, c := range corpus(t) {
				texts = append(texts, c.Text)
			}
			var before [][]int
			for _, text := range texts {
				before = append(before, tok.Encode(text, true))
			}
			m.built.Store(table)
			tok.model.cache = newPieceCache() // encode again, not from the cache
			for i, text := range texts {
				if after := tok.Encode(text, true); !slices.Equal(before[i], after) {
					t.Fatalf("%q: %v by concatenation, %v by the table", text, before[i], after)
				}
			}
		})
	}
}

// TestConcatMergesWholeTable: the merge table of a tiktoken model, built
// with its shortcuts (byteID, shortIDs, no self-checks), holds the rules
// that the plain way finds, every token cut every way and each half looked
// up in pieceID, and no others.
func TestConcatMergesWholeTable(t *testing.T) {
	for _, fam := range []string{"kimi_k2", "kimi_k25"} {
		t.Run(fam, func(t *testing.T) {
			tok := tiktokenFamily(t, fam)
			m := tok.model
			want := newPairTable(2 * m.pieceID.len())
			for id, tok := range m.tokenBytes {
				if first, _ := m.pieceID.get(tok); !m.tokenOK[id] || first != id {
					continue
				}
				for cut := 1; cut < len(tok); cut++ {
					left, okL := m.pieceID.get(tok[:cut])
					right, okR := m.pieceID.get(tok[cut:])
					if okL && okR {
						want.put(pairKey(uint32(left), uint32(right)), uint64(id)<<32|uint64(id))
					}
				}
			}
			got := m.concatMerges()
			if got.count != want.count {
				t.Fatalf("%d rules, want %d", got.count, want.count)
			}
			for _, s := range want.slots {
				if s.keyPlusOne == 0 {
					continue
				}
				if v, ok := got.get(s.keyPlusOne - 1); !ok || v != s.value {
					t.Fatalf("pair %x: %x, %v; want %x", s.keyPlusOne-1, v, ok, s.value)
				}
			}
		})
	}
}
