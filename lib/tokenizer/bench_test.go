package tokenizer

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/cputime"
)

// cpuMeter reports "cpu-MB/s", the bytes encoded per second of process CPU
// time, beside the wall-time MB/s of SetBytes.
type cpuMeter struct {
	start time.Duration
	ok    bool
}

func startCPUMeter() cpuMeter {
	t, ok := cputime.Process()
	return cpuMeter{start: t, ok: ok}
}

func (m cpuMeter) report(b *testing.B, bytesPerOp int64) {
	end, ok := cputime.Process()
	if !m.ok || !ok || end <= m.start {
		return
	}
	b.ReportMetric(float64(bytesPerOp)*float64(b.N)/(end-m.start).Seconds()/1e6, "cpu-MB/s")
}

// corpusTexts are the corpus's texts of the categories keep takes, and
// their size in bytes.
func corpusTexts(b *testing.B, keep func(cat string) bool) ([]string, int64) {
	var texts []string
	var n int64
	for _, l := range corpus(b) {
		if keep(l.Cat) {
			texts = append(texts, l.Text)
			n += int64(len(l.Text))
		}
	}
	return texts, n
}

// benchTexts is the corpus without its "long" category, the set the
// reference implementations are timed on (scripts/bench/tokenize.sh).
func benchTexts(b *testing.B) ([]string, int64) {
	return corpusTexts(b, func(cat string) bool { return cat != "long" })
}

// proseTexts are the corpus's English prose, chat and markdown: ordinary
// text, whose pieces are short words that the local cache holds.
func proseTexts(b *testing.B) ([]string, int64) {
	return corpusTexts(b, func(cat string) bool {
		return cat == "prose_en" || cat == "chat_like" || cat == "code_markdown"
	})
}

// BenchmarkEncode measures special-mode encoding of the corpus per family;
// MB/s is the figure to compare.
func BenchmarkEncode(b *testing.B) {
	benchEncode(b, benchTexts)
}

// BenchmarkEncodeProse is BenchmarkEncode on proseTexts alone: the cost
// per piece on ordinary text, which BenchmarkEncode's corpus hides behind
// the merging of long non-ASCII pieces.
func BenchmarkEncodeProse(b *testing.B) {
	benchEncode(b, proseTexts)
}

// benchEncode encodes the texts of set, all of them an op, per family.
func benchEncode(b *testing.B, set func(*testing.B) ([]string, int64)) {
	texts, size := set(b)
	for _, fam := range families {
		b.Run(fam, func(b *testing.B) {
			tok := loadFamily(b, fam)
			var ids []int
			b.SetBytes(size)
			b.ResetTimer()
			cpu := startCPUMeter()
			for b.Loop() {
				for _, t := range texts {
					ids = tok.AppendEncode(ids[:0], t, true)
				}
			}
			cpu.report(b, size)
		})
	}
}

// BenchmarkPreTokenize measures the pre-tokenizer alone: each family's
// Split stages cut the texts into pieces, which are counted and not
// encoded. all is the corpus of BenchmarkEncode, ascii its texts that are
// pure ASCII (English prose, code, chat), what the ASCII fast paths serve.
func BenchmarkPreTokenize(b *testing.B) {
	all, allSize := benchTexts(b)
	var ascii []string
	var asciiSize int64
	for _, t := range all {
		if isASCII(t) {
			ascii = append(ascii, t)
			asciiSize += int64(len(t))
		}
	}
	for _, set := range []struct {
		name  string
		texts []string
		size  int64
	}{{"all", all, allSize}, {"ascii", ascii, asciiSize}} {
		for _, fam := range families {
			b.Run(set.name+"/"+fam, func(b *testing.B) {
				tok := loadFamily(b, fam)
				var pieces pieceCounter
				b.SetBytes(set.size)
				b.ResetTimer()
				cpu := startCPUMeter()
				for b.Loop() {
					for _, t := range set.texts {
						splitIsolated(t, tok.stages, &pieces)
					}
				}
				cpu.report(b, set.size)
				if pieces == 0 {
					b.Fatal("no pieces")
				}
			})
		}
	}
}

// pieceCounter is a pieceSink that counts its pieces.
type pieceCounter int

func (c *pieceCounter) piece(int, int) { *c++ }

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// BenchmarkEncodeColdCache is BenchmarkEncode with the piece cache emptied
// before every pass over the corpus: the speed on text never seen before.
func BenchmarkEncodeColdCache(b *testing.B) {
	texts, size := benchTexts(b)
	for _, fam := range families {
		b.Run(fam, func(b *testing.B) {
			tok := loadFamily(b, fam)
			defer func(c *pieceCache) { tok.model.cache = c }(tok.model.cache)
			var ids []int
			b.SetBytes(size)
			b.ResetTimer()
			cpu := startCPUMeter()
			for b.Loop() {
				b.StopTimer()
				tok.model.cache = newPieceCache()
				b.StartTimer()
				for _, t := range texts {
					ids = tok.AppendEncode(ids[:0], t, true)
				}
			}
			cpu.report(b, size)
		})
	}
}

// BenchmarkEncodeLongRun measures one 40 KB piece without spaces, where a
// quadratic merge loop would take seconds.
func BenchmarkEncodeLongRun(b *testing.B) {
	text := strings.Repeat("ab1cd2ef3gh", 4000)
	text = strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return 'x'
		}
		return r
	}, text)
	for _, fam := range families {
		b.Run(fam, func(b *testing.B) {
			tok := loadFamily(b, fam)
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				tok.Encode(text, true)
			}
		})
	}
}

// BenchmarkLoad measures loading each family from its folder.
func BenchmarkLoad(b *testing.B) {
	dir := unpackedModels(b)
	for _, fam := range families {
		b.Run(fam, func(b *testing.B) {
			for b.Loop() {
				if _, err := Load(filepath.Join(dir, fam)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkExtendOver measures what a conversation's next turn costs
// (chat.TurnPrompts): a prompt of about 40 KB, special tokens between its
// messages, followed by a new stretch of prose and markdown of 0.5 to 2 KB
// (the model's last answer and the next message), encoded through
// ExtendOver from the last prompt, which ended in another such stretch.
// MB/s counts the new stretches' bytes.
func BenchmarkExtendOver(b *testing.B) {
	prose, _ := proseTexts(b)
	for _, fam := range families {
		b.Run(fam, func(b *testing.B) {
			tok := loadFamily(b, fam)
			// Special tokens of the chat template's kind between messages,
			// a few in turn.
			var seps []string
			for _, a := range tok.AddedTokens() {
				if a.Special && strings.HasPrefix(a.Content, "<") && len(seps) < 4 {
					seps = append(seps, a.Content)
				}
			}
			nextSep := 0
			sep := func() string {
				nextSep++
				return seps[nextSep%len(seps)]
			}
			// Messages of 0.5 to 2 KB from the corpus's prose, in turn.
			next := 0
			message := func(size int) string {
				var m strings.Builder
				for m.Len() < size {
					m.WriteString(prose[next%len(prose)])
					m.WriteString("\n\n")
					next++
				}
				return m.String()
			}
			var prefix strings.Builder
			for prefix.Len() < 40_000 {
				prefix.WriteString(sep() + message(1000))
			}
			var turns []string
			var size int64
			for i := range 16 {
				turn := sep() + message(500+i*100) + sep() + sep() + message(100) + sep() + sep()
				turns = append(turns, prefix.String()+turn)
				size += int64(len(turn))
			}
			enc := tok.Extend(nil, turns[len(turns)-1])
			b.SetBytes(size / int64(len(turns)))
			b.ResetTimer()
			cpu := startCPUMeter()
			i := 0
			for b.Loop() {
				enc = tok.ExtendOver(enc, turns[i%len(turns)])
				i++
			}
			cpu.report(b, size/int64(len(turns)))
		})
	}
}
