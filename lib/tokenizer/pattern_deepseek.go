package tokenizer

import "unicode/utf8"

// DeepSeek-V3 pre-tokenizes with a Sequence of three Isolated Splits:
// \p{N}{1,3}, then runs of CJK ideographs and kana, then deepseekWordMatcher.

// numberMatcher is \p{N}{1,max}.
type numberMatcher struct{ max int }

func (m *numberMatcher) matchAt(s string, i int) int { return numberEnd(s, i, m.max) }

func (m *numberMatcher) nextMatch(s string, i int) (int, int) {
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c-'0' < 10 {
				return i, numberEnd(s, i, m.max)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if isNumber(classOf(r)) {
			return i, numberEnd(s, i, m.max)
		}
		i += n
	}
	return -1, -1
}

// cjkKanaMatcher is [\x{4e00}-\x{9fa5}\x{3040}-\x{309f}\x{30a0}-\x{30ff}]+.
type cjkKanaMatcher struct{}

func isCJKKana(r rune) bool {
	return (r >= 0x4e00 && r <= 0x9fa5) || (r >= 0x3040 && r <= 0x30ff)
}

func (m *cjkKanaMatcher) nextMatch(s string, i int) (int, int) {
	for i < len(s) {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if isCJKKana(r) {
			return i, m.matchAt(s, i)
		}
		i += n
	}
	return -1, -1
}

func (*cjkKanaMatcher) matchAt(s string, i int) int {
	j := i
	for j < len(s) {
		r, n := decodeRune(s, j)
		if !isCJKKana(r) {
			break
		}
		j += n
	}
	if j == i {
		return -1
	}
	return j
}

// deepseekWordMatcher is
//
//	[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
//	 ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
type deepseekWordMatcher struct{}

func isASCIIPunct(b byte) bool {
	return (b >= '!' && b <= '/') || (b >= ':' && b <= '@') || (b >= '[' && b <= '`') || (b >= '{' && b <= '~')
}

func isASCIILetter(b byte) bool { return (b|0x20) >= 'a' && (b|0x20) <= 'z' }

func isLetterOrMark(c runeClass) bool { return c&(classLetter|classM) != 0 }

// lettersAndMarks is [\p{L}\p{M}], punctAndSymbols [\p{P}\p{S}].
var (
	lettersAndMarks = classMask{any: classLetter | classM}
	punctAndSymbols = classMask{any: classP | classS}
)

func (m *deepseekWordMatcher) matchAt(s string, i int) int {
	if isASCIIPunct(s[i]) && i+1 < len(s) && isASCIILetter(s[i+1]) {
		j := i + 1
		for j < len(s) && isASCIILetter(s[j]) {
			j++
		}
		return j
	}
	if end, ok := m.matchASCII(s, i); ok {
		return end
	}
	r, c, n := runeAt(s, i)
	if !isCRLF(r) && c&(classLetter|classP|classS) == 0 {
		if _, next, _ := runeAt(s, i+n); i+n < len(s) && isLetterOrMark(next) {
			return runEnd(s, i+n, lettersAndMarks)
		}
	}
	if isLetterOrMark(c) {
		return runEnd(s, i, lettersAndMarks)
	}
	if e := punctEnd(s, i, punctAndSymbols, false); e >= 0 {
		return e
	}
	return whitespaceEnd(s, i)
}
