// Package bundle holds the data synthpipe ships inside its binaries, so
// that the demo, the tests and a first run work on a fresh checkout with
// nothing downloaded: the Kimi-K2.5 tokenizer folder (tiktoken.model,
// tokenizer_config.json, chat_template.jinja and its licence; see
// LICENSES.md) and a few hundred sample prompts in every input shape
// tokenize-prompts reads. Large files are stored compressed with zstd.
package bundle

import (
	"bytes"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// TokenizerName is the bundled tokenizer's name, as --tokenizer
// builtin:NAME spells it.
const TokenizerName = "kimi-k2.5"

// VocabSize is the bundled model's vocabulary as its config.json gives it
// (Kimi-K2.5's text_config.vocab_size), which the bundle does not carry:
// the target vocabulary of an EAGLE-3 draft, larger than the tokenizer's.
const VocabSize = 163840

// tokenizerDir is the bundled folder, laid out as the published model's.
const tokenizerDir = "kimi_k25"

// PromptsDir is the sample prompts' folder in this one: a JSONL file per
// dataset, compressed with zstd, which every synthpipe tool reads as it is.
const PromptsDir = "prompts"

// Datasets are the sample's datasets, each in PromptsDir/NAME.jsonl.zst.
var Datasets = []string{"chat", "code", "math", "tools"}

// compressedSuffix marks files stored compressed; they are written out
// without it.
const compressedSuffix = ".zst"

//go:embed kimi_k25
var tokenizerFS embed.FS

//go:embed prompts
var promptsFS embed.FS

// ExtractTokenizer writes the bundled tokenizer folder into dir (created if
// needed) as dir/kimi_k25 and returns that folder's path, ready for
// tokenizer.Load.
func ExtractTokenizer(dir string) (string, error) {
	sub, err := fs.Sub(tokenizerFS, tokenizerDir)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, tokenizerDir)
	if err := UnpackDir(sub, dst); err != nil {
		return "", fmt.Errorf("bundle: %w", err)
	}
	return dst, nil
}

// UnpackDir copies the files at the top of src into the folder dst
// (created if needed), decompressing those whose names end in .zst and
// dropping that suffix.
func UnpackDir(src fs.FS, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := fs.ReadDir(src, ".")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if err := unpackFile(src, e.Name(), dst); err != nil {
			return err
		}
	}
	return nil
}

func unpackFile(src fs.FS, name, dst string) (err error) {
	in, err := src.Open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	var r io.Reader = in
	if base, ok := strings.CutSuffix(name, compressedSuffix); ok {
		dec, err := zstd.NewReader(in)
		if err != nil {
			return err
		}
		defer dec.Close()
		r, name = dec, base
	}
	out, err := os.Create(filepath.Join(dst, path.Base(name)))
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := io.Copy(out, r); err != nil {
		return fmt.Errorf("unpack %s: %w", name, err)
	}
	return nil
}

// Prompts returns the sample prompts of every dataset, in the order of
// Datasets, as JSONL (decompressed).
func Prompts() (io.ReadCloser, error) {
	var all []byte
	for _, d := range Datasets {
		data, err := promptsFS.ReadFile(path.Join(PromptsDir, d+".jsonl"+compressedSuffix))
		if err != nil {
			return nil, err
		}
		dec, err := zstd.NewReader(nil)
		if err != nil {
			return nil, err
		}
		all, err = dec.DecodeAll(data, all)
		dec.Close()
		if err != nil {
			return nil, fmt.Errorf("bundle: %s: %w", d, err)
		}
	}
	return io.NopCloser(bytes.NewReader(all)), nil
}
