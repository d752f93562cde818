package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// expectedRoundTrip is what Decode(Encode(s)) gives: s itself, except that
// a normalizing tokenizer (Qwen3's NFC) returns the normalized text.
func expectedRoundTrip(tok *Tokenizer, s string) string {
	if tok.normalize == nil {
		return s
	}
	return tok.normalize(s)
}

func TestRoundTripCorpus(t *testing.T) {
	lines := corpus(t)
	for _, fam := range families {
		t.Run(fam, func(t *testing.T) {
			tok := loadFamily(t, fam)
			for _, line := range lines {
				for _, parseSpecial := range []bool{true, false} {
					got, err := tok.Decode(tok.Encode(line.Text, parseSpecial))
					if err != nil {
						t.Fatalf("%s: %v", line.ID, err)
					}
					if want := expectedRoundTrip(tok, line.Text); got != want {
						t.Errorf("%s (special %v): round trip differs", line.ID, parseSpecial)
					}
				}
			}
		})
	}
}

// fuzzFamilies are a byte-level family with a normalizer, one without, and Kimi.
var fuzzFamilies = []string{"qwen3", "llama3_1", "kimi_k25"}

func FuzzEncodeDecode(f *testing.F) {
	for _, s := range []string{
		"", " ", "Hello, world! It's 2024.", "  \n\n\t x", "中文和English混合", "e\u0301\u0327 Å",
		"<|im_start|>user\n<think>hi</think><|im_end|>", "[BOS]<|reserved_token_163700|>",
		strings.Repeat("ab", 300), strings.Repeat(" ", 200) + "x", "'S 'll 'ſ", "\xff\xfe invalid",
		"👨‍👩‍👧 🇫🇷 1️⃣", "x\r\n\r\n  y", "ǅungla Ǆ", "〇一二3",
	} {
		f.Add(s)
	}
	toks := make([]*Tokenizer, len(fuzzFamilies))
	for i, fam := range fuzzFamilies {
		toks[i] = loadFamily(f, fam)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, tok := range toks {
			for _, parseSpecial := range []bool{true, false} {
				ids := tok.Encode(s, parseSpecial)
				got, err := tok.Decode(ids)
				if err != nil {
					t.Fatalf("%s: %v", fuzzFamilies[i], err)
				}
				if !utf8.ValidString(s) && tok.normalize != nil {
					continue // normalizing replaces invalid bytes with U+FFFD
				}
				if want := expectedRoundTrip(tok, s); got != want {
					t.Fatalf("%s (special %v): Decode(Encode(%q)) = %q", fuzzFamilies[i], parseSpecial, s, got)
				}
			}
		}
	})
}

// FuzzLongPieceMerge checks that the tree merge used for long pieces gives
// the same ids as the simple scan used for short ones.
func FuzzLongPieceMerge(f *testing.F) {
	for _, s := range []string{"aaaaaaaa", "hellohellohello", "    \t\t  ", "abcabcabcabd", "ééééé", "1234567890"} {
		f.Add(s)
	}
	// Runs of one unit merge in sweeps (mergeWithTree's fast path), broken
	// off by a different rune or by a lower rank showing up.
	for _, unit := range []string{"x", " ", "\n", "ab", "abc", "\ufeff", "é", "==", "\u00a0"} {
		for _, n := range []int{129, 300, 1000} {
			run := strings.Repeat(unit, n/len(unit)+1)
			f.Add(run)
			f.Add(run[:len(run)/2] + "y" + run[len(run)/2:])
		}
	}
	toks := make([]*Tokenizer, len(fuzzFamilies))
	for i, fam := range fuzzFamilies {
		toks[i] = loadFamily(f, fam)
	}
	f.Fuzz(func(t *testing.T, piece string) {
		if len(piece) < 2 {
			return
		}
		for i, tok := range toks {
			m := tok.model
			var ids []uint32
			for j := 0; j < len(piece); j++ {
				ids = append(ids, uint32(m.byteID[piece[j]]))
			}
			scan := m.mergeByScan(nil, append([]uint32(nil), ids...), new(bpeScratch))
			viaTree := m.mergeWithTree(nil, append([]uint32(nil), ids...), new(bpeScratch))
			if !equalIDs(scan, viaTree) {
				t.Fatalf("%s: %q: scan %v, tree %v", fuzzFamilies[i], piece, scan, viaTree)
			}
		}
	})
}
