package tokenizer

import (
	"fmt"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// TestConformance compares every corpus line, in both modes, with the ids
// of the reference implementations (HF tokenizers 0.23.2, tiktoken 1.0.22
// with Kimi's chunking).
func TestConformance(t *testing.T) {
	lines := corpus(t)
	for _, fam := range families {
		t.Run(fam, func(t *testing.T) {
			tok := loadFamily(t, fam)
			refs := readJSONLines[refLine](t, filepath.Join("testdata", "refs", fam+".public.jsonl.zst"))
			if len(refs) != len(lines) {
				t.Fatalf("%d refs for %d corpus lines", len(refs), len(lines))
			}
			for _, mode := range []struct {
				name         string
				parseSpecial bool
			}{{"special", true}, {"plain", false}} {
				bad := 0
				for i, line := range lines {
					if refs[i].ID != line.ID {
						t.Fatalf("ref %d is %s, corpus line is %s", i, refs[i].ID, line.ID)
					}
					want := refs[i].Plain
					if mode.parseSpecial {
						want = refs[i].Special
					}
					got := tok.Encode(line.Text, mode.parseSpecial)
					if !mode.parseSpecial {
						got = referencePlainIDs(fam, tok, got)
					}
					if pos := firstDifference(got, want); pos >= 0 {
						bad++
						if bad <= 8 {
							t.Errorf("%s %s: %s", mode.name, line.ID, describeMismatch(tok, line.Text, got, want, pos))
						}
					}
				}
				t.Logf("%s %s: %d/%d lines identical", fam, mode.name, len(lines)-bad, len(lines))
			}
		})
	}
}

// firstDifference returns the first index where a and b differ, or -1.
func firstDifference(a, b []int) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func describeMismatch(tok *Tokenizer, text string, got, want []int, pos int) string {
	window := func(ids []int) string {
		lo, hi := max(0, pos-3), min(len(ids), pos+5)
		s := fmt.Sprint(ids[lo:hi])
		for _, id := range ids[lo:hi] {
			d, _ := tok.Decode([]int{id})
			s += fmt.Sprintf(" %q", d)
		}
		return s
	}
	short := text
	if len(short) > 200 {
		short = short[:200]
		for !utf8.ValidString(short) {
			short = short[:len(short)-1]
		}
		short += "..."
	}
	return fmt.Sprintf("text %q (%d bytes): first difference at id %d of %d/%d\n got  %s\n want %s",
		short, len(text), pos, len(got), len(want), window(got), window(want))
}

// referencePlainIDs maps ids to the numbering of the plain-mode reference.
// That reference loads a copy of tokenizer.json whose special added tokens
// are renamed to unmatchable strings. DeepSeek-V3 has three special tokens
// (ids 0-2) that are also in the model vocabulary; renamed, they are not, so
// HF gives them new ids after the vocabulary and every later added token
// moves up by three. Encode keeps the real ids (<｜User｜> is 128803); the
// comparison applies the reference's renumbering to the non-special added
// tokens, the only ids it changes.
func referencePlainIDs(fam string, tok *Tokenizer, ids []int) []int {
	if fam != "deepseek_v3" {
		return ids
	}
	const shift = 3
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = id
		for _, a := range tok.added {
			if a.ID == id && !a.Special {
				out[i] = id + shift
			}
		}
	}
	return out
}
