package chat

import (
	"slices"
	"strings"
	"testing"
)

// The bundled tokenizer's folder (tiktoken.model.zst beside its config and
// template) loads as a model folder, with the same ids as builtin:kimi-k2.5.
func TestLoadTokenizerCompressedFolder(t *testing.T) {
	fromFolder, err := LoadTokenizer("../bundle/kimi_k25")
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := LoadTokenizer(BuiltinPrefix + "kimi-k2.5")
	if err != nil {
		t.Fatal(err)
	}
	const text = "<|im_user|>user<|im_middle|>Hello, 世界<|im_end|>"
	got, want := fromFolder.Encode(text, true), builtin.Encode(text, true)
	if !slices.Equal(got, want) || len(got) == 0 {
		t.Fatalf("folder ids %v, builtin ids %v", got, want)
	}
	if fromFolder.Config().ChatTemplate == "" {
		t.Error("the folder's chat_template.jinja was not read")
	}
}

// A folder without a tokenizer file names the bundled one in its error.
func TestLoadTokenizerEmptyFolderSuggestsBuiltin(t *testing.T) {
	_, err := LoadTokenizer(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "holds neither") || !strings.Contains(err.Error(), "--tokenizer builtin:kimi-k2.5") {
		t.Fatalf("err = %v, want the missing files and the builtin named", err)
	}
}
