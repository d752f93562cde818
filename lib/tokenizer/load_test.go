package tokenizer

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRankFileLines: a rank file's lines are split into fields as
// bytes.Fields splits them (any white space, blank lines skipped); a line
// of another shape is refused with its line number.
func TestRankFileLines(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       map[string]int // token -> rank
		wantErr    string
	}{
		{"spaces and blank lines", "YQ== 0\r\n\n\tYg==\t1 \n\nYWI=  2", map[string]int{"a": 0, "b": 1, "ab": 2}, ""},
		{"a space outside ASCII", "YQ==\u00a00\nYg==\u20031\n", map[string]int{"a": 0, "b": 1}, ""},
		{"a rank on its own", "YQ== 0\n1\n", nil, "x.tiktoken:2: want a base64 token and a rank"},
		{"three fields", "YQ== 0 9\n", nil, "x.tiktoken:1: want a base64 token and a rank"},
		{"three fields outside ASCII", "YQ==\u00a00\u00a09\n", nil, "x.tiktoken:1: want a base64 token and a rank"},
		{"negative rank", "YQ== -1\n", nil, `x.tiktoken:1: bad rank "-1"`},
		{"no ranks", "\n \n", nil, "holds no ranks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.tiktoken")
			writeFile(t, path, tc.file)
			m, err := readTiktokenRanks(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.pieceID.len() != len(tc.want) || len(m.tokenBytes) != len(tc.want) {
				t.Errorf("%d tokens, %d ids; want %d", m.pieceID.len(), len(m.tokenBytes), len(tc.want))
			}
			for tok, rank := range tc.want {
				if id, _ := m.pieceID.get(tok); id != rank || m.tokenBytes[rank] != tok || !m.tokenOK[rank] {
					t.Errorf("%q: id %d, id %d spells %q; want %d", tok, id, rank, m.tokenBytes[rank], rank)
				}
			}
		})
	}
}

// tinyTokenizerJSON is a byte-level BPE over "abc" whose merge rules are
// given by the caller; the pattern is Llama 3's.
func tinyTokenizerJSON(merges, pattern string) string {
	return `{"added_tokens":[{"id":6,"content":"<s>","special":true,"lstrip":false,"rstrip":false,"normalized":false,"single_word":false}],
"normalizer":null,
"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":` + pattern + `},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}]},
"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}]},
"model":{"type":"BPE","vocab":{"a":0,"b":1,"c":2,"ab":3,"bc":4,"abc":5},"merges":` + merges + `}}`
}

const llama3PatternJSON = `"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"`

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "unknown", "tokenizer.json"), tinyTokenizerJSON(`["a b"]`, `"(?<=a)b"`))
	writeFile(t, filepath.Join(dir, "badmerge", "tokenizer.json"), tinyTokenizerJSON(`["a z"]`, llama3PatternJSON))
	writeFile(t, filepath.Join(dir, "badranks", "x.tiktoken"), "YQ== 0\nnot-base64!! 1\n")
	writeFile(t, filepath.Join(dir, "two", "a.tiktoken"), "YQ== 0\n")
	writeFile(t, filepath.Join(dir, "two", "b.tiktoken"), "YQ== 0\n")
	writeFile(t, filepath.Join(dir, "onlyconfig", "tokenizer_config.json"), "{}")
	writeFile(t, filepath.Join(dir, "badconfig", "tokenizer_config.json"), "{")
	writeFile(t, filepath.Join(dir, "badconfig", "tokenizer.json"), tinyTokenizerJSON(`["a b"]`, llama3PatternJSON))
	for _, tc := range []struct {
		name, path string
		wantInErr  []string
	}{
		{"missing path", filepath.Join(dir, "nope"), []string{filepath.Join(dir, "nope")}},
		{"missing file", filepath.Join(dir, "nope.json"), []string{"nope.json"}},
		{"folder without model", filepath.Join(dir, "onlyconfig"), []string{filepath.Join(dir, "onlyconfig"), "tokenizer.json", "tiktoken.model"}},
		{"unsupported pattern", filepath.Join(dir, "unknown"), []string{"unknown pre-tokenizer pattern", "(?<=a)b", "lookbehind"}},
		{"merge outside vocab", filepath.Join(dir, "badmerge", "tokenizer.json"), []string{"merge 0"}},
		{"bad rank line", filepath.Join(dir, "badranks"), []string{"x.tiktoken:2"}},
		{"two rank files", filepath.Join(dir, "two"), []string{"several"}},
		{"broken config", filepath.Join(dir, "badconfig"), []string{"tokenizer_config.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.path)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			for _, want := range tc.wantInErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

// TestMergeRuleRank checks that tokenizer.json models merge by the rank of
// the merge rule, not by the rank of the merged token.
func TestMergeRuleRank(t *testing.T) {
	for _, tc := range []struct {
		name, merges string
		want         []int
	}{
		{"a b first, no rule for ab c", `["a b", "b c"]`, []int{3, 2}},
		{"b c first, then a bc", `[["b", "c"], ["a", "bc"]]`, []int{5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokenizer.json")
			writeFile(t, path, tinyTokenizerJSON(tc.merges, llama3PatternJSON))
			tok, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := tok.Encode("abc", true); !equalIDs(got, tc.want) {
				t.Errorf("Encode(abc) = %v, want %v", got, tc.want)
			}
			if got := tok.Encode("<s>abc", true); got[0] != 6 {
				t.Errorf("special token not matched: %v", got)
			}
			if cfg := tok.Config(); !cfg.AddBOS || cfg.BOSToken != "<s>" || cfg.BOSID != 6 {
				t.Errorf("Config from the post-processor = %+v", cfg)
			}
		})
	}
}

func equalIDs(a, b []int) bool { return firstDifference(a, b) < 0 }

func TestLoadFamilies(t *testing.T) {
	dir := unpackedModels(t)
	for _, tc := range []struct {
		family       string
		vocabSize    int
		bos, eos     string
		bosID        int
		addBOS       bool
		templateHas  string
		specialCheck string
		specialID    int
	}{
		{"qwen3", 151669, "", "<|im_end|>", -1, false, "<|im_start|>", "<think>", 151667},
		{"deepseek_v3", 128815, "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", 0, true, "<｜User｜>", "<｜User｜>", 128803},
		{"llama3_1", 128256, "<|begin_of_text|>", "<|eot_id|>", 128000, true, "<|start_header_id|>", "<|eot_id|>", 128009},
		{"gptoss", 200019, "<|startoftext|>", "<|return|>", 199998, false, "", "<|return|>", 200002},
		{"kimi_k2", 163840, "[BOS]", "[EOS]", 163584, false, "<|im_user|>", "<|reserved_token_163700|>", 163700},
		{"kimi_k25", 163840, "[BOS]", "[EOS]", 163584, false, "<|im_user|>", "<think>", 163606},
	} {
		t.Run(tc.family, func(t *testing.T) {
			tok := loadFamily(t, tc.family)
			if got := tok.VocabSize(); got != tc.vocabSize {
				t.Errorf("VocabSize = %d, want %d", got, tc.vocabSize)
			}
			cfg := tok.Config()
			if cfg.BOSToken != tc.bos || cfg.EOSToken != tc.eos || cfg.BOSID != tc.bosID || cfg.AddBOS != tc.addBOS {
				t.Errorf("Config = BOS %q (%d) EOS %q AddBOS %v", cfg.BOSToken, cfg.BOSID, cfg.EOSToken, cfg.AddBOS)
			}
			if !strings.Contains(cfg.ChatTemplate, tc.templateHas) {
				t.Errorf("chat template does not contain %q", tc.templateHas)
			}
			if id, ok := tok.TokenID(tc.specialCheck); !ok || id != tc.specialID {
				t.Errorf("TokenID(%q) = %d, %v; want %d", tc.specialCheck, id, ok, tc.specialID)
			}
			if got := tok.Encode(tc.specialCheck, true); len(got) != 1 || got[0] != tc.specialID {
				t.Errorf("Encode(%q, special) = %v", tc.specialCheck, got)
			}
			if _, err := tok.Decode([]int{tc.vocabSize}); err == nil {
				t.Errorf("Decode accepted id %d", tc.vocabSize)
			}
		})
	}
	// A rank file on its own is a plain o200k-pattern tiktoken model.
	tok, err := Load(filepath.Join(dir, "kimi_k2", "tiktoken.model"))
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 163584 || len(tok.Encode("[BOS]", true)) == 1 {
		t.Errorf("bare tiktoken.model: VocabSize %d, [BOS] -> %v", tok.VocabSize(), tok.Encode("[BOS]", true))
	}
}

func TestTokenIDSpellings(t *testing.T) {
	tok := loadFamily(t, "llama3_1")
	byteLevel, ok1 := tok.TokenID("Ġhello")
	raw, ok2 := tok.TokenID(" hello")
	if !ok1 || !ok2 || byteLevel != raw {
		t.Errorf("TokenID(Ġhello) = %d %v, TokenID(' hello') = %d %v", byteLevel, ok1, raw, ok2)
	}
	if got := tok.Encode(" hello", false); len(got) != 1 || got[0] != raw {
		t.Errorf("Encode(' hello') = %v, want [%d]", got, raw)
	}
}

// TestFallbackPattern loads a tokenizer whose regex (GPT-2's) has no
// hand-written matcher: the backtracking matcher runs it.
func TestFallbackPattern(t *testing.T) {
	gpt2 := `"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"`
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	writeFile(t, path, tinyTokenizerJSON(`["a b", "ab c"]`, gpt2))
	tok, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// Pieces "abc" and " cab"; the space is not in this tiny vocabulary.
	if got, want := tok.Encode("abc cab", true), []int{5, 2, 3}; !equalIDs(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
}

// TestResolveMergesNamesTheFirstMissing: the merges are resolved in parts
// on several goroutines, and the error still names the first merge, by
// rank, whose tokens are missing, whichever part finds it first.
func TestResolveMergesNamesTheFirstMissing(t *testing.T) {
	vocab := map[string]int{"a": 0, "b": 1, "ab": 2}
	pairs := make([][2]string, 100000)
	for i := range pairs {
		pairs[i] = [2]string{"a", "b"}
	}
	rules, err := resolveMerges(vocab, pairs)
	if err != nil || len(rules) != len(pairs) || rules[len(pairs)-1] != (pairSlot{pairKey(0, 1) + 1, uint64(len(pairs)-1)<<32 | 2}) {
		t.Fatalf("all found: %d rules, last %v, err %v", len(rules), rules[len(rules)-1], err)
	}
	for _, tc := range []struct {
		missing []int
		want    string
	}{
		{[]int{99999}, `merge 99999 ("a" "x")`},
		{[]int{70000, 90000}, `merge 70000 ("a" "x")`},
		{[]int{3, 90000}, `merge 3 ("a" "x")`},
	} {
		bad := slices.Clone(pairs)
		for _, rank := range tc.missing {
			bad[rank] = [2]string{"a", "x"}
		}
		if _, err := resolveMerges(vocab, bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("missing at %v: error %v, want %s", tc.missing, err, tc.want)
		}
	}
}

// TestFindModelTables: the scan that starts a tokenizer.json's tables
// before encoding/json has decoded it finds the text that encoding/json
// finds for the model's vocab and merges, or nothing (and then the tables
// are made after the decoding, of what it found: Load agrees either way).
func TestFindModelTables(t *testing.T) {
	model := `{"type":"BPE","vocab":{"a":0,"b":1,"c":2,"ab":3,"bc":4,"abc":5},"merges":["a b"]}`
	other := `{"type":"BPE","vocab":{"a":0,"b":1,"c":2,"ab":3,"bc":4,"abc":5},"merges":[["b","c"],["a","bc"]]}`
	indent := func(doc string) string {
		var b bytes.Buffer
		if err := json.Indent(&b, []byte(doc), "", "  "); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	tiny := tinyTokenizerJSON(`[]`, llama3PatternJSON)
	rest := tiny[1:strings.Index(tiny, `"model":`)] // the members before the model, with their commas
	for _, tc := range []struct {
		name, doc string
		found     bool
		want      []int // Encode("abc")
	}{
		{"compact", `{` + rest + `"model":` + model + `}`, true, []int{3, 2}},
		{"indented", indent(`{` + rest + `"model":` + model + `}`), true, []int{3, 2}},
		{"the last model wins", `{` + rest + `"model":` + model + `,"model":` + other + `}`, true, []int{5}},
		{"keys elsewhere", `{"x":{"model":{"vocab":{},"merges":[]}},"y":["\"}]{[\\",{"vocab":1}],` + rest + `"model":` + other + `}`, true, []int{5}},
		{"the last vocab wins", `{` + rest + `"model":` + strings.Replace(other, `"vocab":`, `"vocab":{"a":9},"vocab":`, 1) + `}`, true, []int{5}},
		{"a key in other letter cases", `{` + rest + `"Model":` + other + `}`, false, []int{5}},
		{"an escaped key", `{` + rest + `"mod\u0065l":` + other + `}`, false, []int{5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f hfTokenizerFile
			if err := json.Unmarshal([]byte(tc.doc), &f); err != nil {
				t.Fatal(err)
			}
			vocab, merges := findModelTables([]byte(tc.doc))
			if found := vocab != nil && merges != nil; found != tc.found {
				t.Fatalf("found %v (%q, %q), want %v", found, vocab, merges, tc.found)
			}
			if tc.found && (!bytes.Equal(vocab, f.Model.Vocab) || !bytes.Equal(merges, f.Model.Merges)) {
				t.Errorf("found %s and %s, encoding/json %s and %s", vocab, merges, f.Model.Vocab, f.Model.Merges)
			}
			path := filepath.Join(t.TempDir(), "tokenizer.json")
			writeFile(t, path, tc.doc)
			tok, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := tok.Encode("abc", true); !equalIDs(got, tc.want) {
				t.Errorf("Encode(abc) = %v, want %v", got, tc.want)
			}
		})
	}
	for _, doc := range []string{`{"model":{"vocab":{"a":0`, `{"model":{"vocab":"\`, `{"model"`, `{"model":{"vocab":]}}`, `}`, ``} {
		findModelTables([]byte(doc)) // a broken file: no panic, whatever is found
	}
}

// FuzzFindModelTables: the scan never panics, and in a valid document what
// it finds is a whole JSON value.
func FuzzFindModelTables(f *testing.F) {
	f.Add(tinyTokenizerJSON(`["a b"]`, llama3PatternJSON))
	f.Add(`{"x":{"model":{"vocab":{},"merges":[]}},"y":["\"}]{[\\",{"vocab":1}],"model":{"vocab":{"a":0},"merges":[["a","b"]]}}`)
	f.Add(`{"model":{"vocab":{"a":0`)
	f.Fuzz(func(t *testing.T, doc string) {
		vocab, merges := findModelTables([]byte(doc))
		if !json.Valid([]byte(doc)) {
			return
		}
		for _, v := range [][]byte{vocab, merges} {
			if v != nil && !json.Valid(v) {
				t.Fatalf("found %q in %q", v, doc)
			}
		}
	})
}

// TestPairTableOf: a table made of rules at once, in the order of their
// slots, answers as one made by putting them one by one in their order,
// the last of a key's rules winning.
func TestPairTableOf(t *testing.T) {
	for _, n := range []int{0, 5, 1000, 200000} {
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		rules := make([]pairSlot, n)
		for i := range rules {
			// few distinct keys, so that many repeat
			rules[i] = pairSlot{pairKey(rng.Uint32N(uint32(n/3+2)), rng.Uint32N(5)) + 1, uint64(i)}
		}
		want := newPairTable(n)
		for _, r := range rules {
			want.put(r.keyPlusOne-1, r.value)
		}
		got := pairTableOf(rules)
		if got.count != want.count {
			t.Fatalf("%d rules: %d keys, want %d", n, got.count, want.count)
		}
		for _, s := range want.slots {
			if s.keyPlusOne == 0 {
				continue
			}
			if v, ok := got.get(s.keyPlusOne - 1); !ok || v != s.value {
				t.Fatalf("%d rules: key %x gives %d, %v; want %d", n, s.keyPlusOne-1, v, ok, s.value)
			}
		}
	}
}
