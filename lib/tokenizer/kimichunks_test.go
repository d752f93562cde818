package tokenizer

import (
	"strings"
	"testing"
)

// TestKimiSurelyOneChunk checks the shortcut against cutting the text
// character by character: whenever it says a text is one chunk, the cuts
// find one, on texts with runs just under and over the cap, of ASCII and
// other spaces and non-spaces, at offsets around the shortcut's blocks; and
// it does say so for long ordinary text.
func TestKimiSurelyOneChunk(t *testing.T) {
	chunks := func(text string) int {
		n := 0
		splitLongRuns(text, func(string) { n++ })
		return n
	}
	prose := strings.Repeat("The quick brown fox, 12 times.\n", 3000)
	if !kimiSurelyOneChunk(prose) {
		t.Fatalf("%d bytes of prose: not surely one chunk", len(prose))
	}
	units := []string{"a", " ", "\u3000", "é", "\n", "\u3000 ", "a\u00e9", "\x1c"}
	for _, u := range units {
		for _, runes := range []int{kimiMaxRun - 1, kimiMaxRun, kimiMaxRun + 1} {
			run := strings.Repeat(u, runes/len([]rune(u))+1)
			run = string([]rune(run)[:runes])
			for _, offset := range []int{0, 1, kimiBlock - 1, kimiBlock, kimiBlock + 3, 2*kimiBlock - 2} {
				for _, filler := range []string{"x", " "} {
					text := strings.Repeat(filler, offset) + run + prose[:kimiBlock+7]
					if kimiSurelyOneChunk(text) && chunks(text) != 1 {
						t.Errorf("run of %d %q at %d after %q: surely one chunk, but cut in %d",
							runes, u, offset, filler, chunks(text))
					}
				}
			}
		}
	}
}
