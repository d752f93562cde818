package tokenizer

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// The conformance data lives in testdata compressed with zstd. Model folders
// are unpacked once per test binary into a temporary directory laid out as
// the published model folders are; the two Kimi folders share one copy of
// tiktoken.model in testdata/tokenizers/kimi_shared.

var families = []string{"qwen3", "deepseek_v3", "llama3_1", "gptoss", "kimi_k2", "kimi_k25"}

var (
	modelsOnce sync.Once
	modelsDir  string
	modelsErr  error
	loaded     sync.Map // family -> *loadedFamily
)

type loadedFamily struct {
	once sync.Once
	tok  *Tokenizer
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if modelsDir != "" {
		os.RemoveAll(modelsDir)
	}
	os.Exit(code)
}

// unpackedModels returns the directory holding one unpacked folder per family.
func unpackedModels(tb testing.TB) string {
	tb.Helper()
	modelsOnce.Do(func() {
		modelsDir, modelsErr = os.MkdirTemp("", "synthpipe-tokenizer-models-")
		if modelsErr != nil {
			return
		}
		for _, fam := range families {
			dst := filepath.Join(modelsDir, fam)
			if modelsErr = unpackFolder(filepath.Join("testdata", "tokenizers", fam), dst); modelsErr != nil {
				return
			}
			if strings.HasPrefix(fam, "kimi") {
				if modelsErr = unpackFolder(filepath.Join("testdata", "tokenizers", "kimi_shared"), dst); modelsErr != nil {
					return
				}
			}
		}
	})
	if modelsErr != nil {
		tb.Fatal(modelsErr)
	}
	return modelsDir
}

// unpackFolder copies src into dst, decompressing *.zst files.
func unpackFolder(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		data, err := readMaybeCompressed(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, strings.TrimSuffix(e.Name(), ".zst")), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func readMaybeCompressed(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !strings.HasSuffix(path, ".zst") {
		return io.ReadAll(f)
	}
	dec, err := zstd.NewReader(f)
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	return io.ReadAll(dec)
}

// loadFamily loads a family's tokenizer once per test binary.
func loadFamily(tb testing.TB, fam string) *Tokenizer {
	tb.Helper()
	dir := unpackedModels(tb)
	v, _ := loaded.LoadOrStore(fam, &loadedFamily{})
	lf := v.(*loadedFamily)
	lf.once.Do(func() { lf.tok, lf.err = Load(filepath.Join(dir, fam)) })
	if lf.err != nil {
		tb.Fatalf("load %s: %v", fam, lf.err)
	}
	return lf.tok
}

type corpusLine struct {
	ID   string `json:"id"`
	Cat  string `json:"cat"`
	Text string `json:"text"`
}

type refLine struct {
	ID      string `json:"id"`
	Special []int  `json:"special"`
	Plain   []int  `json:"plain"`
}

func readJSONLines[T any](tb testing.TB, path string) []T {
	tb.Helper()
	data, err := readMaybeCompressed(path)
	if err != nil {
		tb.Fatal(err)
	}
	var out []T
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	return out
}

var (
	corpusOnce  sync.Once
	corpusLines []corpusLine
)

func corpus(tb testing.TB) []corpusLine {
	corpusOnce.Do(func() {
		corpusLines = readJSONLines[corpusLine](tb, filepath.Join("testdata", "corpus_public.jsonl.zst"))
	})
	return corpusLines
}
