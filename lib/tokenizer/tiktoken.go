package tokenizer

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// kimiReservedTokens is how many ids tokenization_kimi.py reserves for
// special tokens after the ranks.
const kimiReservedTokens = 256

// loadTiktoken reads a tiktoken rank file (base64 token and rank per line).
// With a tokenizer_config.json that names Moonshot's tokenization_kimi
// module, it is a Kimi tokenizer: Kimi's pattern, the 256 reserved special
// ids and Kimi's chunking. Otherwise the pattern is o200k_base's and the
// special tokens are those of added_tokens_decoder, if any.
func loadTiktoken(path string, cfg *tokenizerConfigFile, chatTemplateFile string) (*Tokenizer, error) {
	model, err := readTiktokenRanks(path)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{model: model, vocabSize: len(model.tokenBytes)}
	var added []AddedToken
	if cfg != nil {
		if added, err = cfg.addedTokens(); err != nil {
			return nil, err
		}
	}
	if isKimiConfig(cfg) {
		t.stages = []matcher{knownPatterns[patternKimi]}
		t.kimiChunking = true
		added = kimiSpecialTokens(len(model.tokenBytes), added)
	} else {
		t.stages = []matcher{knownPatterns[patternO200k]}
	}
	t.setAddedTokens(added, true)
	t.config = cfg.config(false)
	t.finishConfig(chatTemplateFile)
	return t, nil
}

// isKimiConfig is the rule for telling Kimi's tiktoken folders: the config's
// auto_map points AutoTokenizer at the tokenization_kimi module.
func isKimiConfig(cfg *tokenizerConfigFile) bool {
	if cfg == nil {
		return false
	}
	for _, v := range cfg.AutoMap {
		if strings.Contains(string(v), "tokenization_kimi.") {
			return true
		}
	}
	return false
}

// kimiSpecialTokens names the reserved ids after the ranks as
// tokenization_kimi.py does: <|reserved_token_N|> unless the config names
// them. All are special, whatever the config's flag says, because Kimi's
// encode recognises them all.
func kimiSpecialTokens(numRanks int, named []AddedToken) []AddedToken {
	names := make(map[int]string, len(named))
	for _, a := range named {
		names[a.ID] = a.Content
	}
	out := make([]AddedToken, 0, kimiReservedTokens)
	for id := numRanks; id < numRanks+kimiReservedTokens; id++ {
		name, ok := names[id]
		if !ok {
			name = "<|reserved_token_" + strconv.Itoa(id) + "|>"
		}
		out = append(out, AddedToken{ID: id, Content: name, Special: true})
	}
	return out
}

// readTiktokenRanks builds a BPE model from ranks. tiktoken merges the
// adjacent pair whose concatenation has the lowest rank, so every way of
// cutting a token into two tokens is a merge rule ranked by the token: the
// model looks them up by concatenation (bpeModel.byConcat).
//
// Every tool that tokenizes loads the ranks, and most runs encode little,
// so the load is kept cheap: the tokens are decoded into one buffer, which
// the model's token strings share, instead of a string each.
func readTiktokenRanks(path string) (*bpeModel, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	type entry struct{ start, end, rank int }
	entries := make([]entry, 0, bytes.Count(data, []byte{'\n'})+1)
	raw := make([]byte, 0, base64.StdEncoding.DecodedLen(len(data)))
	size := 0
	for line, rest := 1, data; len(rest) > 0; line++ {
		var text []byte
		text, rest, _ = bytes.Cut(rest, []byte{'\n'})
		tok64, rank64, n := rankFields(text)
		if n == 0 {
			continue
		}
		if n != 2 {
			return nil, fmt.Errorf("tokenizer: %s:%d: want a base64 token and a rank", path, line)
		}
		start := len(raw)
		if raw, err = base64.StdEncoding.AppendDecode(raw, tok64); err != nil {
			return nil, fmt.Errorf("tokenizer: %s:%d: %w", path, line, err)
		}
		rank, err := strconv.Atoi(string(rank64))
		if err != nil || rank < 0 {
			return nil, fmt.Errorf("tokenizer: %s:%d: bad rank %q", path, line, rank64)
		}
		entries = append(entries, entry{start, len(raw), rank})
		size = max(size, rank+1)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("tokenizer: %s holds no ranks", path)
	}
	tokens := string(raw)
	m := newBPEModel(size)
	m.wholePieceFirst = true
	for _, e := range entries {
		tok := tokens[e.start:e.end]
		m.tokenBytes[e.rank], m.tokenOK[e.rank] = tok, true
		m.pieceID.put(e.rank)
	}
	m.indexSingleBytes()
	m.byConcat = true // merges are looked up by concatenation (bpe.go)
	m.memo = newPairMemo(len(m.tokenBytes))
	return m, nil
}

// rankFields splits a line of a rank file as bytes.Fields does and returns
// its first two fields and how many it has (3 for three or more: an error
// all the same), without bytes.Fields' allocation per line.
func rankFields(line []byte) (first, second []byte, n int) {
	var fields [2][]byte
	start := -1
	for i, c := range line {
		switch rankByteClass[c] {
		case rankFieldByte:
			if start < 0 {
				if n == len(fields) {
					return fields[0], fields[1], n + 1
				}
				start = i
			}
		case rankSpaceByte:
			if start >= 0 {
				fields[n], n, start = line[start:i], n+1, -1
			}
		default: // a space outside ASCII: bytes.Fields' own rules
			f := append(bytes.Fields(line), nil, nil)
			return f[0], f[1], min(len(f)-2, 3)
		}
	}
	if start >= 0 {
		fields[n], n = line[start:], n+1
	}
	return fields[0], fields[1], n
}

// rankByteClass sorts bytes for rankFields: ASCII white space as
// bytes.Fields has it, other ASCII, and bytes outside ASCII.
var rankByteClass = func() (class [256]uint8) {
	for c := utf8.RuneSelf; c < len(class); c++ {
		class[c] = rankOtherByte
	}
	for _, c := range []byte(" \t\n\v\f\r") {
		class[c] = rankSpaceByte
	}
	return class
}()

const (
	rankFieldByte = iota
	rankSpaceByte
	rankOtherByte
)
