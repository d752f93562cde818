package tokenizer

import "unicode/utf8"

// ASCII fast paths of the o200k/Kimi, cl100k and DeepSeek word matchers. Most of what
// synthpipe encodes is English and markdown, where the rune-by-rune path
// spends its time on class masks that a byte's kind answers at once. A
// fast path decides a match only when every byte that decides it is
// ASCII; the moment a non-ASCII byte could change the answer (continue a
// run, be whitespace, start a word after a prefix) it reports undecided
// and the rune path matches from the start, so the two cannot disagree.
// Where a run merely goes on past ASCII (a word's lowercase letters into
// "é", punctuation into "…"), the fast path hands the rest of the run to
// runEnd, which is what the rune path would do at that point.

// byteKind is what the patterns need to know of an ASCII byte. No ASCII
// byte is Lt, Lm, Lo or M, so for ASCII the upper class of o200k is
// kindUpper alone and its lower class kindLower alone.
type byteKind uint8

const (
	kindPunct    byteKind = iota // [^\s\p{L}\p{N}]: punctuation, symbols, controls
	kindUpper                    // \p{Lu}: A-Z
	kindLower                    // \p{Ll}: a-z
	kindDigit                    // \p{N}: 0-9
	kindSpace                    // \s other than CR and LF
	kindLineEnd                  // \r, \n
	kindNonASCII                 // a byte of a multi-byte rune, or invalid UTF-8
)

// byteKinds is derived from asciiClasses, so that the fast paths read the
// same Unicode data as the rune path (TestByteKinds checks the claims
// above).
var byteKinds = func() (t [256]byteKind) {
	for b := range t {
		if b >= utf8.RuneSelf {
			t[b] = kindNonASCII
			continue
		}
		switch c := asciiClasses[b]; {
		case c&classLu != 0:
			t[b] = kindUpper
		case c&classLl != 0:
			t[b] = kindLower
		case c&classN != 0:
			t[b] = kindDigit
		case c&classSpace != 0 && isCRLF(rune(b)):
			t[b] = kindLineEnd
		case c&classSpace != 0:
			t[b] = kindSpace
		default:
			t[b] = kindPunct
		}
	}
	return t
}()

// kindEnd is the kind past the text's end: no class has it.
const kindEnd byteKind = 255

// kindAt returns the kind of s[i], or kindEnd past the end.
func kindAt(s string, i int) byteKind {
	if i >= len(s) {
		return kindEnd
	}
	return byteKinds[s[i]]
}

func isASCIILetterKind(k byteKind) bool { return k == kindUpper || k == kindLower }

// asciiNumberEnd matches \p{N}{1,max} at a digit at i; ok is false when
// fewer than max digits are followed by a non-ASCII rune, which may be a
// number too.
func asciiNumberEnd(s string, i, max int) (end int, ok bool) {
	j := i + 1
	for j < len(s) && j-i < max && byteKinds[s[j]] == kindDigit {
		j++
	}
	if j-i < max && kindAt(s, j) == kindNonASCII {
		return 0, false
	}
	return j, true
}

// asciiPunctEnd matches [^\s\p{L}\p{N}]+ at an ASCII punctuation byte at
// j, then the trailing line ends (and slashes where slashTrails) of
// punctEnd.
func asciiPunctEnd(s string, j int, slashTrails bool) int {
	j++
	for j < len(s) && byteKinds[s[j]] == kindPunct {
		j++
	}
	if j < len(s) && s[j] >= utf8.RuneSelf {
		j = runEnd(s, j, notSpaceLetterNumber)
	}
	for j < len(s) && (s[j] == '\r' || s[j] == '\n' || (slashTrails && s[j] == '/')) {
		j++
	}
	return j
}

// asciiWhitespaceEnd is whitespaceEnd for a run of ASCII whitespace at i;
// ok is false when the run reaches a non-ASCII rune, which may be
// whitespace too or decide the lookahead.
func asciiWhitespaceEnd(s string, i int) (end int, ok bool) {
	end, lastNewlineEnd := i, -1
scan:
	for end < len(s) {
		switch byteKinds[s[end]] {
		case kindLineEnd:
			lastNewlineEnd = end + 1
		case kindSpace:
		case kindNonASCII:
			return 0, false
		default:
			break scan
		}
		end++
	}
	switch {
	case lastNewlineEnd >= 0: // \s*[\r\n]+ backtracks to the last line break
		return lastNewlineEnd, true
	case end == len(s): // \s+(?!\S) at the end of the text
		return end, true
	case end-1 > i: // \s+(?!\S) leaves the last space to the next word
		return end - 1, true
	default: // \s+
		return end, true
	}
}

// asciiSpaceOrPunctEnd matches at a space, tab or punctuation byte at i
// that no word follows: ` ?[^\s\p{L}\p{N}]+[\r\n/]*`, then the whitespace
// alternatives. next is the kind of s[i+1].
func asciiSpaceOrPunctEnd(s string, i int, next byteKind, slashTrails bool) (end int, ok bool) {
	switch {
	case byteKinds[s[i]] == kindPunct:
		return asciiPunctEnd(s, i, slashTrails), true
	case s[i] == ' ' && next == kindPunct:
		return asciiPunctEnd(s, i+1, slashTrails), true
	}
	return asciiWhitespaceEnd(s, i)
}

// matchASCII is matchAt where ASCII decides the match; see the top of
// match_ascii.go.
func (m o200kMatcher) matchASCII(s string, i int) (end int, ok bool) {
	switch k := byteKinds[s[i]]; k {
	case kindUpper, kindLower:
		return m.asciiWordEnd(s, i)
	case kindDigit:
		return asciiNumberEnd(s, i, 3)
	case kindLineEnd: // neither the optional prefix nor the optional space
		return asciiWhitespaceEnd(s, i)
	case kindSpace, kindPunct:
		// The word alternatives with this byte as their prefix come
		// first; a non-ASCII rune after it may start a word.
		switch next := kindAt(s, i+1); next {
		case kindUpper, kindLower:
			return m.asciiWordEnd(s, i+1)
		case kindNonASCII:
			return 0, false
		default:
			return asciiSpaceOrPunctEnd(s, i, next, m.slashTrails)
		}
	}
	return 0, false
}

// asciiWordEnd matches the word alternatives at an ASCII letter at q,
// contraction included: [upper]*[lower]+ where lowercase letters follow
// the capitals, else [upper]+ (lower* is empty before an ASCII byte that
// is not lowercase). A non-ASCII rune right after the capitals may be
// upper- or lower-class: undecided.
func (m o200kMatcher) asciiWordEnd(s string, q int) (end int, ok bool) {
	j := q
	for j < len(s) && s[j]-'A' < 26 {
		j++
	}
	switch kindAt(s, j) {
	case kindNonASCII:
		return 0, false
	case kindLower:
		j++
		for j < len(s) && s[j]-'a' < 26 {
			j++
		}
		if j < len(s) && s[j] >= utf8.RuneSelf {
			j = runEnd(s, j, m.lower())
		}
	}
	if j < len(s) && s[j] == '\'' {
		j += contractionLen(s, j)
	}
	return j, true
}

// matchASCII is matchAt where ASCII decides the match; see the top of
// match_ascii.go.
func (m cl100kMatcher) matchASCII(s string, i int) (end int, ok bool) {
	switch k := byteKinds[s[i]]; k {
	case kindUpper, kindLower:
		return asciiLettersEnd(s, i, letters), true
	case kindDigit:
		return asciiNumberEnd(s, i, m.maxDigits)
	case kindLineEnd:
		return asciiWhitespaceEnd(s, i)
	case kindSpace, kindPunct:
		// matchAt tried the contractions first.
		switch next := kindAt(s, i+1); next {
		case kindUpper, kindLower:
			return asciiLettersEnd(s, i+1, letters), true
		case kindNonASCII:
			return 0, false
		default:
			return asciiSpaceOrPunctEnd(s, i, next, false)
		}
	}
	return 0, false
}

// asciiLettersEnd matches a run of set, which holds the ASCII letters,
// at an ASCII letter at q.
func asciiLettersEnd(s string, q int, set classMask) int {
	j := q + 1
	for j < len(s) && isASCIILetterKind(byteKinds[s[j]]) {
		j++
	}
	if j < len(s) && s[j] >= utf8.RuneSelf {
		j = runEnd(s, j, set)
	}
	return j
}

// matchASCII is matchAt where ASCII decides the match; see the top of
// match_ascii.go. ASCII punctuation is exactly ASCII's \p{P} and \p{S}
// (isASCIIPunct); the rest of kindPunct, the controls, can be the optional
// prefix of a word but match nothing alone.
func (deepseekWordMatcher) matchASCII(s string, i int) (end int, ok bool) {
	// matchAt tried [!"#...~][A-Za-z]+ first.
	b, k := s[i], byteKinds[s[i]]
	switch k {
	case kindNonASCII:
		return 0, false
	case kindUpper, kindLower:
		return asciiLettersEnd(s, i, lettersAndMarks), true
	}
	next := kindAt(s, i+1)
	if k != kindLineEnd && !isASCIIPunct(b) { // [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
		switch next {
		case kindUpper, kindLower:
			return asciiLettersEnd(s, i+1, lettersAndMarks), true
		case kindNonASCII:
			return 0, false
		}
	}
	switch {
	case isASCIIPunct(b): // ` ?[\p{P}\p{S}]+[\r\n]*`
		return asciiPunctSymbolEnd(s, i), true
	case b == ' ' && next == kindPunct && isASCIIPunct(s[i+1]):
		return asciiPunctSymbolEnd(s, i+1), true
	case k == kindSpace || k == kindLineEnd:
		return asciiWhitespaceEnd(s, i)
	}
	return -1, true // a digit or a control before no letter
}

// asciiPunctSymbolEnd matches [\p{P}\p{S}]+[\r\n]* at an ASCII
// punctuation byte at j.
func asciiPunctSymbolEnd(s string, j int) int {
	j++
	for j < len(s) && isASCIIPunct(s[j]) {
		j++
	}
	if j < len(s) && s[j] >= utf8.RuneSelf {
		j = runEnd(s, j, punctAndSymbols)
	}
	for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
		j++
	}
	return j
}
