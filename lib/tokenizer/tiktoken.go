package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"
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
func readTiktokenRanks(path string) (*bpeModel, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	type entry struct {
		tok  string
		rank int
	}
	var entries []entry
	size := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for line := 1; sc.Scan(); line++ {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("tokenizer: %s:%d: want a base64 token and a rank", path, line)
		}
		tok, err := base64.StdEncoding.DecodeString(string(fields[0]))
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %s:%d: %w", path, line, err)
		}
		rank, err := strconv.Atoi(string(fields[1]))
		if err != nil || rank < 0 {
			return nil, fmt.Errorf("tokenizer: %s:%d: bad rank %q", path, line, fields[1])
		}
		entries = append(entries, entry{string(tok), rank})
		if rank+1 > size {
			size = rank + 1
		}
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("tokenizer: %s holds no ranks", path)
	}
	m := newBPEModel(size)
	m.wholePieceFirst = true
	for _, e := range entries {
		m.tokenBytes[e.rank], m.tokenOK[e.rank] = e.tok, true
		m.pieceID[e.tok] = e.rank
	}
	m.indexSingleBytes()
	m.byConcat = true // merges are looked up by concatenation (bpe.go)
	return m, nil
}
