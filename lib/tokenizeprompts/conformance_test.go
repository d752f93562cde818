package tokenizeprompts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/synthpipe/synthpipe/lib/bundle"
	"github.com/synthpipe/synthpipe/lib/chat"
)

// The tokenizer package's conformance data (compressed model folders, the
// public corpus and its reference ids) serves here to check the wiring:
// that tokenize-prompts hands the right text to the right Encode mode.
const tokenizerTestdata = "../tokenizer/testdata"

// families maps a model family to its folders in tokenizerTestdata.
var families = map[string][]string{
	"qwen3":       {"qwen3"},
	"deepseek_v3": {"deepseek_v3"},
	"llama3_1":    {"llama3_1"},
	"gptoss":      {"gptoss"},
	"kimi_k2":     {"kimi_k2", "kimi_shared"},
	"kimi_k25":    {"kimi_k25", "kimi_shared"},
}

// templateFamily is the tokenizer each reference template is rendered for.
var templateFamily = map[string]string{
	"qwen3":              "qwen3",
	"deepseek_v3":        "deepseek_v3",
	"llama3_1":           "llama3_1",
	"llama3_2":           "llama3_1",
	"gptoss":             "gptoss",
	"kimi_k2_instruct":   "kimi_k2",
	"kimi_k2_thinking":   "kimi_k2",
	"kimi_k25_like_kite": "kimi_k25",
}

var (
	unpackOnce sync.Once
	unpackDir  string
	unpackErr  error
)

// modelDir returns an unpacked copy of a family's model folder.
func modelDir(t *testing.T, family string) string {
	t.Helper()
	unpackOnce.Do(func() {
		unpackDir, unpackErr = os.MkdirTemp("", "tokenizeprompts-models-")
		for fam, parts := range families {
			for _, part := range parts {
				src := os.DirFS(filepath.Join(tokenizerTestdata, "tokenizers", part))
				if unpackErr == nil {
					unpackErr = bundle.UnpackDir(src, filepath.Join(unpackDir, fam))
				}
			}
		}
	})
	if unpackErr != nil {
		t.Fatal(unpackErr)
	}
	return filepath.Join(unpackDir, family)
}

// TestMain removes the unpacked tokenizer folders after the tests (lib/chat
// keeps one load of each between the many runs of the tool).
func TestMain(m *testing.M) {
	code := m.Run()
	if unpackDir != "" {
		os.RemoveAll(unpackDir)
	}
	os.Exit(code)
}

// runTool runs tokenize-prompts in-process and returns stdout, stderr and
// the exit status.
func runTool(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(append([]string{"tokenize-prompts"}, args...), strings.NewReader(stdin), &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

// outputRecord is the part of an output record the tests look at.
type outputRecord struct {
	ID           string          `json:"id"`
	Messages     json.RawMessage `json:"messages"`
	InputIDs     []int           `json:"input_ids"`
	PromptTokens int             `json:"prompt_tokens"`
}

func decodeOutput(t *testing.T, stdout string) []outputRecord {
	t.Helper()
	var recs []outputRecord
	for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		if line == "" {
			continue
		}
		var r outputRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

func readZstdLines(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var lines [][]byte
	sc := bufio.NewScanner(dec)
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestTextRecordsMatchReferenceIDs feeds a sample of the public corpus as
// {"id","text"} records through --template none, with and without
// --no-special, for every family, and compares the ids with the references.
func TestTextRecordsMatchReferenceIDs(t *testing.T) {
	corpus := readZstdLines(t, filepath.Join(tokenizerTestdata, "corpus_public.jsonl.zst"))
	var sample strings.Builder
	picked := map[string]bool{}
	for i, line := range corpus {
		var rec struct{ ID, Cat, Text string }
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		// Every special-token case, and one line in nine of the rest; not
		// the empty text, which tokenize-prompts refuses as an empty prompt.
		if rec.Text != "" && (rec.Cat == "specials" || i%9 == 0) {
			picked[rec.ID] = true
			b, _ := json.Marshal(map[string]string{"id": rec.ID, "text": rec.Text})
			sample.Write(b)
			sample.WriteByte('\n')
		}
	}
	for family := range families {
		t.Run(family, func(t *testing.T) {
			t.Parallel()
			want := map[string]struct{ Special, Plain []int }{}
			for _, line := range readZstdLines(t, filepath.Join(tokenizerTestdata, "refs", family+".public.jsonl.zst")) {
				var ref struct {
					ID             string
					Special, Plain []int
				}
				if err := json.Unmarshal(line, &ref); err != nil {
					t.Fatal(err)
				}
				if picked[ref.ID] {
					want[ref.ID] = struct{ Special, Plain []int }{ref.Special, ref.Plain}
				}
			}
			dir := modelDir(t, family)
			for _, mode := range []struct {
				name string
				args []string
			}{{"special", nil}, {"plain", []string{"--no-special"}}} {
				args := append([]string{"-q", "-j", "2", "--tokenizer", dir, "--template", "none"}, mode.args...)
				stdout, stderr, code := runTool(t, sample.String(), args...)
				if code != 0 {
					t.Fatalf("%s: exit %d: %s", mode.name, code, stderr)
				}
				recs := decodeOutput(t, stdout)
				if len(recs) != len(picked) {
					t.Fatalf("%s: %d records out, %d in", mode.name, len(recs), len(picked))
				}
				for _, r := range recs {
					if family == "deepseek_v3" && mode.name == "plain" && strings.HasPrefix(r.ID, "specials-") {
						// The plain reference was made from a tokenizer.json
						// whose special tokens were renamed, which renumbers
						// DeepSeek-V3's other added tokens (the tokenizer
						// package's own test maps them back): not comparable.
						continue
					}
					ref, ok := want[r.ID]
					if !ok {
						t.Fatalf("no reference for %q", r.ID)
					}
					expected := ref.Special
					if mode.name == "plain" {
						expected = ref.Plain
					}
					if !equalIDs(r.InputIDs, expected) || r.PromptTokens != len(expected) {
						t.Errorf("%s %s: got %d ids, want %d (first difference at %d)", mode.name, r.ID, len(r.InputIDs), len(expected), firstDifference(r.InputIDs, expected))
					}
				}
			}
		})
	}
}

// conformanceCases is testdata/conformance/cases.json: conversations and
// the template variables the references were rendered with.
type conformanceCases struct {
	Cases []struct {
		Name                string                     `json:"name"`
		Messages            json.RawMessage            `json:"messages"`
		Tools               json.RawMessage            `json:"tools"`
		AddGenerationPrompt bool                       `json:"add_generation_prompt"`
		Kwargs              map[string]json.RawMessage `json:"kwargs"`
	} `json:"cases"`
	FixedDate map[string]string `json:"fixed_date"`
}

// renderReference is one row of expected_python_jinja2.json: what Python's
// jinja2 rendered under transformers' settings, or that it raised.
type renderReference struct {
	Template string `json:"template"`
	Case     string `json:"case"`
	OK       bool   `json:"ok"`
	Output   string `json:"output"`
}

// TestConversationsMatchReferenceRenderings runs every reference case
// through tokenize-prompts with the reference template and the family's
// tokenizer: input_ids must be Encode(the reference rendering, true), and a
// case the reference refuses must be refused with exit 65.
func TestConversationsMatchReferenceRenderings(t *testing.T) {
	dir := filepath.Join("testdata", "conformance")
	var cases conformanceCases
	readJSON(t, filepath.Join(dir, "cases.json"), &cases)
	var refs []renderReference
	readJSON(t, filepath.Join(dir, "expected_python_jinja2.json"), &refs)
	date := cases.FixedDate["%Y-%m-%d"]

	for _, ref := range refs {
		t.Run(ref.Template+"/"+ref.Case, func(t *testing.T) {
			family := templateFamily[ref.Template]
			i := caseIndex(t, cases, ref.Case)
			c := cases.Cases[i]
			rec, _ := json.Marshal(map[string]json.RawMessage{"id": json.RawMessage(`"` + c.Name + `"`), "messages": c.Messages, "tools": c.Tools})
			// The references are the templates rendered by plain jinja2,
			// which gives Kimi-K2.5's template no tools_ts_str.
			args := []string{"-q", "--tokenizer", modelDir(t, family), "--template", filepath.Join(dir, ref.Template+".jinja"), "--date", date,
				"--tool-declaration", "json"}
			for k, v := range c.Kwargs {
				args = append(args, "--template-arg", k+"="+string(v))
			}
			if !c.AddGenerationPrompt {
				args = append(args, "--keep-last-assistant")
			}
			stdout, stderr, code := runTool(t, string(rec)+"\n", args...)
			if !ref.OK {
				if code != 65 || !strings.Contains(stderr, "chat template") {
					t.Fatalf("the reference refuses this case; got exit %d, stderr %q", code, stderr)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			recs := decodeOutput(t, stdout)
			tok, err := chat.LoadTokenizer(modelDir(t, family))
			if err != nil {
				t.Fatal(err)
			}
			want := tok.Encode(ref.Output, true)
			if len(recs) != 1 || !equalIDs(recs[0].InputIDs, want) {
				got, _ := tok.Decode(recs[0].InputIDs)
				t.Fatalf("ids differ at %d\n got: %q\nwant: %q", firstDifference(recs[0].InputIDs, want), got, ref.Output)
			}
		})
	}
}

func caseIndex(t *testing.T, cases conformanceCases, name string) int {
	for i, c := range cases.Cases {
		if c.Name == name {
			return i
		}
	}
	t.Fatalf("no case %q", name)
	return -1
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func equalIDs(a, b []int) bool { return firstDifference(a, b) < 0 }

// firstDifference is the first index where a and b differ, or -1.
func firstDifference(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}
