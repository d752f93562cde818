package tokenizer

import "unicode/utf8"

// Building blocks shared by the pattern families: the contraction suffixes,
// the three trailing whitespace alternatives and runs of a class.

// classMask is a test on a rune's classes, as a value rather than a
// function so that the scanners below test it inline on every rune: it
// passes the classes that share a bit with any (any class when any is 0)
// and none with none.
type classMask struct{ any, none runeClass }

func (k classMask) has(c runeClass) bool {
	return (k.any == 0 || c&k.any != 0) && c&k.none == 0
}

// runEnd returns the end of the longest run, starting at i, of runes whose
// class is in set.
func runEnd(s string, i int, set classMask) int {
	for i < len(s) {
		if b := s[i]; b < utf8.RuneSelf {
			if !set.has(asciiClasses[b]) {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !set.has(classOf(r)) {
			break
		}
		i += n
	}
	return i
}

// contractionLen matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at i and returns its
// length in bytes, or 0. Case-insensitive matching folds U+017F (long s) to s,
// as both Oniguruma and Rust's regex do.
func contractionLen(s string, i int) int {
	if i >= len(s) || s[i] != '\'' || i+1 >= len(s) {
		return 0
	}
	switch s[i+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2]|0x20 == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2]|0x20 == 'l' {
			return 3
		}
	}
	if len(s) >= i+3 && s[i+1:i+3] == "\u017f" {
		return 3
	}
	return 0
}

func isSpaceClass(c runeClass) bool { return c&classSpace != 0 }

func isCRLF(r rune) bool { return r == '\r' || r == '\n' }

// whitespaceEnd matches \s*[\r\n]+|\s+(?!\S)|\s+ at i, or returns -1 when
// s[i] is not whitespace.
func whitespaceEnd(s string, i int) int {
	end, lastNewlineEnd, lastRuneStart := i, -1, i
	for end < len(s) {
		r, c, n := runeAt(s, end)
		if !isSpaceClass(c) {
			break
		}
		if isCRLF(r) {
			lastNewlineEnd = end + n
		}
		lastRuneStart = end
		end += n
	}
	switch {
	case end == i:
		return -1
	case lastNewlineEnd >= 0: // \s*[\r\n]+ backtracks to the last line break
		return lastNewlineEnd
	case end == len(s): // \s+(?!\S) at the end of the text
		return end
	case lastRuneStart > i: // \s+(?!\S) leaves the last space to the next word
		return lastRuneStart
	default: // \s+
		return end
	}
}

// punctEnd matches ` ?[^\s\p{L}\p{N}]+` followed by a run of line-end
// runes (what extraTrail adds to [\r\n]*), or returns -1.
func punctEnd(s string, i int, punct classMask, slashTrails bool) int {
	j := i
	if s[j] == ' ' {
		j++
	}
	_, c, _ := runeAt(s, j)
	if j >= len(s) || !punct.has(c) {
		if j == i {
			return -1
		}
		j = i // the optional space cannot help: try without it
		_, c, _ = runeAt(s, j)
		if !punct.has(c) {
			return -1
		}
	}
	j = runEnd(s, j, punct)
	for j < len(s) && (s[j] == '\r' || s[j] == '\n' || (slashTrails && s[j] == '/')) {
		j++
	}
	return j
}

// notSpaceLetterNumber is [^\s\p{L}\p{N}].
var notSpaceLetterNumber = classMask{none: classSpace | classLetter | classN}

// letters is \p{L}.
var letters = classMask{any: classLetter}

func isLetter(c runeClass) bool { return c&classLetter != 0 }

func isNumber(c runeClass) bool { return c&classN != 0 }

// numberEnd matches \p{N}{1,max} at i, or returns -1.
func numberEnd(s string, i int, max int) int {
	j := i
	for k := 0; k < max && j < len(s); k++ {
		_, c, n := runeAt(s, j)
		if !isNumber(c) {
			break
		}
		j += n
	}
	if j == i {
		return -1
	}
	return j
}
