package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Encoding is a text encoded with special tokens recognised (as a chat
// template's output is encoded), with what it takes to encode a text that
// shares a beginning with it without starting over: a conversation's next
// prompt is its last prompt, the model's answer and the next message.
type Encoding struct {
	Text string
	IDs  []int
	// Reused is how many of IDs were taken from the encoding it extends.
	Reused int
	marks  []restart // in text order
}

// restart is a point where encoding may begin again: an added token matched
// in the raw text ends at offset, after ids ids. The text from offset on
// encodes alone to the ids from ids on when nothing before offset can change
// how it is cut (see lastRestart).
type restart struct{ offset, ids int }

// Extend returns the encoding of text, equal to Encode(text, true), reusing
// the ids of prev (nil: none) up to the last point of the beginning they
// share where encoding can restart: only the rest of text is encoded. prev
// is not changed.
func (t *Tokenizer) Extend(prev *Encoding, text string) *Encoding {
	return t.extend(prev, text, false)
}

// ExtendOver is Extend for a caller done with prev: the encoding's ids and
// restart points are written into prev's arrays, over what follows the
// part they keep, so that a conversation's prompts, turn after turn, do not
// each copy the ids of all the turns before into an array of their own
// (most of what Extend cost). prev, its IDs included, must not be used
// after.
func (t *Tokenizer) ExtendOver(prev *Encoding, text string) *Encoding {
	return t.extend(prev, text, true)
}

// ExtendOverShared is ExtendOver for a caller that knows how many of
// text's first bytes are prev's, shared: text may have been written over
// prev.Text in place, and prev.Text is not read past them (nor compared
// with text).
func (t *Tokenizer) ExtendOverShared(prev *Encoding, text string, shared int) *Encoding {
	return t.extendShared(prev, text, true, shared)
}

// extend is Extend, writing over prev's arrays when over is set.
func (t *Tokenizer) extend(prev *Encoding, text string, over bool) *Encoding {
	shared := 0
	if prev != nil {
		shared = commonPrefix(prev.Text, text)
	}
	return t.extendShared(prev, text, over, shared)
}

// extendShared is extend with text's first shared bytes known to be prev's.
func (t *Tokenizer) extendShared(prev *Encoding, text string, over bool, shared int) *Encoding {
	enc := &Encoding{Text: text}
	if t.kimiChunking && len(text) > kimiMaxRun && !kimiOneChunk(text) {
		// Kimi's chunks are encoded apart, so a restart inside a chunk
		// is not one in the whole text: encode it whole, and keep no
		// marks, so that no later text restarts from it either.
		enc.IDs = t.AppendEncode(nil, text, true)
		return enc
	}
	from := restart{}
	var ids []int
	switch {
	case prev == nil:
		ids = make([]int, 0, len(text)/3+8)
	case over:
		from = t.lastRestart(prev, shared)
		enc.marks = prev.marks[:keptMarks(prev, from)]
		ids = prev.IDs[:from.ids]
	default:
		from = t.lastRestart(prev, shared)
		enc.marks = append(make([]restart, 0, len(prev.marks)+16), prev.marks[:keptMarks(prev, from)]...)
		ids = make([]int, from.ids, from.ids+(len(text)-from.offset)/3+8)
		copy(ids, prev.IDs[:from.ids])
	}
	enc.Reused = from.ids
	e := t.newEncoder(encoder{dst: ids, parseSpecial: true, marks: &enc.marks, base: from.offset, coldCache: true})
	defer e.release()
	e.encodeChunk(text[from.offset:])
	enc.IDs = e.dst
	return enc
}

// lastRestart is the last restart point of prev that text, which shares
// prev's first shared bytes, may restart at; the zero restart (the start)
// when there is none. At a restart after a match, the matcher's choices up
// to it must not depend on what follows the shared bytes, and the text after
// it must be cut as it would be alone:
//   - the matcher reads at most maxLen bytes past where a match starts
//     (and one rune more for single_word and rstrip checks), so everything
//     it read before the restart lies within the shared bytes;
//   - the rune at the restart is not white space, so no rstrip could have
//     swallowed more;
//   - the rune before it is no word character, so that a single_word token
//     starting there matches as it would at the start of a text.
func (t *Tokenizer) lastRestart(prev *Encoding, shared int) restart {
	m := t.rawSpecial
	if m == nil {
		return restart{}
	}
	for i := len(prev.marks) - 1; i >= 0; i-- {
		r := prev.marks[i]
		if r.offset+m.maxLen+utf8.UTFMax > shared {
			continue
		}
		next, _ := utf8.DecodeRuneInString(prev.Text[r.offset:])
		before, _ := utf8.DecodeLastRuneInString(prev.Text[:r.offset])
		if !unicode.IsSpace(next) && !isWordRune(before) {
			return r
		}
	}
	return restart{}
}

// keptMarks is how many of prev's restart points lie up to from, where
// encoding restarts.
func keptMarks(prev *Encoding, from restart) int {
	k := 0
	for k < len(prev.marks) && prev.marks[k].offset <= from.offset {
		k++
	}
	return k
}

// commonPrefix is the length of the longest common beginning of a and b.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	// Prompts share most of their bytes: compare blocks that double while
	// they match, then halve into the one that differs, so that the bytes
	// are compared a few large blocks at a time (a call each), then one by
	// one in the last 64. Before each halving, the first difference (or n)
	// lies in [i, i+2*step).
	i, step := 0, 64
	for i+step <= n && a[i:i+step] == b[i:i+step] {
		i += step
		step *= 2
	}
	for step > 64 {
		step /= 2
		if i+step <= n && a[i:i+step] == b[i:i+step] {
			i += step
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// kimiOneChunk reports whether Kimi's chunking leaves text whole.
func kimiOneChunk(text string) bool {
	chunks := 0
	forEachKimiChunk(text, func(string) { chunks++ })
	return chunks == 1
}
