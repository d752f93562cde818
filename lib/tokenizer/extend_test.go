package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestExtendEqualsEncode checks that Extend gives exactly the ids of
// encoding the whole text, on texts made of corpus lines and every family's
// added tokens (lstrip, rstrip and single_word ones among them), white space
// and word characters around them, extended at random places: after a
// prefix of the text, after a text that shares only its beginning, and turn
// after turn, also through ExtendOver.
func TestExtendEqualsEncode(t *testing.T) {
	lines := corpus(t)
	var pieces []string
	for _, l := range lines {
		if l.Cat != "long" && l.Text != "" && len(l.Text) < 2000 {
			pieces = append(pieces, l.Text)
		}
	}
	for _, fam := range append(families, "stripping") {
		t.Run(fam, func(t *testing.T) {
			tok := extendTestTokenizer(t, fam)
			rng := rand.New(rand.NewPCG(1, uint64(len(fam))))
			added := tok.AddedTokens()
			text := func(n int) string {
				var b strings.Builder
				for range n {
					switch rng.IntN(4) {
					case 0:
						b.WriteString(pieces[rng.IntN(len(pieces))])
					case 1:
						b.WriteString(added[rng.IntN(len(added))].Content)
					case 2:
						b.WriteString([]string{" ", "\n", "\n\n", "  ", "user", "x", "é", "1"}[rng.IntN(8)])
					default:
						// The few tokens a chat template writes, often.
						b.WriteString(added[rng.IntN(min(len(added), 10))].Content)
					}
				}
				return b.String()
			}
			reused := 0
			extend := tok.Extend
			check := func(what string, prev *Encoding, s string) *Encoding {
				t.Helper()
				got := extend(prev, s)
				want := tok.Encode(s, true)
				if pos := firstDifference(got.IDs, want); pos >= 0 {
					t.Fatalf("%s: %s (reused %d ids)", what, describeMismatch(tok, s, got.IDs, want, pos), got.Reused)
				}
				reused += got.Reused
				return got
			}
			for range 150 {
				s := text(2 + rng.IntN(40))
				cut := rng.IntN(len(s) + 1)
				for cut < len(s) && !utf8.RuneStart(s[cut]) {
					cut++
				}
				prev := check("prefix", nil, s[:cut])
				check("extension", prev, s)
				check("diverging", prev, s[:cut/2]+text(3))
				// Turn after turn, each prompt the last one and more.
				enc := check("turn 1", nil, text(5))
				for range 4 {
					enc = check("next turn", enc, enc.Text+text(1+rng.IntN(6)))
				}
				// The same through ExtendOver, each prompt written over
				// the last one's ids, and now and then parting from it
				// before its end.
				extend = tok.ExtendOver
				enc = check("turn 1 over", nil, text(5))
				for range 6 {
					next := enc.Text
					if rng.IntN(3) == 0 {
						cut := rng.IntN(len(next) + 1)
						for cut < len(next) && !utf8.RuneStart(next[cut]) {
							cut++
						}
						next = next[:cut]
					}
					enc = check("next turn over", enc, next+text(1+rng.IntN(6)))
				}
				extend = tok.Extend
			}
			if reused == 0 {
				t.Fatalf("no ids reused: the test exercised only full encodes")
			}
			if fam == "kimi_k25" || fam == "kimi_k2" {
				// A run longer than Kimi's chunk cap: encoded whole.
				long := text(20) + strings.Repeat("a", kimiMaxRun+10) + text(5)
				check("kimi chunks", check("kimi prefix", nil, long[:len(long)/2]), long)
			}
		})
	}
}

// extendTestTokenizer is the family's tokenizer; "stripping" is Qwen3's with
// the added tokens the families lack in front: lstrip, rstrip and
// single_word ones, and tokens that begin with another, where what follows
// a match decides it.
func extendTestTokenizer(t *testing.T, fam string) *Tokenizer {
	if fam != "stripping" {
		return loadFamily(t, fam)
	}
	base := loadFamily(t, "qwen3")
	tok := *base
	n := base.VocabSize()
	tok.setAddedTokens(append([]AddedToken{
		{ID: n, Content: "<r>", Special: true, RStrip: true},
		{ID: n + 1, Content: "<l>", Special: true, LStrip: true},
		{ID: n + 2, Content: "<w>", Special: true, SingleWord: true},
		{ID: n + 3, Content: "<r>long", Special: true},
		{ID: n + 4, Content: "<lr>", Special: true, LStrip: true, RStrip: true},
		{ID: n + 5, Content: "<lr>long-long-long-long-long-tail", Special: true},
	}, base.AddedTokens()...), false)
	return &tok
}

// TestCommonPrefix compares commonPrefix with a byte-by-byte
// scan on arrays that part at every distance from their start, of every
// length around the block sizes it compares.
func TestCommonPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 3000 {
		a := make([]byte, rng.IntN(5000))
		for i := range a {
			a[i] = byte('a' + rng.IntN(3))
		}
		// b is a's beginning, perhaps a byte that may differ, then
		// perhaps more of a.
		b := append([]byte(nil), a[:rng.IntN(len(a)+1)]...)
		if rng.IntN(2) == 0 {
			b = append(b, byte('a'+rng.IntN(3)))
		}
		if len(b) < len(a) {
			b = append(b, a[len(b):][:rng.IntN(len(a)-len(b)+1)]...)
		}
		want := 0
		for want < min(len(a), len(b)) && a[want] == b[want] {
			want++
		}
		if got := commonPrefix(string(a), string(b)); got != want {
			t.Fatalf("len %d and %d: %d bytes in common, want %d", len(a), len(b), got, want)
		}
	}
}

// FuzzExtendEqualsEncode checks that Extend, which looks a text's pieces
// up in batches, gives the ids of Encode, which looks them up one at a
// time: on the text alone, first, while its pieces may be new to the
// caches, and again once they are there, and as the next turn of the text
// cut at cut, through ExtendOver.
func FuzzExtendEqualsEncode(f *testing.F) {
	for _, s := range []string{
		"", "Hello, world! It's 2024.", "<|im_start|>user\nthe cat and the hat<|im_end|>",
		strings.Repeat("the cat sat on the mat. ", 20), "中文和English混合 e\u0301", "\xff\xfe invalid",
	} {
		f.Add(s, uint(len(s)/2))
	}
	toks := make([]*Tokenizer, len(fuzzFamilies))
	for i, fam := range fuzzFamilies {
		toks[i] = loadFamily(f, fam)
	}
	f.Fuzz(func(t *testing.T, s string, cut uint) {
		for i, tok := range toks {
			first := tok.Extend(nil, s).IDs
			want := tok.Encode(s, true)
			check := func(what string, got []int) {
				t.Helper()
				if pos := firstDifference(got, want); pos >= 0 {
					t.Fatalf("%s, %s: %s", fuzzFamilies[i], what, describeMismatch(tok, s, got, want, pos))
				}
			}
			check("first Extend", first)
			check("second Extend", tok.Extend(nil, s).IDs)
			prev := tok.Extend(nil, s[:cut%uint(len(s)+1)])
			check("ExtendOver a prefix", tok.ExtendOver(prev, s).IDs)
		}
	})
}
