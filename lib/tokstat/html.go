package tokstat

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/softfail"
)

// The HTML report (--html): one self-contained page, styles and charts
// inline, nothing fetched, so it can be mailed, archived or opened offline.

// htmlStyle is the page's whole style sheet.
const htmlStyle = `body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:760px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 6px;border-bottom:1px solid #d6dae3;padding-bottom:4px}
h3{font-size:14px;margin:16px 0 4px;color:#46506a}.sub{color:#5c6680;margin:0 0 16px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:8px 0}td,th{padding:3px 10px;text-align:right;border-bottom:1px solid #eceef3}
td:first-child,th:first-child{text-align:left}figure{margin:6px 0 14px}figcaption{color:#5c6680;font-size:12px}
svg text{font:12px system-ui,sans-serif;fill:#1d2330}svg .tick{fill:#5c6680;font-size:11px}
.bar{fill:#3b6fd8}.bar.completion{fill:#2f9e6e}.budget{fill:none;stroke:#1d2330;stroke-dasharray:4 3}
.axis{stroke:#9aa3b8}.limit{stroke:#d43d3d;stroke-width:2;stroke-dasharray:6 4}svg .limit-label{fill:#d43d3d}
.none{color:#5c6680;font-style:italic}`

// htmlCheck marks each chart with the size the browser drew it at, so that
// a test can tell from the DOM that every chart rendered.
const htmlCheck = `<script>for(const s of document.querySelectorAll("figure.chart svg")){const b=s.getBBox();s.closest("figure").dataset.rendered=Math.round(b.width)+"x"+Math.round(b.height)}</script>`

// section is one dataset of the report: its figures and, in a job, its
// state.
type section struct {
	name   string
	stats  *stats
	detail *detail
	budget int64
	state  string // a job's dataset: "running, 120 of 500 records, ..."
}

// page writes the report with an overview table and one section per
// dataset.
type page struct {
	w *bufio.Writer
}

func writeHTML(w io.Writer, title, subtitle string, overview [][]string, sections []section) error {
	p := page{w: bufio.NewWriter(w)}
	fmt.Fprintf(p.w, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>%s</title><style>%s</style></head><body>\n",
		esc(title), htmlStyle)
	fmt.Fprintf(p.w, "<h1>%s</h1><p class=\"sub\">%s</p>\n", esc(title), esc(subtitle))
	p.table(overview)
	if len(sections) > 1 {
		var mix []chartBar
		var all float64
		for _, s := range sections {
			mix = append(mix, chartBar{label: s.name, value: float64(s.stats.totalTokens())})
			all += float64(s.stats.totalTokens())
		}
		p.figure("mix", "tokens per dataset: the mix of the job", barsSVG("tokens per dataset", mix, all))
	}
	for _, s := range sections {
		p.section(s)
	}
	p.w.WriteString(htmlCheck + "\n</body></html>\n")
	return p.w.Flush()
}

// table writes rows (the first one the header) as an HTML table.
func (p page) table(rows [][]string) {
	if len(rows) == 0 {
		return
	}
	p.w.WriteString("<table>")
	for i, r := range rows {
		cell := "td"
		if i == 0 {
			cell = "th"
		}
		p.w.WriteString("<tr>")
		for _, c := range r {
			fmt.Fprintf(p.w, "<%s>%s</%s>", cell, esc(c), cell)
		}
		p.w.WriteString("</tr>")
	}
	p.w.WriteString("</table>\n")
}

// figure writes one chart with its caption.
func (p page) figure(kind, caption, svg string) {
	fmt.Fprintf(p.w, "<figure class=\"chart\" data-chart=\"%s\">%s<figcaption>%s</figcaption></figure>\n", kind, svg, esc(caption))
}

// none says that a chart has nothing to draw.
func (p page) none(heading, why string) {
	fmt.Fprintf(p.w, "<h3>%s</h3><p class=\"none\">%s</p>\n", esc(heading), esc(why))
}

// section writes one dataset's charts.
func (p page) section(s section) {
	st, d := s.stats, s.detail
	dist := st.distribution()
	fmt.Fprintf(p.w, "<section><h2>%s</h2>\n", esc(s.name))
	if s.state != "" {
		fmt.Fprintf(p.w, "<p>%s</p>\n", esc(s.state))
	}
	fmt.Fprintf(p.w, "<p>%s, %s with an answer; completion tokens mean %.0f, p50 %d, p90 %d, p99 %d, max %d.</p>\n",
		cliutil.Count(st.records, "record"), cliutil.Thousands(st.answers()), dist.mean, dist.p50, dist.p90, dist.p99, dist.max)
	p.lengths(st, d)
	p.w.WriteString("<h3>Finish reasons</h3>\n")
	if onlyConversations(st) {
		p.figure("finish", "how each generated turn ended", barsSVG("finish reasons of the turns", countsByName(st.conv.turnFinish), float64(st.conv.turns())))
	} else {
		p.figure("finish", "how the answers ended (none: no finish_reason, as for errors)", barsSVG("finish reasons", countsByName(st.finishReasons), float64(st.records)))
	}
	p.w.WriteString("<h3>Tokens against the budget</h3>\n")
	caption := "prompt and completion tokens of the answers; no budget given (--budget N)"
	if s.budget > 0 {
		caption = "prompt and completion tokens; the dashed box is the budget"
	}
	p.figure("budget", caption, budgetSVG(st.promptTokens, st.completionTokens, s.budget))
	p.softFailures(st, d)
	if c := st.conv; c != nil {
		p.w.WriteString("<h3>Turns per conversation</h3>\n")
		p.figure("turns", "conversations (generate --turns all) by their number of generated turns", barsSVG("turns per conversation", turnBars(c.byTurns), float64(c.count)))
		p.figure("ended", "why the conversations ended", barsSVG("why conversations ended", countsByName(c.ended), float64(c.count)))
	}
	p.w.WriteString("</section>\n")
}

// lengths charts the completion lengths: of the answers, or of every
// generated turn when the answers are conversations (max_tokens holds per
// turn).
func (p page) lengths(st *stats, d *detail) {
	p.w.WriteString("<h3>Completion length</h3>\n")
	lengths, what := st.lengths, "answers"
	if onlyConversations(st) {
		lengths, what = slices.Clone(st.conv.turnLengths), "generated turns"
		slices.Sort(lengths)
	}
	if len(lengths) == 0 {
		p.w.WriteString("<p class=\"none\">no answers</p>\n")
		return
	}
	caption := what + " by completion tokens; no max_tokens on the records"
	if len(d.limits()) > 0 {
		caption = what + " by completion tokens; the dashed line is max_tokens, where answers are cut"
	}
	p.figure("histogram", caption, histogramSVG(lengths, d.limits()))
}

// softFailures charts the answers written that are not what was asked for,
// and the records that are not answers at all.
func (p page) softFailures(st *stats, d *detail) {
	bars := countsByName(d.soft)
	for _, kind := range softfail.Kinds { // the answers' own soft failures, by lib/softfail's rules
		if n := st.soft[kind]; n > 0 {
			bars = append(bars, chartBar{strings.ReplaceAll(kind, "_", " "), float64(n)})
		}
	}
	for _, extra := range []chartBar{{"errors", float64(st.errors)}, {"duplicate ids", float64(st.duplicates)}, {"invalid lines", float64(st.invalidLines)}} {
		if extra.value > 0 {
			bars = append(bars, extra)
		}
	}
	if len(bars) == 0 {
		p.none("Soft failures", "none: no truncated, aborted, empty, repeating or leaking answers, no errors, duplicates or invalid lines")
		return
	}
	p.w.WriteString("<h3>Soft failures</h3>\n")
	p.figure("soft", "answers written but cut, aborted or failing a soft-failure rule (tokstat(1)), and records that are not answers, as a share of the records", barsSVG("soft failures", bars, float64(st.records)))
}

// overviewRows is the report's table: one row per dataset and the total.
func overviewRows(sections []section, total *stats) [][]string {
	rows := [][]string{{"dataset", "records", "prompt", "completion", "total tokens", "errors", "truncated", "duplicates"}}
	add := func(name string, s *stats) {
		rows = append(rows, []string{name, cliutil.Thousands(s.records), cliutil.Thousands(s.promptTokens), cliutil.Thousands(s.completionTokens),
			cliutil.Thousands(s.totalTokens()), cliutil.Thousands(s.errors), fmt.Sprintf("%.1f%%", 100*s.truncatedShare()), cliutil.Thousands(s.duplicates)})
	}
	for _, s := range sections {
		add(s.name, s.stats)
	}
	if total != nil {
		add("total", total)
	}
	return rows
}

// reportTitle names the inputs of a report.
func reportTitle(names []string) string {
	return "tokstat: " + strings.Join(names, ", ")
}

// writeFilesHTML writes the report of record files: one section per group
// (file or --by value), or one for all.
func writeFilesHTML(w io.Writer, cfg *config, col *collector) error {
	var sections []section
	for _, g := range col.groups {
		sections = append(sections, section{name: g.name, stats: g, detail: g.detail, budget: cfg.budget})
	}
	total := col.total
	if len(sections) == 0 {
		name := strings.Join(cfg.files, ", ")
		if name == "-" {
			name = "stdin"
		}
		sections = append(sections, section{name: name, stats: total, detail: total.detail, budget: cfg.budget})
		total = nil
	}
	sub := cliutil.Count(col.total.records, "record")
	if cfg.by != "" {
		sub += ", grouped by " + cfg.by
	}
	return writeHTML(w, reportTitle(cfg.files), sub, overviewRows(sections, total), sections)
}

// writeJobHTML writes the report of a job: its table from the status files,
// then each dataset's charts from its output.
func writeJobHTML(stdin io.Reader, w io.Writer, cfg *config, job *jobView, warn func(string)) error {
	var sections []section
	for _, v := range job.Datasets {
		s := section{name: v.Dataset, stats: newStats(v.Dataset), detail: newDetail(), budget: v.Budget, state: datasetState(v)}
		if v.Output != "" {
			sub := *cfg
			sub.files, sub.format, sub.by = []string{v.Output}, formatHTML, ""
			sub.input.SkipInvalid = true
			col := newCollector(&sub, warn)
			if err := col.readFile(stdin, v.Output); err != nil {
				warn(fmt.Sprintf("%s: %v (its charts are left out)", v.Output, err))
			} else {
				s.stats, s.detail = col.total, col.total.detail
			}
		}
		sections = append(sections, s)
	}
	rows, states := jobRows(job)
	sub := cliutil.Count(int64(job.Total.Datasets), "dataset") + ": " + strings.Join(states, ", ")
	return writeHTML(w, reportTitle(cfg.files), sub, rows, sections)
}

// datasetState is a job dataset's state in words.
func datasetState(v datasetView) string {
	parts := []string{v.State}
	records := cliutil.Count(v.Records, "record") + " ok"
	if v.Total > 0 {
		records = fmt.Sprintf("%s of %s records ok", cliutil.Thousands(v.Records), cliutil.Thousands(v.Total))
	}
	parts = append(parts, records, cliutil.Count(v.Errors, "error"), fmt.Sprintf("%s soft failures", cliutil.Thousands(v.Soft)))
	for _, s := range []string{v.Server, v.Note} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "; ")
}
