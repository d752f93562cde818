package tokenizer

import (
	"slices"
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
	// onlyFirst is the one byte every token starts with, or -1: then the
	// text is skipped with strings.IndexByte, many bytes at a time (every
	// model at hand starts its added tokens with '<').
	onlyFirst int
	// maxLen is the longest token's length in bytes: how far past a
	// match's start the matcher may read.
	maxLen int
}

type trieNode struct {
	next  map[byte]int32
	token int32 // index into tokens, or -1
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
			child, ok := m.nodes[n].next[c]
			if !ok {
				if m.nodes[n].next == nil {
					m.nodes[n].next = make(map[byte]int32)
				}
				child = int32(len(m.nodes))
				m.nodes[n].next[c] = child
				m.nodes = append(m.nodes, trieNode{token: -1})
			}
			n = child
		}
		m.nodes[n].token = int32(ti)
	}
	m.onlyFirst = -1
	if i := slices.Index(m.first[:], true); i >= 0 && !slices.Contains(m.first[i+1:], true) {
		m.onlyFirst = i
	}
	return m
}

// next returns the first place at or after i where a token may start, or
// len(s).
func (m *addedTokenMatcher) next(s string, i int) int {
	if m.onlyFirst >= 0 {
		if k := strings.IndexByte(s[i:], byte(m.onlyFirst)); k >= 0 {
			return i + k
		}
		return len(s)
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
		child, ok := m.nodes[n].next[s[j]]
		if !ok {
			break
		}
		n = child
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
