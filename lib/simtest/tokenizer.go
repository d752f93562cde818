package simtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// UnpackTokenizer copies a test tokenizer folder, decompressing its .zst
// files, since the folder is kept compressed.
func UnpackTokenizer(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Skipf("no test tokenizer: %v", err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		name := e.Name()
		if strings.HasSuffix(name, ".zst") {
			dec, _ := zstd.NewReader(nil)
			if data, err = dec.DecodeAll(data, nil); err != nil {
				t.Fatal(err)
			}
			dec.Close()
			name = strings.TrimSuffix(name, ".zst")
		}
		if err := os.WriteFile(filepath.Join(dst, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
