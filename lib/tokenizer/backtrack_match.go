package tokenizer

import "unicode/utf8"

// backtrackMatcher runs a parsed regex with backtracking, trying
// alternatives left to right: the semantics of Oniguruma and fancy-regex.
type backtrackMatcher struct {
	root *reNode
}

// newBacktrackMatcher compiles pattern for the generic fallback.
func newBacktrackMatcher(pattern string) (*backtrackMatcher, error) {
	root, err := parseRegex(pattern)
	if err != nil {
		return nil, err
	}
	return &backtrackMatcher{root: root}, nil
}

// matchAt returns the end of the first match at i. An empty match counts
// as no match, so that splitting always makes progress.
func (m *backtrackMatcher) matchAt(s string, i int) int {
	end := -1
	matchNode(m.root, s, i, func(j int) bool {
		end = j
		return true
	})
	if end == i {
		return -1
	}
	return end
}

// matchNode matches n at i and calls k with each possible end, in
// preference order, until k accepts one.
func matchNode(n *reNode, s string, i int, k func(int) bool) bool {
	switch n.kind {
	case reClass:
		if i >= len(s) {
			return false
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		return n.class(r) && k(i+size)
	case reEnd:
		return i == len(s) && k(i)
	case reSeq:
		return matchSeq(n.subs, s, i, k)
	case reAlt:
		for _, b := range n.subs {
			if matchNode(b, s, i, k) {
				return true
			}
		}
		return false
	case reLookahead:
		found := matchNode(n.subs[0], s, i, func(int) bool { return true })
		if found == n.negate {
			return false
		}
		return k(i)
	case reRepeat:
		if n.greedyNo {
			return matchPossessive(n, s, i, k)
		}
		return matchRepeat(n, s, i, 0, k)
	}
	return false
}

func matchSeq(items []*reNode, s string, i int, k func(int) bool) bool {
	if len(items) == 0 {
		return k(i)
	}
	return matchNode(items[0], s, i, func(j int) bool { return matchSeq(items[1:], s, j, k) })
}

// matchRepeat tries one more repetition before stopping (greedy) or after
// (lazy); a repetition that consumes nothing ends the loop.
func matchRepeat(n *reNode, s string, i, count int, k func(int) bool) bool {
	more := func() bool {
		if n.max >= 0 && count >= n.max {
			return false
		}
		return matchNode(n.subs[0], s, i, func(j int) bool {
			return j != i && matchRepeat(n, s, j, count+1, k)
		})
	}
	enough := count >= n.min
	if n.lazy {
		return (enough && k(i)) || more()
	}
	return more() || (enough && k(i))
}

// matchPossessive takes as many repetitions as possible, each its first
// match, and never gives any back.
func matchPossessive(n *reNode, s string, i int, k func(int) bool) bool {
	count := 0
	for n.max < 0 || count < n.max {
		next := -1
		matchNode(n.subs[0], s, i, func(j int) bool {
			next = j
			return true
		})
		if next < 0 || next == i {
			break
		}
		i = next
		count++
	}
	return count >= n.min && k(i)
}
