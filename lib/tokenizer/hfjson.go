package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
)

// hfTokenizerFile is the part of a Hugging Face tokenizer.json synthpipe reads.
type hfTokenizerFile struct {
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    *hfNormalizer    `json:"normalizer"`
	PreTokenizer  *hfPreTokenizer  `json:"pre_tokenizer"`
	PostProcessor *hfPostProcessor `json:"post_processor"`
	Model         hfModel          `json:"model"`
}

type hfNormalizer struct {
	Type        string         `json:"type"`
	Normalizers []hfNormalizer `json:"normalizers"`
}

type hfPreTokenizer struct {
	Type          string           `json:"type"`
	PreTokenizers []hfPreTokenizer `json:"pretokenizers"`
	Pattern       struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior       string `json:"behavior"`
	Invert         bool   `json:"invert"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       bool   `json:"use_regex"`
}

type hfPostProcessor struct {
	Type       string            `json:"type"`
	Processors []hfPostProcessor `json:"processors"`
	Single     []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
		Sequence *struct {
			ID string `json:"id"`
		} `json:"Sequence"`
	} `json:"single"`
}

type hfModel struct {
	Type                    string          `json:"type"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	ByteFallback            bool            `json:"byte_fallback"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	Dropout                 *float64        `json:"dropout"`
}

// loadHFTokenizer reads a tokenizer.json; cfg is the tokenizer_config.json
// beside it, or nil.
func loadHFTokenizer(path string, cfg *tokenizerConfigFile, chatTemplateFile string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	// The vocabulary and the merges are most of the file: making the
	// model's tables of them starts now, while encoding/json decodes (and
	// validates) the whole.
	ahead := make(chan aheadTables, 1)
	go func() { ahead <- buildAhead(data) }()
	var f hfTokenizerFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("tokenizer: parse %s: %w", path, err)
	}
	t := &Tokenizer{byteLevelSpelling: true}
	if t.normalize, err = f.Normalizer.build(); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	if t.stages, err = f.PreTokenizer.build(); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	if t.model, err = f.Model.build(ahead); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	t.vocabSize = len(t.model.tokenBytes)
	added := make([]AddedToken, 0, len(f.AddedTokens))
	for _, a := range f.AddedTokens {
		added = append(added, a.token(a.ID))
	}
	t.setAddedTokens(added, false)
	bosFromPost := f.PostProcessor.leadingSpecialToken()
	t.config = cfg.config(bosFromPost != "")
	if t.config.BOSToken == "" {
		t.config.BOSToken = bosFromPost
	}
	t.finishConfig(chatTemplateFile)
	return t, nil
}

// build returns the normalizer, or an error for one synthpipe does not
// implement.
func (n *hfNormalizer) build() (func(string) string, error) {
	if n == nil {
		return nil, nil
	}
	switch n.Type {
	case "NFC":
		return nfc, nil
	case "Sequence":
		var steps []func(string) string
		for i := range n.Normalizers {
			f, err := n.Normalizers[i].build()
			if err != nil {
				return nil, err
			}
			if f != nil {
				steps = append(steps, f)
			}
		}
		switch len(steps) {
		case 0:
			return nil, nil
		case 1:
			return steps[0], nil
		}
		return func(s string) string {
			for _, f := range steps {
				s = f(s)
			}
			return s
		}, nil
	}
	return nil, fmt.Errorf("unsupported normalizer %q", n.Type)
}

// build flattens the pre-tokenizer into Split stages and checks that the
// text is byte-level encoded without extra regex or prefix space.
func (p *hfPreTokenizer) build() ([]matcher, error) {
	var stages []matcher
	byteLevel := false
	var walk func(p *hfPreTokenizer) error
	walk = func(p *hfPreTokenizer) error {
		switch p.Type {
		case "Sequence":
			for i := range p.PreTokenizers {
				if err := walk(&p.PreTokenizers[i]); err != nil {
					return err
				}
			}
		case "Split":
			if p.Pattern.Regex == nil {
				return fmt.Errorf("unsupported Split pattern (only Regex patterns are implemented)")
			}
			if p.Behavior != "Isolated" || p.Invert {
				return fmt.Errorf("unsupported Split behavior %q (invert %v)", p.Behavior, p.Invert)
			}
			m, err := matcherForPattern(*p.Pattern.Regex)
			if err != nil {
				return err
			}
			stages = append(stages, m...)
		case "ByteLevel":
			if p.AddPrefixSpace || p.UseRegex {
				return fmt.Errorf("unsupported ByteLevel pre-tokenizer with add_prefix_space=%v use_regex=%v", p.AddPrefixSpace, p.UseRegex)
			}
			byteLevel = true
		default:
			return fmt.Errorf("unsupported pre-tokenizer %q", p.Type)
		}
		return nil
	}
	if p == nil {
		return nil, fmt.Errorf("no pre_tokenizer: only byte-level BPE is supported")
	}
	if err := walk(p); err != nil {
		return nil, err
	}
	if !byteLevel {
		return nil, fmt.Errorf("pre_tokenizer has no ByteLevel step: only byte-level BPE is supported")
	}
	return stages, nil
}

// leadingSpecialToken returns the special token a TemplateProcessing puts
// before the sequence (Llama's BOS), or "".
func (p *hfPostProcessor) leadingSpecialToken() string {
	if p == nil {
		return ""
	}
	for i := range p.Processors {
		if s := p.Processors[i].leadingSpecialToken(); s != "" {
			return s
		}
	}
	if p.Type == "TemplateProcessing" && len(p.Single) > 0 && p.Single[0].SpecialToken != nil {
		return p.Single[0].SpecialToken.ID
	}
	return ""
}

// build converts the vocabulary to raw bytes and indexes the merge rules
// by rank, the order HF's BPE applies them in. ahead gives the tables made
// of the file before it was decoded, used when they were made of m's vocab
// and merges.
func (m *hfModel) build(ahead <-chan aheadTables) (*bpeModel, error) {
	if m.Type != "BPE" {
		return nil, fmt.Errorf("unsupported model %q (only BPE)", m.Type)
	}
	if m.ByteFallback || (m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "") ||
		(m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "") || (m.Dropout != nil && *m.Dropout != 0) {
		return nil, fmt.Errorf("unsupported BPE options (byte_fallback, subword prefix/suffix or dropout)")
	}
	var b *bpeModel
	var err error
	if a := <-ahead; a.vocabText != nil && a.mergesText != nil &&
		bytes.Equal(a.vocabText, m.Vocab) && bytes.Equal(a.mergesText, m.Merges) {
		b, err = a.model, a.err
	} else {
		b, err = buildTables(m.Vocab, m.Merges)
	}
	if err != nil {
		return nil, err
	}
	b.wholePieceFirst = m.IgnoreMerges
	return b, nil
}

// aheadTables is a model's tables made from where a quick scan found its
// vocab and merges in the file (findModelTables), before encoding/json
// decoded it: the model's build uses them only when they were made of the
// very text that the decoding finds there, and makes its own otherwise.
type aheadTables struct {
	vocabText, mergesText []byte // nil: not found
	model                 *bpeModel
	err                   error
}

func buildAhead(data []byte) aheadTables {
	var a aheadTables
	if a.vocabText, a.mergesText = findModelTables(data); a.vocabText != nil && a.mergesText != nil {
		a.model, a.err = buildTables(a.vocabText, a.mergesText)
	}
	return a
}

// buildTables makes a model's tables of its vocab and merges: the token
// of every id in raw bytes, the id of every token, and the merges by pair.
func buildTables(vocabText, mergesText []byte) (*bpeModel, error) {
	// The merges are read while the vocabulary is (neither needs the
	// other): each is about a fifth of loading a large tokenizer.json.
	merges := goRead(func() ([][2]string, error) { return readMerges(mergesText) })
	vocab, err := readVocab(vocabText)
	if err != nil {
		return nil, err
	}
	size := 0
	for _, id := range vocab {
		if id < 0 {
			return nil, fmt.Errorf("negative id in vocab")
		}
		if id+1 > size {
			size = id + 1
		}
	}
	b := newBPEModel(size)
	filled := make(chan struct{})
	go func() { // the model's own tables, while the merges are resolved
		defer close(filled)
		for tok, id := range vocab {
			raw, ok := fromByteLevel(tok)
			if !ok { // tok itself, a slice of the whole vocab's text
				raw = strings.Clone(raw)
			}
			b.tokenBytes[id], b.tokenOK[id] = raw, true
			if ok {
				b.pieceID.put(id)
			}
		}
		b.indexSingleBytes()
	}()
	pairs, err := merges()
	if err != nil {
		<-filled
		return nil, err
	}
	rules, err := resolveMerges(vocab, pairs)
	<-filled
	if err != nil {
		return nil, err
	}
	b.merges = pairTableOf(rules)
	return b, nil
}

// goRead runs read on a goroutine of its own; the function it returns
// waits for read's result.
func goRead[T any](read func() (T, error)) func() (T, error) {
	done := make(chan struct{})
	var v T
	var err error
	go func() {
		defer close(done)
		v, err = read()
	}()
	return func() (T, error) {
		<-done
		return v, err
	}
}

// resolveMerges looks the tokens of every merge up in the vocabulary, the
// merges split among the CPUs: three lookups for each of a large model's
// few hundred thousand merges were a third of its load. The error names
// the first merge, by rank, whose tokens are missing. The rules are by
// rank, as a pairTable's slots: the pair's key (plus one), and the rank and
// the id it merges into.
func resolveMerges(vocab map[string]int, pairs [][2]string) ([]pairSlot, error) {
	rules := make([]pairSlot, len(pairs))
	parts := min(runtime.GOMAXPROCS(0), 1+len(pairs)/(1<<14))
	bad := make([]int, parts) // each part's first missing merge, or -1
	var wg sync.WaitGroup
	for part := range parts {
		lo, hi := part*len(pairs)/parts, (part+1)*len(pairs)/parts
		wg.Go(func() {
			bad[part] = -1
			var joined []byte
			for rank := lo; rank < hi; rank++ {
				p := pairs[rank]
				joined = append(append(joined[:0], p[0]...), p[1]...)
				left, okL := vocab[p[0]]
				right, okR := vocab[p[1]]
				result, okM := vocab[string(joined)] // no copy: a map lookup by converted bytes
				if !okL || !okR || !okM {
					bad[part] = rank
					return
				}
				rules[rank] = pairSlot{pairKey(uint32(left), uint32(right)) + 1, uint64(rank)<<32 | uint64(result)}
			}
		})
	}
	wg.Wait()
	for _, rank := range bad {
		if rank >= 0 {
			return nil, fmt.Errorf("merge %d (%q %q) names a token missing from the vocab", rank, pairs[rank][0], pairs[rank][1])
		}
	}
	return rules, nil
}

func newBPEModel(size int) *bpeModel {
	m := &bpeModel{
		tokenBytes: make([]string, size),
		tokenOK:    make([]bool, size),
		cache:      newPieceCache(),
	}
	m.pieceID = newPieceTable(m.tokenBytes, size)
	return m
}

// indexSingleBytes fills byteID from the vocabulary.
func (b *bpeModel) indexSingleBytes() {
	for i := range b.byteID {
		b.byteID[i] = -1
		if id, ok := b.pieceID.get(string([]byte{byte(i)})); ok {
			b.byteID[i] = int32(id)
		}
	}
}
