package tokenizeprompts

import (
	"bytes"
	"io"
	"strconv"
	"testing"

	"github.com/synthpipe/synthpipe/lib/bundle"
)

// BenchmarkTool runs the tool on the bundled sample prompts repeated, with
// one and two workers, as scripts/bench/tokenize-prompts.sh does; the
// tokenizer load is part of every iteration, so the input is made large
// enough for the records to dominate.
func BenchmarkTool(b *testing.B) {
	r, err := bundle.Prompts()
	if err != nil {
		b.Fatal(err)
	}
	one, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		b.Fatal(err)
	}
	input := bytes.Repeat(one, 24)
	for _, jobs := range []int{1, 2} {
		b.Run("j"+strconv.Itoa(jobs), func(b *testing.B) {
			b.SetBytes(int64(len(input)))
			for b.Loop() {
				var stderr bytes.Buffer
				args := []string{"tokenize-prompts", "-q", "-j", strconv.Itoa(jobs), "--tokenizer", "builtin:kimi-k2.5"}
				if code := Main(args, bytes.NewReader(input), io.Discard, &stderr); code != 0 {
					b.Fatalf("exit %d: %s", code, stderr.String())
				}
			}
		})
	}
}
