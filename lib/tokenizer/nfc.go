package tokenizer

import (
	"sort"
	"strings"
	"unicode/utf8"
)

//go:generate python3 gen_nfc_tables.py

// Hangul syllable arithmetic from the Unicode standard, chapter 3.12.
const (
	hangulSBase  = 0xAC00
	hangulLBase  = 0x1100
	hangulVBase  = 0x1161
	hangulTBase  = 0x11A7
	hangulLCount = 19
	hangulVCount = 21
	hangulTCount = 28
	hangulNCount = hangulVCount * hangulTCount
	hangulSCount = hangulLCount * hangulNCount
)

// mayChangeUnderNFC reports whether r can make a text differ from its NFC form.
func mayChangeUnderNFC(r rune) bool {
	i := sort.Search(len(nfcUnstableRanges), func(i int) bool { return nfcUnstableRanges[i][1] >= r })
	return i < len(nfcUnstableRanges) && nfcUnstableRanges[i][0] <= r
}

// isNFC is the quick check: runes below U+0300 never need attention, the
// others are looked up in the class table.
func isNFC(s string) bool {
	for i := 0; i < len(s); {
		if s[i] < 0xCC { // lead bytes below 0xCC start runes below U+0300
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if classOf(r)&classNFCUnstable != 0 {
			return false
		}
		i += n
	}
	return true
}

// nfc returns the Unicode Normalization Form C of s (Qwen3's normalizer).
// Invalid UTF-8 bytes become U+FFFD, as they would in a Rust string.
func nfc(s string) string {
	if isNFC(s) && utf8.ValidString(s) {
		return s
	}
	runes := make([]rune, 0, len(s))
	for _, r := range s {
		runes = appendDecomposed(runes, r)
	}
	reorderCanonically(runes)
	runes = composeCanonically(runes)
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range runes {
		b.WriteRune(r)
	}
	return b.String()
}

func appendDecomposed(dst []rune, r rune) []rune {
	if r >= hangulSBase && r < hangulSBase+hangulSCount {
		si := r - hangulSBase
		dst = append(dst, hangulLBase+si/hangulNCount, hangulVBase+(si%hangulNCount)/hangulTCount)
		if t := si % hangulTCount; t != 0 {
			dst = append(dst, hangulTBase+t)
		}
		return dst
	}
	if d, ok := nfcDecomposition[r]; ok {
		return append(dst, d...)
	}
	return append(dst, r)
}

// reorderCanonically sorts each run of non-starters by combining class,
// keeping equal classes in order.
func reorderCanonically(runes []rune) {
	for i := 0; i < len(runes); {
		if nfcCombiningClass[runes[i]] == 0 {
			i++
			continue
		}
		j := i
		for j < len(runes) && nfcCombiningClass[runes[j]] != 0 {
			j++
		}
		run := runes[i:j]
		sort.SliceStable(run, func(a, b int) bool { return nfcCombiningClass[run[a]] < nfcCombiningClass[run[b]] })
		i = j
	}
}

func composePair(a, b rune) (rune, bool) {
	if a >= hangulLBase && a < hangulLBase+hangulLCount && b >= hangulVBase && b < hangulVBase+hangulVCount {
		return hangulSBase + ((a-hangulLBase)*hangulVCount+(b-hangulVBase))*hangulTCount, true
	}
	if a >= hangulSBase && a < hangulSBase+hangulSCount && (a-hangulSBase)%hangulTCount == 0 &&
		b > hangulTBase && b < hangulTBase+hangulTCount {
		return a + (b - hangulTBase), true
	}
	c, ok := nfcComposition[[2]rune{a, b}]
	return c, ok
}

// composeCanonically is the canonical composition algorithm: each rune
// combines with the last starter unless a rune of the same or higher class
// (or a starter) stands between them.
func composeCanonically(runes []rune) []rune {
	if len(runes) == 0 {
		return runes
	}
	out := runes[:1]
	starter := 0
	lastClass := -1
	if nfcCombiningClass[runes[0]] != 0 {
		starter = -1
	}
	for _, r := range runes[1:] {
		class := int(nfcCombiningClass[r])
		if starter >= 0 {
			blocked := lastClass != -1 && (lastClass == 0 || lastClass >= class)
			if !blocked {
				if c, ok := composePair(out[starter], r); ok {
					out[starter] = c
					continue
				}
			}
		}
		if class == 0 {
			starter = len(out)
			lastClass = -1
		} else {
			lastClass = class
		}
		out = append(out, r)
	}
	return out
}
