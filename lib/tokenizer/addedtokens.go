package tokenizer

import (
	"strings"
	"unicode"
)

// AddedToken is a token matched in the text before pre-tokenization, as
// tokenizer.json's added_tokens and tokenizer_config.json's
// added_tokens_decoder describe them.
type AddedToken struct {
	ID         int
	Content    string
	Special    bool
	LStrip     bool // the match swallows whitespace on its left
	RStrip     bool // the match swallows whitespace on its right
	SingleWord bool // the match must not touch word characters
	Normalized bool // matched in the normalized text rather than the raw text
}

// addedTokenMatcher finds added tokens leftmost-longest, like the
// Aho-Corasick automaton of HF's added_vocabulary.rs, with a byte trie.
type addedTokenMatcher struct {
	nodes  []trieNode
	tokens []AddedToken
	// first marks the bytes a token can start with, so that most of the
	// text is skipped with one table read per byte.
	first [256]bool
	// firstBytes are the bytes of first when there are at most
	// maxFirstBytes of them (every model at hand: '<', and '[' for
	// Kimi's): then the text is skipped with strings.IndexByte, many bytes
	// at a time.
	firstBytes []byte
	// maxLen is the longest token's length in bytes: how far past a
	// match's start the matcher may read.
	maxLen int
}

// trieNode is a node of the byte trie. Its children are indexed by byte
// less lo, over the range of bytes that have one, so that a step is an
// array read: a map lookup a byte made the walk over a chat template's
// special tokens a quarter of encoding a conversation's turn.
type trieNode struct {
	lo    byte
	next  []int32 // child node by byte-lo; 0 (the root, no one's child) for none
	token int32   // index into tokens, or -1
}

func (n *trieNode) child(c byte) int32 {
	if i := int(c) - int(n.lo); i >= 0 && i < len(n.next) {
		return n.next[i]
	}
	return 0
}

// addChild makes room for c in the node's range and sets its child.
func (n *trieNode) addChild(c byte, child int32) {
	switch {
	case len(n.next) == 0:
		n.lo = c
	case c < n.lo:
		n.next = append(make([]int32, int(n.lo)-int(c)), n.next...)
		n.lo = c
	}
	if i := int(c) - int(n.lo); i >= len(n.next) {
		n.next = append(n.next, make([]int32, i+1-len(n.next))...)
	}
	n.next[int(c)-int(n.lo)] = child
}

func newAddedTokenMatcher(tokens []AddedToken) *addedTokenMatcher {
	if len(tokens) == 0 {
		return nil
	}
	m := &addedTokenMatcher{nodes: []trieNode{{token: -1}}, tokens: tokens}
	for ti, t := range tokens {
		if t.Content == "" {
			continue
		}
		m.first[t.Content[0]] = true
		m.maxLen = max(m.maxLen, len(t.Content))
		n := int32(0)
		for i := 0; i < len(t.Content); i++ {
			c := t.Content[i]
			child := m.nodes[n].child(c)
			if child == 0 {
				child = int32(len(m.nodes))
				m.nodes[n].addChild(c, child)
				m.nodes = append(m.nodes, trieNode{token: -1})
			}
			n = child
		}
		m.nodes[n].token = int32(ti)
	}
	for c, ok := range m.first {
		if ok {
			m.firstBytes = append(m.firstBytes, byte(c))
		}
	}
	if len(m.firstBytes) > maxFirstBytes {
		m.firstBytes = nil
	}
	return m
}

// maxFirstBytes is how many first bytes next looks for with one
// strings.IndexByte each.
const maxFirstBytes = 4

// next returns the first place at or after i where a token may start, or
// len(s).
func (m *addedTokenMatcher) next(s string, i int) int {
	if m.firstBytes != nil {
		// Each byte is looked for only before the nearest one found.
		next := len(s)
		for _, c := range m.firstBytes {
			if k := strings.IndexByte(s[i:next], c); k >= 0 {
				next = i + k
			}
		}
		return next
	}
	for i < len(s) && !m.first[s[i]] {
		i++
	}
	return i
}

// longestAt returns the longest token starting at i and its length.
func (m *addedTokenMatcher) longestAt(s string, i int) (token int32, length int) {
	token, n := -1, int32(0)
	for j := i; j < len(s); j++ {
		if n = m.nodes[n].child(s[j]); n == 0 {
			break
		}
		if t := m.nodes[n].token; t >= 0 {
			token, length = t, j+1-i
		}
	}
	return token, length
}

// split cuts s into text stretches and added-token matches, in order.
// Matches that break single_word are treated as text; lstrip and rstrip
// widen a match over the whitespace beside it. token hears each match's id
// and where in s the match (with what it swallowed) ends.
func (m *addedTokenMatcher) split(s string, text func(string), token func(id, end int)) {
	if m == nil {
		text(s)
		return
	}
	textStart := 0
	for i := m.next(s, 0); i < len(s); i = m.next(s, i) {
		ti, n := m.longestAt(s, i)
		if ti < 0 {
			i++
			continue
		}
		t := m.tokens[ti]
		start, end := i, i+n
		if t.SingleWord && (endsWithWordRune(s[:start]) || startsWithWordRune(s[end:])) {
			i++
			continue
		}
		if t.LStrip {
			for start > textStart {
				r, size := lastRune(s[:start])
				if !unicode.IsSpace(r) {
					break
				}
				start -= size
			}
		}
		if t.RStrip {
			for end < len(s) {
				r, size := decodeRune(s, end)
				if !unicode.IsSpace(r) {
					break
				}
				end += size
			}
		}
		if textStart < start {
			text(s[textStart:start])
		}
		token(t.ID, end)
		i, textStart = end, end
	}
	if textStart < len(s) {
		text(s[textStart:])
	}
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r)
}

func startsWithWordRune(s string) bool {
	if s == "" {
		return false
	}
	r, _ := decodeRune(s, 0)
	return isWordRune(r)
}

func endsWithWordRune(s string) bool {
	if s == "" {
		return false
	}
	r, _ := lastRune(s)
	return isWordRune(r)
}
