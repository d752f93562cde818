package tokstat

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/synthpipe/synthpipe/lib/cliutil"
)

// The charts of the HTML report, as plain inline SVG: no script draws
// them, so the page shows the same in any browser, offline, and a saved
// copy stays whole.

const (
	chartWidth = 680
	rowHeight  = 22
	labelWidth = 240
	histHeight = 220
	histBins   = 40
)

// chartBar is one bar of a chart.
type chartBar struct {
	label string
	value float64
}

// esc escapes text for HTML and SVG.
func esc(s string) string { return html.EscapeString(s) }

// svgOpen starts an SVG of the given height, titled for screen readers.
func svgOpen(b *strings.Builder, height int, title string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img"><title>%s</title>`,
		chartWidth, height, chartWidth, height, esc(title))
}

// barsSVG draws labelled horizontal bars, each with its count and its share
// of total (when total > 0).
func barsSVG(title string, bars []chartBar, total float64) string {
	var b strings.Builder
	svgOpen(&b, len(bars)*rowHeight+8, title)
	most := 0.0
	for _, br := range bars {
		most = math.Max(most, br.value)
	}
	span := float64(chartWidth - labelWidth - 150)
	for i, br := range bars {
		y := 4 + i*rowHeight
		w := 0.0
		if most > 0 {
			w = math.Max(br.value/most*span, 1)
		}
		text := cliutil.Thousands(int64(br.value))
		if total > 0 {
			text += fmt.Sprintf(" (%.1f%%)", 100*br.value/total)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" class="label">%s</text>`, labelWidth-8, y+15, esc(br.label))
		fmt.Fprintf(&b, `<rect class="bar" x="%d" y="%d" width="%.1f" height="%d"/>`, labelWidth, y+3, w, rowHeight-6)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="value">%s</text>`, float64(labelWidth)+w+6, y+15, text)
	}
	b.WriteString("</svg>")
	return b.String()
}

// histogramSVG draws the completion lengths (sorted) in equal-width bins
// from 0, with each max_tokens limit as a dashed line: answers cut at the
// limit pile up against it.
func histogramSVG(sorted []uint32, limits []int64) string {
	hi := float64(sorted[len(sorted)-1])
	for _, l := range limits {
		hi = math.Max(hi, float64(l))
	}
	width := math.Max(math.Ceil((hi+1)/histBins), 1)
	counts := make([]int, int(math.Floor(hi/width))+1)
	most := 0
	for _, v := range sorted {
		k := int(float64(v) / width)
		counts[k]++
		most = max(most, counts[k])
	}
	const left, right, top, bottom = 56, 16, 24, 34
	plotW, plotH := float64(chartWidth-left-right), float64(histHeight-top-bottom)
	xmax := float64(len(counts)) * width
	x := func(v float64) float64 { return left + v/xmax*plotW }
	var b strings.Builder
	svgOpen(&b, histHeight, "completion tokens per answer")
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%.1f" x2="%.1f" y2="%.1f"/>`, left, top+plotH, left+plotW, top+plotH)
	for k, n := range counts {
		if n == 0 {
			continue
		}
		h := math.Max(float64(n)/float64(most)*plotH, 1)
		fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s-%s tokens: %s</title></rect>`,
			x(float64(k)*width)+0.5, top+plotH-h, math.Max(plotW/float64(len(counts))-1, 1), h,
			cliutil.Thousands(int64(float64(k)*width)), cliutil.Thousands(int64(float64(k+1)*width)-1), cliutil.Count(int64(n), "answer"))
	}
	for i := 0; i <= 4; i++ {
		v := xmax * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" class="tick">%s</text>`, x(v), top+plotH+16, cliutil.Thousands(int64(v)))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" class="tick">%s</text>`, left-6, top+8, cliutil.Thousands(int64(most)))
	fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" class="tick">0</text>`, left-6, top+plotH)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="end" class="tick">tokens</text>`, left+plotW, histHeight-2)
	for i, l := range limits {
		if i == 3 { // a few limits are readable; more are noise
			break
		}
		lx := x(float64(l))
		fmt.Fprintf(&b, `<line class="limit" x1="%.1f" y1="%d" x2="%.1f" y2="%.1f"/>`, lx, top-8+i*10, lx, top+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="end" class="limit-label">max_tokens %s</text>`, lx-4, top-2+i*10, cliutil.Thousands(l))
	}
	b.WriteString("</svg>")
	return b.String()
}

// budgetSVG draws the tokens spent (prompt and completion) against a
// budget (0: none), with what is left, or what went past it.
func budgetSVG(prompt, completion, budget int64) string {
	used := prompt + completion
	scale := float64(max(used, budget, 1))
	const left, barH = 10, 28
	span := float64(chartWidth - 2*left)
	w := func(n int64) float64 { return float64(n) / scale * span }
	var b strings.Builder
	svgOpen(&b, 80, "tokens against the budget")
	fmt.Fprintf(&b, `<rect class="bar prompt" x="%d" y="8" width="%.1f" height="%d"/>`, left, w(prompt), barH)
	fmt.Fprintf(&b, `<rect class="bar completion" x="%.1f" y="8" width="%.1f" height="%d"/>`, left+w(prompt), w(completion), barH)
	legend := fmt.Sprintf("prompt %s + completion %s = %s tokens", cliutil.Thousands(prompt), cliutil.Thousands(completion), cliutil.Thousands(used))
	if budget > 0 {
		fmt.Fprintf(&b, `<rect class="budget" x="%d" y="4" width="%.1f" height="%d"/>`, left, w(budget), barH+8)
		if remaining := budget - used; remaining >= 0 {
			legend += fmt.Sprintf(" of a budget of %s (%.1f%%; %s left)", cliutil.Thousands(budget), 100*float64(used)/float64(budget), cliutil.Thousands(remaining))
		} else {
			legend += fmt.Sprintf(", %s past the budget of %s", cliutil.Thousands(-remaining), cliutil.Thousands(budget))
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="62" class="value">%s</text>`, left, esc(legend))
	b.WriteString("</svg>")
	return b.String()
}
