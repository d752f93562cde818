package tokenizer

import (
	"sort"
	"sync"
	"unicode"
	"unicode/utf8"
)

// runeClass is a bit set of the Unicode properties the pre-tokenizer
// patterns ask about. Looking one up is a single table read for the BMP,
// which is what keeps the hand-written matchers fast.
type runeClass uint16

const (
	classLu          runeClass = 1 << iota // \p{Lu}
	classLl                                // \p{Ll}
	classLt                                // \p{Lt}
	classLm                                // \p{Lm}
	classLo                                // \p{Lo}
	classM                                 // \p{M}
	classN                                 // \p{N}
	classP                                 // \p{P}
	classS                                 // \p{S}
	classSpace                             // \s: the White_Space property, as Oniguruma and Rust's regex read \s
	classHan                               // \p{Han}
	classPySpace                           // Python's str.isspace
	classNFCUnstable                       // may make a text differ from its NFC form
	classLetter      = classLu | classLl | classLt | classLm | classLo
)

var (
	// asciiClasses is built at package init: it is small and covers most text.
	asciiClasses = func() (t [utf8.RuneSelf]runeClass) {
		for r := range t {
			t[r] = computeClass(rune(r))
		}
		return t
	}()
	// bmpClasses is built on first use; it takes a few milliseconds.
	bmpClassesOnce sync.Once
	bmpClasses     []runeClass
)

// computeClass answers from the unicode package tables, corrected by
// classUpdates; classOf caches the answers for the BMP.
func computeClass(r rune) runeClass {
	var c runeClass
	if u, ok := findClassUpdate(r); ok {
		return u | otherClasses(r)
	}
	switch {
	case unicode.Is(unicode.Lu, r):
		c |= classLu
	case unicode.Is(unicode.Ll, r):
		c |= classLl
	case unicode.Is(unicode.Lt, r):
		c |= classLt
	case unicode.Is(unicode.Lm, r):
		c |= classLm
	case unicode.Is(unicode.Lo, r):
		c |= classLo
	case unicode.Is(unicode.M, r):
		c |= classM
	case unicode.Is(unicode.N, r):
		c |= classN
	case unicode.Is(unicode.P, r):
		c |= classP
	case unicode.Is(unicode.S, r):
		c |= classS
	}
	if unicode.Is(unicode.Han, r) {
		c |= classHan
	}
	return c | otherClasses(r)
}

// otherClasses are the bits that do not come from the general category.
func otherClasses(r rune) runeClass {
	var c runeClass
	if mayChangeUnderNFC(r) {
		c |= classNFCUnstable
	}
	if unicode.Is(unicode.White_Space, r) {
		c |= classSpace | classPySpace
	}
	if r >= 0x1c && r <= 0x1f { // Python counts the information separators as space
		c |= classPySpace
	}
	return c
}

// classUpdate gives the classes of runes [lo, hi] where the reference
// implementations use a newer Unicode version than Go's unicode package.
type classUpdate struct {
	lo, hi rune
	class  runeClass
}

func findClassUpdate(r rune) (runeClass, bool) {
	i := sort.Search(len(classUpdates), func(i int) bool { return classUpdates[i].hi >= r })
	if i < len(classUpdates) && classUpdates[i].lo <= r {
		return classUpdates[i].class, true
	}
	return 0, false
}

func initBMPClasses() {
	t := make([]runeClass, 0x10000)
	for r := range t {
		t[r] = computeClass(rune(r))
	}
	bmpClasses = t
}

// classOf returns the property bits of r.
func classOf(r rune) runeClass {
	if uint32(r) < utf8.RuneSelf {
		return asciiClasses[r]
	}
	if r < 0x10000 && r >= 0 {
		bmpClassesOnce.Do(initBMPClasses)
		return bmpClasses[r]
	}
	return computeClass(r)
}

// decodeRune decodes the rune at s[i:], treating invalid UTF-8 as one byte of
// U+FFFD so the scanners always make progress.
func decodeRune(s string, i int) (rune, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// runeAt returns the rune at i and its class, or -1 and 0 at the end.
func runeAt(s string, i int) (rune, runeClass, int) {
	if i >= len(s) {
		return -1, 0, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), asciiClasses[c], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return r, classOf(r), n
}

// lastRune decodes the last rune of s.
func lastRune(s string) (rune, int) {
	return utf8.DecodeLastRuneInString(s)
}
