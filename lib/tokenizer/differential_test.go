package tokenizer

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDifferentialAgainstReference encodes random text with synthpipe and
// with the reference implementations and compares the ids. It needs Node
// and the npm references, so it runs only when asked:
//
//	npm install --prefix /tmp/tokref tokenizers@0.23.2 tiktoken@1.0.22
//	TOKENIZER_REFERENCE_NODE_MODULES=/tmp/tokref TOKENIZER_REFERENCE_SEED=7 \
//	  go test -run TestDifferentialAgainstReference ./lib/tokenizer/
func TestDifferentialAgainstReference(t *testing.T) {
	modules := os.Getenv("TOKENIZER_REFERENCE_NODE_MODULES")
	if modules == "" {
		t.Skip("set TOKENIZER_REFERENCE_NODE_MODULES to a folder where npm installed tokenizers@0.23.2 and tiktoken@1.0.22")
	}
	seed, _ := strconv.ParseInt(os.Getenv("TOKENIZER_REFERENCE_SEED"), 10, 64)
	r := rand.New(rand.NewSource(seed))
	texts := make([]string, 2000)
	var input bytes.Buffer
	for i := range texts {
		texts[i] = randomReferenceText(r)
		line, _ := json.Marshal(texts[i])
		input.Write(line)
		input.WriteByte('\n')
	}
	script, err := filepath.Abs(filepath.Join("testdata", "reference_ids.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		t.Run(fam, func(t *testing.T) {
			tok := loadFamily(t, fam)
			cmd := exec.Command("node", script, modules, filepath.Join(unpackedModels(t), fam), fam)
			cmd.Stdin = bytes.NewReader(input.Bytes())
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("reference: %v", err)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != len(texts) {
				t.Fatalf("%d reference lines for %d texts", len(lines), len(texts))
			}
			bad := 0
			for i, line := range lines {
				var ref refLine
				if err := json.Unmarshal([]byte(line), &ref); err != nil {
					t.Fatal(err)
				}
				for _, parseSpecial := range []bool{true, false} {
					want, got := ref.Plain, tok.Encode(texts[i], parseSpecial)
					if parseSpecial {
						want = ref.Special
					} else {
						got = referencePlainIDs(fam, tok, got)
					}
					if pos := firstDifference(got, want); pos >= 0 {
						if bad++; bad <= 5 {
							t.Errorf("special %v: %s", parseSpecial, describeMismatch(tok, texts[i], got, want, pos))
						}
					}
				}
			}
			t.Logf("%s: %d of %d encodings differ", fam, bad, 2*len(texts))
		})
	}
}

// referenceTextRanges are code point ranges random text draws from: scripts,
// marks, CJK, emoji, whitespace and controls, and blocks new in Unicode
// 15.0-17.0, where the Unicode versions of implementations disagree.
var referenceTextRanges = [][2]rune{
	{0x20, 0x7e}, {0x20, 0x7e}, {0x20, 0x7e}, {0xa0, 0x24f}, {0x300, 0x36f}, {0x370, 0x3ff}, {0x400, 0x4ff},
	{0x590, 0x6ff}, {0x880, 0x8ff}, {0x900, 0x97f}, {0xe00, 0xe7f}, {0x1100, 0x11ff}, {0x1ab0, 0x1aff},
	{0x1dc0, 0x1dff}, {0x2000, 0x206f}, {0x20d0, 0x20ff}, {0x2100, 0x214f}, {0x2e80, 0x2fff}, {0x3000, 0x30ff},
	{0x3400, 0x4dbf}, {0x4e00, 0x9fff}, {0xa000, 0xa4cf}, {0xa700, 0xa7ff}, {0xac00, 0xd7a3}, {0xfb00, 0xfb4f},
	{0xfe00, 0xfe2f}, {0xff00, 0xffef}, {0x10000, 0x1007f}, {0x105c0, 0x105ff}, {0x10d40, 0x10d8f},
	{0x10ec0, 0x10eff}, {0x11380, 0x113ff}, {0x11f00, 0x11f5f}, {0x13460, 0x143ff}, {0x16100, 0x1613f},
	{0x16d40, 0x16d7f}, {0x1cc00, 0x1ceff}, {0x1d400, 0x1d7ff}, {0x1df00, 0x1dfff}, {0x1e030, 0x1e08f},
	{0x1e4d0, 0x1e4ff}, {0x1e5d0, 0x1e5ff}, {0x1f300, 0x1faff}, {0x1f1e6, 0x1f1ff}, {0x20000, 0x2a6df},
	{0x2ebf0, 0x2ee5f}, {0x31350, 0x323af}, {0x323b0, 0x3347f}, {0xe0000, 0xe007f}, {0x0, 0x1f}, {0x85, 0x85},
	{0x1680, 0x1680}, {0x2028, 0x2029}, {0x17f, 0x17f},
}

// referenceTextWords are fragments that exercise specific rules: contractions,
// special and added tokens, composed and decomposed letters, title case.
var referenceTextWords = []string{"'s", "'S", "'ll", "'Re", "'ſ", " ", "  ", "\n", "\r\n", "\t", "<|im_start|>", "<think>",
	"</think>", "<|endoftext|>", "<｜User｜>", "[BOS]", "<|reserved_token_163700|>", "<|eot_id|>", "<|return|>", "hello",
	" World", "123456", "e\u0301", "A\u030a", "\u1100\u1161\u11a8", "ǅ", "Ǆ", "ǆ", "ᾈ", "ﬀ", "ß", "K", "Å", "ｱ", "〇",
	"々", "/", "//\n", "...", " !!", "\u00a0\u00a0x"}

func randomReferenceText(r *rand.Rand) string {
	var b strings.Builder
	for n := 1 + r.Intn(40); n > 0; n-- {
		if r.Intn(3) == 0 {
			b.WriteString(referenceTextWords[r.Intn(len(referenceTextWords))])
			continue
		}
		span := referenceTextRanges[r.Intn(len(referenceTextRanges))]
		for k := 1 + r.Intn(4); k > 0; k-- {
			c := span[0] + rune(r.Intn(int(span[1]-span[0]+1)))
			if c < 0xd800 || c > 0xdfff {
				b.WriteRune(c)
			}
		}
	}
	return b.String()
}
