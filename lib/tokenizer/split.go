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

// pieceSink takes the pieces that splitIsolated cuts, as their start and
// end in its text: offsets, unlike the piece itself, hold no pointer, so
// the encoder queues them without write barriers and without clearing its
// queue after each batch (see pieceQueuer).
type pieceSink interface {
	piece(start, end int)
}

// splitIsolated cuts s the way HF's Split pre-tokenizer with behaviour
// Isolated does: every match is a piece, and so is every non-empty stretch
// between matches. Each piece goes to the next stage, the last stage hands
// it to sink.
func splitIsolated(s string, stages []matcher, sink pieceSink) {
	splitAt(s, 0, stages, sink)
}

// splitAt is splitIsolated for s at offset base of the text that sink's
// offsets are in.
func splitAt(s string, base int, stages []matcher, sink pieceSink) {
	if len(s) == 0 {
		return
	}
	if len(stages) == 0 {
		sink.piece(base, base+len(s))
		return
	}
	m, rest := stages[0], stages[1:]
	// The last stage hands its pieces to sink itself, a call less per
	// piece than one more splitAt each.
	piece := func(start, end int) {
		if len(rest) == 0 {
			sink.piece(base+start, base+end)
			return
		}
		splitAt(s[start:end], base+start, rest, sink)
	}
	if f, ok := m.(finder); ok {
		gapStart := 0
		for {
			start, end := f.nextMatch(s, gapStart)
			if start < 0 {
				break
			}
			if gapStart < start {
				piece(gapStart, start)
			}
			piece(start, end)
			gapStart = end
		}
		if gapStart < len(s) {
			piece(gapStart, len(s))
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
			piece(gapStart, i)
		}
		piece(i, end)
		i = end
		gapStart = end
	}
	if gapStart < len(s) {
		piece(gapStart, len(s))
	}
}
