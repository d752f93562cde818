package tokenizer

// cl100kMatcher is the cl100k-style pattern Qwen3 (maxDigits 1) and Llama 3
// (maxDigits 3) use:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
type cl100kMatcher struct {
	maxDigits int
}

func (m *cl100kMatcher) matchAt(s string, i int) int {
	if n := contractionLen(s, i); n > 0 {
		return i + n
	}
	if end, ok := m.matchASCII(s, i); ok {
		return end
	}
	r, c, n := runeAt(s, i)
	if !isCRLF(r) && c&(classLetter|classN) == 0 {
		if _, next, _ := runeAt(s, i+n); i+n < len(s) && isLetter(next) {
			return runEnd(s, i+n, letters)
		}
	}
	if isLetter(c) {
		return runEnd(s, i, letters)
	}
	if isNumber(c) {
		return numberEnd(s, i, m.maxDigits)
	}
	if e := punctEnd(s, i, notSpaceLetterNumber, false); e >= 0 {
		return e
	}
	return whitespaceEnd(s, i)
}
