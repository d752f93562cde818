package tokenizer

import "unicode/utf8"

// o200kMatcher is the o200k pattern of gpt-oss and, with leadingHan set, the
// Kimi pattern (tokenization_kimi.py):
//
//	[\p{Han}]+|                                                       (Kimi only)
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//	\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Kimi removes Han from both letter classes (&&[^\p{Han}]) and ends the
// punctuation alternative with [\r\n]* instead of [\r\n/]*.
type o200kMatcher struct {
	leadingHan  bool
	slashTrails bool
}

// upperClass and lowerClass are the two bracket classes of the word
// alternatives; they share Lm, Lo and M.
const (
	upperClass = classLu | classLt | classLm | classLo | classM
	lowerClass = classLl | classLm | classLo | classM
)

// upper and lower are the two classes, less Han for Kimi.
func (m o200kMatcher) upper() classMask {
	if m.leadingHan {
		return classMask{any: upperClass, none: classHan}
	}
	return classMask{any: upperClass}
}

func (m o200kMatcher) lower() classMask {
	if m.leadingHan {
		return classMask{any: lowerClass, none: classHan}
	}
	return classMask{any: lowerClass}
}

// han is \p{Han}.
var han = classMask{any: classHan}

func isHan(c runeClass) bool { return c&classHan != 0 }

func (m *o200kMatcher) matchAt(s string, i int) int {
	if end, ok := m.matchASCII(s, i); ok {
		return end
	}
	r, c, n := runeAt(s, i)
	if m.leadingHan && isHan(c) {
		return runEnd(s, i, han)
	}
	// The two word alternatives, each with the optional prefix rune and
	// without, in the regex's order (direct calls, not a loop over
	// function values: this is the matcher's hot path). Both start with an
	// upper- or lower-class rune: where none is, they are not tried.
	afterPrefix := false
	if !isCRLF(r) && c&(classLetter|classN) == 0 {
		_, next, _ := runeAt(s, i+n)
		afterPrefix = m.startsWord(next)
	}
	here := m.startsWord(c)
	if afterPrefix {
		if e := m.upperStarLowerPlus(s, i+n); e >= 0 {
			return e + contractionLen(s, e)
		}
	}
	if here {
		if e := m.upperStarLowerPlus(s, i); e >= 0 {
			return e + contractionLen(s, e)
		}
	}
	if afterPrefix {
		if e := m.upperPlusLowerStar(s, i+n); e >= 0 {
			return e + contractionLen(s, e)
		}
	}
	if here {
		if e := m.upperPlusLowerStar(s, i); e >= 0 {
			return e + contractionLen(s, e)
		}
	}
	if isNumber(c) {
		return numberEnd(s, i, 3)
	}
	if e := punctEnd(s, i, notSpaceLetterNumber, m.slashTrails); e >= 0 {
		return e
	}
	return whitespaceEnd(s, i)
}

// startsWord reports whether a rune of class c can start either word
// alternative: it is upper- or lower-class (0, past the text's end, is not).
func (m o200kMatcher) startsWord(c runeClass) bool {
	return m.upper().has(c) || m.lower().has(c)
}

// upperStarLowerPlus matches [upper]*[lower]+ at q with backtracking: when
// no lower-class rune follows the upper run, the lower run can only be the
// last rune of the upper run that is also lower-class (Lm, Lo or M).
func (m o200kMatcher) upperStarLowerPlus(s string, q int) int {
	upper, lower := m.upper(), m.lower()
	j, lastLower, lastLowerLen := q, -1, 0
	// ASCII capitals are upper-class only: no lower-class rune to note;
	// after them, an ASCII lowercase letter starts the lower run and any
	// other ASCII byte ends the match, with no lower-class rune seen.
	for j < len(s) && s[j]-'A' < 26 {
		j++
	}
	if j < len(s) && s[j] < utf8.RuneSelf {
		if s[j]-'a' < 26 {
			return runEnd(s, j, lower)
		}
		return -1
	}
	for j < len(s) {
		_, c, n := runeAt(s, j)
		if !upper.has(c) {
			break
		}
		if lower.has(c) {
			lastLower, lastLowerLen = j, n
		}
		j += n
	}
	if _, c, _ := runeAt(s, j); j < len(s) && lower.has(c) {
		return runEnd(s, j, lower)
	}
	if lastLower < 0 {
		return -1
	}
	return lastLower + lastLowerLen
}

// upperPlusLowerStar matches [upper]+[lower]* at q.
func (m o200kMatcher) upperPlusLowerStar(s string, q int) int {
	j := runEnd(s, q, m.upper())
	if j == q {
		return -1
	}
	return runEnd(s, j, m.lower())
}
