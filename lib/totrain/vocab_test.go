package totrain

import (
	"os"
	"path/filepath"
	"testing"
)

// The target's vocabulary comes from the model folder's config.json: its
// vocab_size, or its text_config's for a multimodal model.
func TestConfigVocabSize(t *testing.T) {
	for _, tc := range []struct {
		config string
		want   int
	}{
		{`{"vocab_size":151936}`, 151936},
		{`{"architectures":["X"],"text_config":{"vocab_size":163840}}`, 163840},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(tc.config), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := configVocabSize(dir)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %d, %v; want %d", tc.config, got, err, tc.want)
		}
	}
	for _, config := range []string{"", `{"hidden_size":8}`, `not json`} {
		dir := t.TempDir()
		if config != "" {
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(config), 0o644)
		}
		if n, err := configVocabSize(dir); err == nil {
			t.Errorf("config %q: got %d, want an error naming --target-vocab", config, n)
		}
	}
}
