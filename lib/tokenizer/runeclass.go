package tokenizer

import (
	"sort"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// runeClass is a bit set of the Unicode properties the pre-tokenizer
// patterns ask about. Looking one up is a single table read for the BMP and
// two above it, which is what keeps the hand-written matchers fast.
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

// The supplementary planes (emoji, historic scripts, rare Han) are cached a
// block at a time, each block computed on its first lookup: computing all
// of them takes about 300 ms, and a text touches few. Of the 4096 blocks of
// 256 runes, fewer than a hundred mix classes; the rest hold one class each
// and share one block per class, so the cache stays under 100 KiB.
const (
	astralBase      = 0x10000
	astralBlockBits = 8
	astralBlockMask = 1<<astralBlockBits - 1
)

type astralBlock [1 << astralBlockBits]runeClass

var (
	// astralBlocks[i] holds the classes of the runes from
	// astralBase + i<<astralBlockBits, or nil before their first lookup.
	// Goroutines that race to fill one compute the same classes.
	astralBlocks [(unicode.MaxRune + 1 - astralBase) >> astralBlockBits]atomic.Pointer[astralBlock]

	uniformBlocksMu sync.Mutex
	uniformBlocks   = map[runeClass]*astralBlock{}
)

// computeClass answers from the unicode package tables, corrected by
// classUpdates; classOf caches the answers.
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
	if r < astralBase && r >= 0 {
		bmpClassesOnce.Do(initBMPClasses)
		return bmpClasses[r]
	}
	if r >= astralBase && r <= unicode.MaxRune {
		return astralClass(r)
	}
	return computeClass(r)
}

// astralClass returns the class of r, from U+10000 to U+10FFFF.
func astralClass(r rune) runeClass {
	slot := &astralBlocks[(r-astralBase)>>astralBlockBits]
	b := slot.Load()
	if b == nil {
		b = computeAstralBlock(r &^ astralBlockMask)
		slot.Store(b)
	}
	return b[r&astralBlockMask]
}

// computeAstralBlock returns the classes of the block starting at first,
// the shared block of its class when all its runes have one.
func computeAstralBlock(first rune) *astralBlock {
	b := new(astralBlock)
	uniform := true
	for i := range b {
		b[i] = computeClass(first + rune(i))
		uniform = uniform && b[i] == b[0]
	}
	if !uniform {
		return b
	}
	uniformBlocksMu.Lock()
	defer uniformBlocksMu.Unlock()
	if shared, ok := uniformBlocks[b[0]]; ok {
		return shared
	}
	uniformBlocks[b[0]] = b
	return b
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
