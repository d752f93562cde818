package sim

import (
	"strings"

	"github.com/tidwall/gjson"
)

// The output-ids rule.
//
// Every prompt has a 64-bit key: the mix of its input_ids in order (for
// /generate with input_ids) or of its bytes (for /generate with text and for
// chat completions), mixed with the request's sampling seed when it sends
// one (withSeed). Content token i of the answer is
//
//	x = splitmix64(key + (i+1)*0x9E3779B97F4A7C15) mod (VocabSize-1)
//	id = x, or x+1 when x >= EOSTokenID     (content never takes the EOS id)
//
// so the ids depend on the prompt and the position only: not on the Seed,
// the rid, the batch or retractions. ExpectedOutputIDs computes them.

// ExpectedOutputIDs returns the first n content token ids the simulator
// generates for a /generate request with these input_ids under Default's
// VocabSize and EOSTokenID. A response's output_ids equal
// ExpectedOutputIDs(input_ids, k) for its first k ids; when it stopped at EOS
// its last id is the EOS id instead. Use Server.ExpectedOutputIDs for a
// server with another vocabulary.
func ExpectedOutputIDs(inputIDs []int, n int) []int {
	d := Default()
	return contentIDs(keyOfIDs(inputIDs), n, d.VocabSize, d.EOSTokenID)
}

// ExpectedOutputIDs returns the first n content token ids this server
// generates for a /generate request with these input_ids.
func (s *Server) ExpectedOutputIDs(inputIDs []int, n int) []int {
	return contentIDs(keyOfIDs(inputIDs), n, s.cfg.VocabSize, s.cfg.EOSTokenID)
}

// ExpectedTextOutputIDs returns the first n content token ids this server
// generates for a /generate request whose prompt is given as text.
func (s *Server) ExpectedTextOutputIDs(text string, n int) []int {
	return contentIDs(keyOfText(text), n, s.cfg.VocabSize, s.cfg.EOSTokenID)
}

// RenderText returns the text the server shows for these token ids: one word
// a token, each preceded by a space. The EOS id renders as nothing (special
// tokens are skipped).
func (s *Server) RenderText(ids []int) string {
	var b strings.Builder
	renderInto(&b, ids, s.cfg.EOSTokenID)
	return b.String()
}

const golden = 0x9E3779B97F4A7C15

// splitmix64 is a fast, well mixed 64-bit hash (Steele et al.).
func splitmix64(x uint64) uint64 {
	x += golden
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

// withSeed folds a request's sampling seed (SGLang's sampling_seed, the
// chat API's seed) into its answer key: the same prompt with another seed
// gets another answer, of another length, as from a sampling server; with
// the same seed, the same answer. A request without one keeps its
// prompt's key.
func withSeed(key uint64, seed gjson.Result) uint64 {
	if seed.Type != gjson.Number {
		return key
	}
	return splitmix64(key ^ splitmix64(uint64(seed.Int())^0x5EED5EED))
}

func keyOfIDs(ids []int) uint64 {
	h := uint64(0x6A09E667F3BCC908) ^ uint64(len(ids))
	for _, id := range ids {
		h = splitmix64(h ^ uint64(id))
	}
	return h
}

func keyOfText(text string) uint64 {
	// FNV-1a, then one mixing round: FNV alone leaves nearby keys correlated.
	h := uint64(0xCBF29CE484222325)
	for i := 0; i < len(text); i++ {
		h ^= uint64(text[i])
		h *= 0x100000001B3
	}
	return splitmix64(h)
}

func contentID(key uint64, i, vocab, eos int) int {
	x := int(splitmix64(key+uint64(i+1)*golden) % uint64(vocab-1))
	if x >= eos {
		x++
	}
	return x
}

func contentIDs(key uint64, n, vocab, eos int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = contentID(key, i, vocab, eos)
	}
	return ids
}

// words is the vocabulary of the rendered text; a token renders as
// words[id % len(words)].
var words = [64]string{
	"the", "of", "and", "to", "in", "is", "that", "for",
	"it", "as", "was", "with", "be", "by", "on", "not",
	"he", "this", "are", "or", "his", "from", "at", "which",
	"but", "have", "an", "had", "they", "you", "were", "their",
	"one", "all", "we", "can", "her", "has", "there", "been",
	"if", "more", "when", "will", "would", "who", "so", "no",
	"model", "token", "data", "batch", "prompt", "answer", "cache", "queue",
	"alpha", "beta", "gamma", "delta", "sigma", "omega", "lambda", "kappa",
}

func wordOf(id int) string { return words[id%len(words)] }

func renderInto(b *strings.Builder, ids []int, eos int) {
	for _, id := range ids {
		if id == eos {
			continue
		}
		b.WriteByte(' ')
		b.WriteString(wordOf(id))
	}
}

// estimateTokens is the prompt length the simulator assumes for text it
// cannot tokenize: one token per started 4 bytes, at least 1. It is the usual
// rule of thumb for English with BPE tokenizers.
func estimateTokens(text string) int {
	n := (len(text) + 3) / 4
	if n < 1 {
		n = 1
	}
	return n
}

// appendPseudoIDs appends the pseudo token ids of text the prefix cache
// matches for prompts it cannot tokenize: one id per started 4 bytes (the
// estimate's tokens), each a hash of its bytes. Texts that share a start
// share their first ids.
func appendPseudoIDs(ids []int, text string) []int {
	for i := 0; i < len(text); i += 4 {
		ids = append(ids, int(keyOfText(text[i:min(i+4, len(text))])>>1))
	}
	return ids
}

// rng is a splitmix64 stream: tiny, deterministic and good enough for
// lengths and fault draws.
type rng struct{ state uint64 }

func newRNG(parts ...uint64) *rng {
	s := uint64(0x243F6A8885A308D3)
	for _, p := range parts {
		s = splitmix64(s ^ p)
	}
	return &rng{state: s}
}

func (r *rng) next() uint64 {
	r.state += golden
	return splitmix64(r.state)
}

// float returns a uniform draw in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }
