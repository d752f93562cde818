package tokenizer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// File names looked for in a model folder.
const (
	hfTokenizerFileName  = "tokenizer.json"
	tiktokenModelName    = "tiktoken.model"
	tiktokenSuffix       = ".tiktoken"
	tokenizerConfigName  = "tokenizer_config.json"
	chatTemplateFileName = "chat_template.jinja"
)

// Load reads a tokenizer from a model folder or from one file.
//
// A folder must hold tokenizer.json (Hugging Face, preferred when both are
// present) or a tiktoken rank file (tiktoken.model, else the only
// *.tiktoken); tokenizer_config.json and chat_template.jinja are read when
// present and give Config, added_tokens_decoder's special tokens for
// tiktoken models, and the Kimi rule (see loadTiktoken).
//
// A file is used on its own, without the files beside it: *.json is read
// as tokenizer.json, anything else as a tiktoken rank file with the o200k
// pattern and no special tokens.
func Load(path string) (*Tokenizer, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if !info.IsDir() {
		if strings.HasSuffix(path, ".json") {
			return loadHFTokenizer(path, nil, "")
		}
		return loadTiktoken(path, nil, "")
	}
	cfg, err := readTokenizerConfig(filepath.Join(path, tokenizerConfigName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	template := filepath.Join(path, chatTemplateFileName)
	if fileExists(filepath.Join(path, hfTokenizerFileName)) {
		return loadHFTokenizer(filepath.Join(path, hfTokenizerFileName), cfg, template)
	}
	ranks, err := findTiktokenFile(path)
	if err != nil {
		return nil, err
	}
	return loadTiktoken(ranks, cfg, template)
}

// NoTokenizerFileError is Load's error for a folder without a tokenizer
// file it can read.
type NoTokenizerFileError struct{ Dir string }

func (e *NoTokenizerFileError) Error() string {
	return fmt.Sprintf("tokenizer: %s holds neither %s nor %s nor a *%s file",
		e.Dir, hfTokenizerFileName, tiktokenModelName, tiktokenSuffix)
}

func fileExists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir()
}

// findTiktokenFile returns tiktoken.model or the one *.tiktoken in dir.
func findTiktokenFile(dir string) (string, error) {
	if p := filepath.Join(dir, tiktokenModelName); fileExists(p) {
		return p, nil
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*"+tiktokenSuffix))
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", &NoTokenizerFileError{Dir: dir}
	}
	return "", fmt.Errorf("tokenizer: %s holds several *%s files; name one", dir, tiktokenSuffix)
}

// finishConfig fills the chat template from chat_template.jinja when the
// config has none, and resolves BOSID.
func (t *Tokenizer) finishConfig(chatTemplateFile string) {
	if t.config.ChatTemplate == "" && chatTemplateFile != "" {
		if data, err := os.ReadFile(chatTemplateFile); err == nil {
			t.config.ChatTemplate = string(data)
		}
	}
	t.config.BOSID = -1
	if t.config.BOSToken != "" {
		if id, ok := t.TokenID(t.config.BOSToken); ok {
			t.config.BOSID = id
		}
	}
}
