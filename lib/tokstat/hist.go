package tokstat

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/synthpipe/synthpipe/lib/cliutil"
)

const (
	// histRows is about how many buckets a histogram has: fewer steps per
	// octave when the lengths span many octaves.
	histRows = 24
	// barWidth is the width of the longest bar, in characters.
	barWidth = 40
)

// plainBars reports whether bars must be plain ASCII: NO_COLOR set, or a
// terminal that cannot draw block characters.
func plainBars() bool {
	return os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb"
}

// bucketEdges returns the lower bounds of log-spaced buckets that cover
// lo..hi (lo >= 1): steps of 2^(1/k) with k chosen so that there are about
// histRows buckets, rounded up to whole tokens and deduplicated.
func bucketEdges(lo, hi uint32) []uint32 {
	octaves := math.Log2(float64(hi)+1) - math.Log2(float64(lo))
	perOctave := min(max(int(histRows/math.Max(octaves, 1)), 1), 16)
	start := int(math.Floor(math.Log2(float64(lo)) * float64(perOctave)))
	var edges []uint32
	for k := start; ; k++ {
		e := uint32(math.Ceil(math.Exp2(float64(k) / float64(perOctave))))
		if len(edges) > 0 && e <= edges[len(edges)-1] {
			continue
		}
		if e > hi {
			break
		}
		edges = append(edges, e)
	}
	if len(edges) == 0 || edges[0] > lo {
		edges = append([]uint32{lo}, edges...)
	}
	return edges
}

// writeHistogram draws the completion lengths (sorted) as one bar per
// bucket, with the bucket's range, count and share.
func writeHistogram(w io.Writer, sorted []uint32, plain bool) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "\ncompletion tokens (%s)\n", cliutil.Count(int64(len(sorted)), "answer"))
	if len(sorted) == 0 {
		return bw.Flush()
	}
	type bucket struct {
		label string
		n     int
	}
	var buckets []bucket
	i := 0
	if sorted[0] == 0 { // log buckets cannot hold 0: it has its own
		for i < len(sorted) && sorted[i] == 0 {
			i++
		}
		buckets = append(buckets, bucket{"0", i})
	}
	if i < len(sorted) {
		edges := bucketEdges(sorted[i], sorted[len(sorted)-1])
		for k, lo := range edges {
			hi := sorted[len(sorted)-1]
			if k+1 < len(edges) {
				hi = edges[k+1] - 1
			}
			n := 0
			for i < len(sorted) && sorted[i] <= hi {
				i++
				n++
			}
			label := fmt.Sprint(lo)
			if hi > lo {
				label = fmt.Sprintf("%d-%d", lo, hi)
			}
			buckets = append(buckets, bucket{label, n})
		}
	}
	most, labelWidth, countWidth := 0, 0, 0
	for _, b := range buckets {
		most = max(most, b.n)
		labelWidth = max(labelWidth, len(b.label))
		countWidth = max(countWidth, len(cliutil.Thousands(int64(b.n))))
	}
	for _, b := range buckets {
		share := 100 * float64(b.n) / float64(len(sorted))
		line := fmt.Sprintf("  %*s  %*s  %5.1f%%  %s", labelWidth, b.label, countWidth, cliutil.Thousands(int64(b.n)), share,
			bar(float64(b.n)/float64(most)*barWidth, plain))
		bw.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	return bw.Flush()
}

// eighths are the partial blocks that end a bar, 1/8 to 7/8 of a character.
var eighths = []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}

// bar draws a bar width characters long: block characters with an eighth's
// precision, or '#' rounded to whole characters when plain.
func bar(width float64, plain bool) string {
	if plain {
		n := int(math.Round(width))
		if n == 0 && width > 0 {
			n = 1 // a bucket that is not empty shows
		}
		return strings.Repeat("#", n)
	}
	n := int(math.Round(width * 8))
	if n == 0 && width > 0 {
		n = 1
	}
	return strings.Repeat("█", n/8) + eighths[n%8]
}
