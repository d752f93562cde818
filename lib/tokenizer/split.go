package tokenizer

// matcher is one hand-written pre-tokenizer regex: matchAt reports where a
// match starting exactly at i ends, or -1 when the regex cannot match there.
// Implementations follow backtracking (leftmost-first alternation) semantics,
// which is what Oniguruma (HF tokenizers) and fancy-regex (tiktoken) use.
type matcher interface {
	matchAt(s string, i int) int
}

// finder is implemented by matchers that can only match at a few places
// and find the next one faster than trying matchAt at every rune.
type finder interface {
	// nextMatch returns the first match at or after i, or start -1.
	nextMatch(s string, i int) (start, end int)
}

// splitIsolated cuts s the way HF's Split pre-tokenizer with behaviour
// Isolated does: every match is a piece, and so is every non-empty stretch
// between matches. Each piece goes to the next stage, the last stage emits.
func splitIsolated(s string, stages []matcher, emit func(piece string)) {
	if len(s) == 0 {
		return
	}
	if len(stages) == 0 {
		emit(s)
		return
	}
	m, rest := stages[0], stages[1:]
	// The last stage emits its pieces itself: a call less per piece.
	piece := emit
	if len(rest) > 0 {
		piece = func(p string) { splitIsolated(p, rest, emit) }
	}
	if f, ok := m.(finder); ok {
		gapStart := 0
		for {
			start, end := f.nextMatch(s, gapStart)
			if start < 0 {
				break
			}
			if gapStart < start {
				piece(s[gapStart:start])
			}
			piece(s[start:end])
			gapStart = end
		}
		if gapStart < len(s) {
			piece(s[gapStart:])
		}
		return
	}
	gapStart := 0
	for i := 0; i < len(s); {
		end := m.matchAt(s, i)
		if end < 0 {
			_, n := decodeRune(s, i)
			i += n
			continue
		}
		if gapStart < i {
			piece(s[gapStart:i])
		}
		piece(s[i:end])
		i = end
		gapStart = end
	}
	if gapStart < len(s) {
		piece(s[gapStart:])
	}
}
