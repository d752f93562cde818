package tokenizer

import (
	"fmt"
	"sort"
	"strings"
)

// Tokenizer encodes text to token ids and back. It is immutable after Load
// and safe for concurrent use by several goroutines.
type Tokenizer struct {
	model *bpeModel
	// stages are the Split pre-tokenizers, applied in order.
	stages []matcher
	// normalize is the normalizer (NFC), or nil.
	normalize func(string) string
	// Added tokens matched in the raw text and, after normalizing, in the
	// normalized text; the plain matchers leave special tokens out.
	rawSpecial, rawPlain   *addedTokenMatcher
	normSpecial, normPlain *addedTokenMatcher
	// kimiChunking cuts the text as tokenization_kimi.py does before encoding.
	kimiChunking bool

	added          []AddedToken
	addedByContent map[string]int
	addedByID      map[int]string
	// addedBits marks the ids of addedByID, one bit an id: Decode asks
	// for every id, and most are no added token.
	addedBits []uint64
	vocabSize int
	// byteLevelSpelling tells that vocabulary entries are spelled in the
	// byte-level alphabet (tokenizer.json), which TokenID accepts.
	byteLevelSpelling bool
	config            Config
}

// Encode returns the ids of text without BOS or EOS (HF's
// add_special_tokens=false). With parseSpecial, added-token strings in the
// text become their ids (HF's default, tiktoken's allowed_special="all");
// without it special tokens are ordinary text while non-special added
// tokens such as Qwen3's <think> are still matched (tiktoken's
// encode_ordinary for tiktoken models).
func (t *Tokenizer) Encode(text string, parseSpecial bool) []int {
	return t.AppendEncode(make([]int, 0, len(text)/3+1), text, parseSpecial)
}

// AppendEncode appends the ids of text to dst, as Encode.
func (t *Tokenizer) AppendEncode(dst []int, text string, parseSpecial bool) []int {
	e := t.newEncoder(encoder{dst: dst, parseSpecial: parseSpecial})
	defer e.release()
	if t.kimiChunking {
		forEachKimiChunk(text, e.encodeChunk)
	} else {
		e.encodeChunk(text)
	}
	return e.dst
}

// encoder is the state of one Encode call.
type encoder struct {
	t            *Tokenizer
	dst          []int
	sc           *bpeScratch
	parseSpecial bool
	// marks, when not nil, collects the restart points of the text (see
	// Extend), whose offsets start at base.
	marks *[]restart
	base  int
	// coldCache tells an encode that runs between other work, as Extend's
	// of a conversation's turn does, when the local cache is out of the
	// processor's caches: its pieces are looked up in batches (see
	// flushPieces).
	coldCache bool
	// text is what the pre-tokenizer is cutting: its pieces come as
	// offsets into it.
	text string
}

// newEncoder returns the state of one encode, init with t and a pooled
// scratch, kept in the scratch itself: the pre-tokenizer hands the
// encoder its pieces as a pieceSink, an interface through which its
// pointer escapes, and an encoder on the stack would be moved to the heap,
// an allocation per encode.
func (t *Tokenizer) newEncoder(init encoder) *encoder {
	sc := t.model.scratch()
	e := &sc.enc
	*e = init
	e.t, e.sc = t, sc
	return e
}

// release gives the encoder's scratch back.
func (e *encoder) release() { e.t.model.release(e.sc) }

func (e *encoder) appendID(id, _ int) { e.dst = append(e.dst, id) }

// appendRawID appends the id of an added token matched in the raw text,
// and with marks, notes where encoding may restart after it (see Extend).
func (e *encoder) appendRawID(id, end int) {
	e.dst = append(e.dst, id)
	if e.marks != nil {
		*e.marks = append(*e.marks, restart{offset: e.base + end, ids: len(e.dst)})
	}
}

// pieceAppender and pieceQueuer are an encoder as the pre-tokenizer's
// pieceSink: the first looks each piece up as it comes, the second in
// batches (coldCache). Each has the work in its own piece method, which
// the interface calls directly, where a method value such as
// e.appendPiece went through a generated wrapper, a call more per piece.
type (
	pieceAppender encoder
	pieceQueuer   encoder
)

// piece appends the ids of the pre-tokenized piece e.text[start:end]: from
// the goroutine's local cache for a short piece, else from the vocabulary
// (when whole pieces come first), the shared cache, or merging, in that
// order. A hit in the local cache, what most pieces of prose are, costs
// this call and no other.
func (a *pieceAppender) piece(start, end int) {
	e := (*encoder)(a)
	piece, m := e.text[start:end], e.t.model
	if n := len(piece); n >= 2 && n <= maxLocalPiece {
		// The hit or miss of appendQueued, written out: a shared
		// function is past the inliner's budget, and its call cost 4.4%
		// of BenchmarkEncodeProse's instructions.
		k0, k1 := localKey(piece)
		s := &e.sc.local.slots[localSlotOf(k0, k1, n)]
		if s.holds(k0, k1, n) {
			e.dst = s.appendIDs(e.dst)
			return
		}
		e.dst = m.appendLocalMiss(e.dst, piece, s, k0, k1, e.sc)
		return
	}
	e.dst = m.appendUnlocal(e.dst, piece, e.sc)
}

func (e *encoder) encodeChunk(text string) {
	raw := e.t.rawPlain
	if e.parseSpecial {
		raw = e.t.rawSpecial
	}
	raw.split(text, e.encodeUnmatched, e.appendRawID)
}

// encodeUnmatched normalizes text outside raw added tokens, matches the
// normalized added tokens, then pre-tokenizes and merges.
func (e *encoder) encodeUnmatched(text string) {
	if e.t.normalize != nil {
		text = e.t.normalize(text)
	}
	norm := e.t.normPlain
	if e.parseSpecial {
		norm = e.t.normSpecial
	}
	norm.split(text, e.encodeOrdinary, e.appendID)
}

func (e *encoder) encodeOrdinary(text string) {
	e.text = text
	if !e.coldCache {
		splitIsolated(text, e.t.stages, (*pieceAppender)(e))
		return
	}
	splitIsolated(text, e.t.stages, (*pieceQueuer)(e))
	e.flushPieces()
}

// pieceBatch is how many pieces an encode with coldCache looks up
// together.
const pieceBatch = 64

// queuedPiece is a piece of e.text awaiting lookup and, when the local
// cache takes it, its key and slot, worked out while the piece is at
// hand. It holds no pointer, so that the pooled queue needs neither
// clearing after each batch to let the text go nor write barriers.
type queuedPiece struct {
	start, end int
	k0, k1     uint64
	slot       int32 // -1: one byte, or longer than maxLocalPiece
	// id is the piece's id when flushPieces' first pass found the piece
	// in its slot with one id, what most pieces of prose are; else -1.
	id int32
}

// piece holds the piece e.text[start:end] until pieceBatch of them are
// looked up at once.
func (qr *pieceQueuer) piece(start, end int) {
	e := (*encoder)(qr)
	sc := e.sc
	// Written in place, not built on the stack and copied in.
	q := &sc.queue[sc.queued]
	q.start, q.end, q.slot = start, end, -1
	if n := end - start; n >= 2 && n <= maxLocalPiece {
		q.k0, q.k1 = localKey(e.text[start:end])
		q.slot = int32(localSlotOf(q.k0, q.k1, n))
	}
	if sc.queued++; sc.queued == pieceBatch {
		e.flushPieces()
	}
}

// flushPieces appends the ids of the queued pieces, in order. A first
// pass reads the local-cache slot of each: reads that do not wait for one
// another, so that the processor overlaps their cache misses, where each
// lookup behind a piece's scan would pay its own. In generate --turns
// all's profile, these misses were a third of encoding each turn; on a
// warm cache the batch costs more than it saves, so encodes of whole texts
// go piece by piece (pieceAppender). The first pass also notes the id of a
// piece its slot holds, so that the second appends it without looking
// again: only the other pieces take the full lookup (appendQueued). An id
// noted stays right even when a miss before it refills its slot; a miss
// may have been filled since, which appendQueued looks for.
func (e *encoder) flushPieces() {
	queue, local := e.sc.queue[:e.sc.queued], e.sc.local
	for i := range queue {
		q := &queue[i]
		q.id = -1
		if q.slot < 0 {
			continue
		}
		if s := &local.slots[q.slot]; s.holds(q.k0, q.k1, q.end-q.start) && s.count == 1 {
			q.id = int32(s.ids[0])
		}
	}
	dst := e.dst
	for i := range queue {
		if q := &queue[i]; q.id >= 0 {
			dst = append(dst, int(q.id))
		} else {
			dst = e.appendQueued(dst, q)
		}
	}
	e.dst = dst
	e.sc.queued = 0
}

// appendQueued appends the ids of a queued piece that flushPieces' first
// pass did not find with one id in its slot.
func (e *encoder) appendQueued(dst []int, q *queuedPiece) []int {
	piece, m, sc := e.text[q.start:q.end], e.t.model, e.sc
	if q.slot < 0 {
		return m.appendUnlocal(dst, piece, sc)
	}
	s := &sc.local.slots[q.slot]
	if s.holds(q.k0, q.k1, len(piece)) {
		return s.appendIDs(dst)
	}
	return m.appendLocalMiss(dst, piece, s, q.k0, q.k1, sc)
}

// Decode returns the text of ids. Added tokens give their content; other
// ids give their bytes, so a sequence cut inside a multi-byte character
// gives invalid UTF-8 rather than U+FFFD. An id outside the vocabulary is
// an error.
func (t *Tokenizer) Decode(ids []int) (string, error) {
	var b strings.Builder
	b.Grow(4 * len(ids)) // a few bytes a token
	for _, id := range ids {
		if uint(id) < uint(len(t.addedBits))*64 && t.addedBits[id/64]&(1<<(id%64)) != 0 {
			b.WriteString(t.addedByID[id])
			continue
		}
		if id < 0 || id >= len(t.model.tokenBytes) || !t.model.tokenOK[id] {
			return "", fmt.Errorf("tokenizer: id %d is not in the vocabulary (size %d)", id, t.vocabSize)
		}
		b.WriteString(t.model.tokenBytes[id])
	}
	return b.String(), nil
}

// VocabSize returns the highest id plus one, added and special tokens included.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// TokenID returns the id of an added or special token given by its content,
// or of a vocabulary entry given as its bytes or, for tokenizer.json models,
// in the file's byte-level spelling (e.g. "Ġhello" for " hello").
func (t *Tokenizer) TokenID(tok string) (int, bool) {
	if id, ok := t.addedByContent[tok]; ok {
		return id, true
	}
	if t.byteLevelSpelling {
		if raw, ok := fromByteLevel(tok); ok {
			if id, ok := t.model.pieceID.get(raw); ok {
				return id, true
			}
		}
	}
	return t.model.pieceID.get(tok)
}

// Config returns what tokenizer_config.json says about the model.
func (t *Tokenizer) Config() Config { return t.config }

// AddedTokens returns the added and special tokens, ordered by id.
func (t *Tokenizer) AddedTokens() []AddedToken {
	return append([]AddedToken(nil), t.added...)
}

// setAddedTokens indexes the added tokens and builds their matchers.
// With tiktokenRules every added token is recognised in special mode and
// none in plain mode (tiktoken's encode and encode_ordinary); otherwise
// plain mode still matches non-special tokens, as HF does.
func (t *Tokenizer) setAddedTokens(tokens []AddedToken, tiktokenRules bool) {
	sort.Slice(tokens, func(i, j int) bool { return tokens[i].ID < tokens[j].ID })
	t.added = tokens
	t.addedByContent = make(map[string]int, len(tokens))
	t.addedByID = make(map[int]string, len(tokens))
	t.addedBits = nil
	var rawAll, rawPlain, normAll, normPlain []AddedToken
	for _, a := range tokens {
		t.addedByContent[a.Content] = a.ID
		t.addedByID[a.ID] = a.Content
		if a.ID >= 0 {
			for len(t.addedBits) <= a.ID/64 {
				t.addedBits = append(t.addedBits, 0)
			}
			t.addedBits[a.ID/64] |= 1 << (a.ID % 64)
		}
		if a.ID+1 > t.vocabSize {
			t.vocabSize = a.ID + 1
		}
		normalized := a.Normalized && t.normalize != nil
		plain := !a.Special && !tiktokenRules
		switch {
		case normalized:
			normAll = append(normAll, a)
			if plain {
				normPlain = append(normPlain, a)
			}
		default:
			rawAll = append(rawAll, a)
			if plain {
				rawPlain = append(rawPlain, a)
			}
		}
	}
	t.rawSpecial, t.rawPlain = newAddedTokenMatcher(rawAll), newAddedTokenMatcher(rawPlain)
	t.normSpecial, t.normPlain = newAddedTokenMatcher(normAll), newAddedTokenMatcher(normPlain)
}
