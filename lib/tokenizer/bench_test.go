package tokenizer

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cpuMeter reports "cpu-MB/s", the bytes encoded per second of process CPU
// time, beside the wall-time MB/s of SetBytes.
type cpuMeter struct {
	start time.Duration
	ok    bool
}

func startCPUMeter() cpuMeter {
	t, ok := processCPUTime()
	return cpuMeter{start: t, ok: ok}
}

func (m cpuMeter) report(b *testing.B, bytesPerOp int64) {
	end, ok := processCPUTime()
	if !m.ok || !ok || end <= m.start {
		return
	}
	b.ReportMetric(float64(bytesPerOp)*float64(b.N)/(end-m.start).Seconds()/1e6, "cpu-MB/s")
}

// benchTexts is the corpus without its "long" category, the set the
// reference implementations are timed on (scripts/bench/tokenize.sh).
func benchTexts(b *testing.B) ([]string, int64) {
	var texts []string
	var n int64
	for _, l := range corpus(b) {
		if l.Cat == "long" {
			continue
		}
		texts = append(texts, l.Text)
		n += int64(len(l.Text))
	}
	return texts, n
}

// BenchmarkEncode measures special-mode encoding of the corpus per family;
// MB/s is the figure to compare.
func BenchmarkEncode(b *testing.B) {
	texts, size := benchTexts(b)
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
