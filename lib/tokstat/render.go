package tokstat

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/softfail"
)

// row is one group's figures, computed once for every output format.
type row struct {
	*stats
	dist   distribution
	budget budgetUse
	// Conversations: their figures (empty for a group without any), the
	// turns each made and each turn's completion length.
	conv                *convStats
	turnsDist, turnDist distribution
}

func rowsOf(cfg *config, total *stats, groups []*stats) []row {
	rows := make([]row, 0, len(groups)+1)
	// The budget is per group: the total stands against all of them together.
	totalBudget := cfg.budget * int64(max(len(groups), 1))
	for _, s := range append(groups[:len(groups):len(groups)], total) {
		budget := cfg.budget
		if s == total {
			budget = totalBudget
		}
		c := s.conversations()
		rows = append(rows, row{stats: s, dist: s.distribution(), budget: s.budgetUse(budget),
			conv: c, turnsDist: distributionOf(c.perConv), turnDist: distributionOf(c.turnLengths)})
	}
	return rows
}

// kind says how a metric is printed.
type kind int

const (
	kindCount   kind = iota // a whole number
	kindMean                // a mean length
	kindShare               // a fraction: 0.1234 raw, 12.3% in the table
	kindPercent             // already in percent
)

// metric is one column, named for the TSV header and the table.
type metric struct {
	tsv, head string
	kind      kind
	value     func(r row) float64
}

func count(tsv, head string, v func(r row) int64) metric {
	return metric{tsv, head, kindCount, func(r row) float64 { return float64(v(r)) }}
}

// sections are the table's blocks, each narrow enough for a terminal; the
// TSV has them all on one line.
func sections(cfg *config, total *stats) [][]metric {
	reasons := reasonsByCount(total)
	tokens := []metric{
		count("records", "records", func(r row) int64 { return r.records }),
		count("prompt_tokens", "prompt", func(r row) int64 { return r.promptTokens }),
		count("completion_tokens", "completion", func(r row) int64 { return r.completionTokens }),
		count("total_tokens", "total", func(r row) int64 { return r.totalTokens() }),
		{"completion_mean", "mean", kindMean, func(r row) float64 { return r.dist.mean }},
		count("completion_p50", "p50", func(r row) int64 { return int64(r.dist.p50) }),
		count("completion_p90", "p90", func(r row) int64 { return int64(r.dist.p90) }),
		count("completion_p99", "p99", func(r row) int64 { return int64(r.dist.p99) }),
		count("completion_max", "max", func(r row) int64 { return int64(r.dist.max) }),
	}
	health := []metric{
		count("truncated", "truncated", func(r row) int64 { return r.truncated }),
		{"truncated_share", "trunc%", kindShare, func(r row) float64 { return r.truncatedShare() }},
		count("errors", "errors", func(r row) int64 { return r.errors }),
		count("duplicates", "dup ids", func(r row) int64 { return r.duplicates }),
		count("missing_ids", "no id", func(r row) int64 { return r.missingIDs }),
		count("invalid_lines", "invalid", func(r row) int64 { return r.invalidLines }),
		count("torn", "torn", func(r row) int64 { return r.torn }),
	}
	var finish []metric
	for _, reason := range reasons {
		finish = append(finish, count("finish_"+reason, reason, func(r row) int64 { return r.finishReasons[reason] }))
	}
	out := [][]metric{tokens, health, finish}
	if soft := softSection(total); len(soft) > 0 {
		out = append(out, soft)
	}
	out = append(out, convSections(total)...)
	if cfg.maxTrainLength > 0 {
		out = append(out, []metric{
			count("max_train_length", "train len", func(r row) int64 { return cfg.maxTrainLength }),
			count("past_train_length", "longer", func(r row) int64 { return r.trainCut.Records }),
			count("past_train_tokens", "cut tokens", func(r row) int64 { return r.trainCut.Tokens }),
			{"past_train_share", "cut%", kindShare, func(r row) float64 { return r.pastTrainShare() }},
		})
	}
	if cfg.hasBudget {
		out = append(out, []metric{
			count("budget", "budget", func(r row) int64 { return r.budget.budget }),
			count("budget_used", "used", func(r row) int64 { return r.budget.used }),
			count("budget_left", "left", func(r row) int64 { return r.budget.left }),
			{"budget_percent", "used%", kindPercent, func(r row) float64 { return r.budget.percent }},
		})
	}
	return out
}

// softSection has a column per soft failure kind found (lib/softfail), in
// the order tokstat(1) gives them; none when no answer has one.
func softSection(total *stats) []metric {
	var out []metric
	for _, kind := range softfail.Kinds {
		if total.soft[kind] > 0 {
			out = append(out, count("soft_"+kind, strings.ReplaceAll(kind, "_", " "), func(r row) int64 { return r.soft[kind] }))
		}
	}
	return out
}

// raw prints a value for machines: no separators, fixed decimals.
func (m metric) raw(r row) string {
	v := m.value(r)
	switch m.kind {
	case kindMean, kindPercent:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case kindShare:
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
	return strconv.FormatInt(int64(v), 10)
}

// human prints a value for people: thousands separated, percentages.
func (m metric) human(r row) string {
	v := m.value(r)
	switch m.kind {
	case kindMean:
		tenths := int64(math.Round(v * 10))
		return cliutil.Thousands(tenths/10) + "." + strconv.FormatInt(tenths%10, 10)
	case kindShare:
		return strconv.FormatFloat(100*v, 'f', 1, 64) + "%"
	case kindPercent:
		return strconv.FormatFloat(v, 'f', 1, 64) + "%"
	}
	return cliutil.Thousands(int64(v))
}

// groupHeading names the first column after what the groups are.
func groupHeading(cfg *config) string {
	switch {
	case cfg.by != "":
		return cfg.by
	case len(cfg.files) > 1:
		return "file"
	}
	return "group"
}

// writeTable prints each section as a block of aligned columns: the group
// name left-aligned, numbers right-aligned.
func writeTable(w io.Writer, cfg *config, total *stats, groups []*stats) error {
	rows := rowsOf(cfg, total, groups)
	bw := bufio.NewWriter(w)
	for i, sec := range sections(cfg, total) {
		if len(sec) == 0 {
			continue
		}
		if i > 0 {
			bw.WriteByte('\n')
		}
		cells := [][]string{{groupHeading(cfg)}}
		for _, m := range sec {
			cells[0] = append(cells[0], m.head)
		}
		for _, r := range rows {
			line := []string{r.name}
			for _, m := range sec {
				line = append(line, m.human(r))
			}
			cells = append(cells, line)
		}
		writeAligned(bw, cells)
	}
	return bw.Flush()
}

func writeAligned(w *bufio.Writer, cells [][]string) {
	widths := make([]int, len(cells[0]))
	for _, line := range cells {
		for j, c := range line {
			// Group names and finish reasons come from the records: no
			// escape sequence in them reaches the terminal.
			line[j] = cliutil.Printable(c)
			widths[j] = max(widths[j], utf8.RuneCountInString(line[j]))
		}
	}
	for _, line := range cells {
		for j, c := range line {
			pad := strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c))
			switch {
			case j == 0:
				w.WriteString(c + pad)
			default:
				w.WriteString("  " + pad + c)
			}
		}
		w.WriteByte('\n')
	}
}

// writeTSV prints a header line and one line per group, the total last.
func writeTSV(w io.Writer, cfg *config, total *stats, groups []*stats) error {
	rows := rowsOf(cfg, total, groups)
	var metrics []metric
	for _, sec := range sections(cfg, total) {
		metrics = append(metrics, sec...)
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("group")
	for _, m := range metrics {
		bw.WriteString("\t" + tsvField(m.tsv))
	}
	bw.WriteByte('\n')
	for _, r := range rows {
		bw.WriteString(tsvField(r.name))
		for _, m := range metrics {
			bw.WriteString("\t" + m.raw(r))
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// tsvField keeps a group name (a --by value may hold anything) on one field.
func tsvField(s string) string {
	return cliutil.Printable(strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s))
}

// jsonReport is the --json object.
type jsonReport struct {
	Total  jsonGroup   `json:"total"`
	Groups []jsonGroup `json:"groups"`
}

type jsonGroup struct {
	Group            string           `json:"group"`
	Records          int64            `json:"records"`
	PromptTokens     int64            `json:"prompt_tokens"`
	CompletionTokens int64            `json:"completion_tokens"`
	TotalTokens      int64            `json:"total_tokens"`
	CompletionLength jsonDistribution `json:"completion_length"`
	FinishReasons    map[string]int64 `json:"finish_reasons"`
	Truncated        int64            `json:"truncated"`
	TruncatedShare   float64          `json:"truncated_share"`
	Errors           int64            `json:"errors"`
	Duplicates       int64            `json:"duplicates"`
	MissingIDs       int64            `json:"missing_ids"`
	InvalidLines     int64            `json:"invalid_lines"`
	Torn             int64            `json:"torn"`
	// SoftFailures counts the answers with each soft failure (lib/softfail).
	SoftFailures map[string]int64 `json:"soft_failures,omitempty"`
	Budget       *jsonBudget      `json:"budget,omitempty"`
	// PastTrainLength: with --max-train-length.
	PastTrainLength *jsonPastTrain `json:"past_train_length,omitempty"`
	// Conversations: with any in the input, in every group.
	Conversations *jsonConversations `json:"conversations,omitempty"`
}

type jsonDistribution struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	P50   uint32  `json:"p50"`
	P90   uint32  `json:"p90"`
	P99   uint32  `json:"p99"`
	Max   uint32  `json:"max"`
}

func (d distribution) json() jsonDistribution {
	return jsonDistribution{Count: d.count, Mean: round(d.mean, 2), P50: d.p50, P90: d.p90, P99: d.p99, Max: d.max}
}

// jsonPastTrain is what a trainer with sequence length MaxTrainLength cuts:
// the records longer than it, the tokens past it and their share of all.
type jsonPastTrain struct {
	MaxTrainLength int64   `json:"max_train_length"`
	Records        int64   `json:"records"`
	Tokens         int64   `json:"tokens"`
	Share          float64 `json:"share"`
}

type jsonBudget struct {
	Tokens  int64   `json:"tokens"`
	Used    int64   `json:"used"`
	Left    int64   `json:"left"`
	Percent float64 `json:"percent"`
}

// round keeps floats short and stable in the JSON.
func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}

func (r row) json(cfg *config, hasConversations bool) jsonGroup {
	g := jsonGroup{
		Group:            r.name,
		Records:          r.records,
		PromptTokens:     r.promptTokens,
		CompletionTokens: r.completionTokens,
		TotalTokens:      r.totalTokens(),
		CompletionLength: r.dist.json(),
		FinishReasons:    r.finishReasons,
		Truncated:        r.truncated,
		TruncatedShare:   round(r.truncatedShare(), 4),
		Errors:           r.errors,
		Duplicates:       r.duplicates,
		MissingIDs:       r.missingIDs,
		InvalidLines:     r.invalidLines,
		Torn:             r.torn,
		SoftFailures:     r.soft,
	}
	if hasConversations {
		g.Conversations = r.jsonConversations()
	}
	if cfg.maxTrainLength > 0 {
		g.PastTrainLength = &jsonPastTrain{MaxTrainLength: cfg.maxTrainLength, Records: r.trainCut.Records, Tokens: r.trainCut.Tokens,
			Share: round(r.pastTrainShare(), 4)}
	}
	if cfg.hasBudget {
		g.Budget = &jsonBudget{Tokens: r.budget.budget, Used: r.budget.used, Left: r.budget.left,
			Percent: round(r.budget.percent, 2)}
	}
	return g
}

// writeJSON prints the report as one indented JSON object.
func writeJSON(w io.Writer, cfg *config, total *stats, groups []*stats) error {
	rows := rowsOf(cfg, total, groups)
	rep := jsonReport{Groups: []jsonGroup{}}
	convs := total.conv != nil
	for _, r := range rows[:len(rows)-1] {
		rep.Groups = append(rep.Groups, r.json(cfg, convs))
	}
	rep.Total = rows[len(rows)-1].json(cfg, convs)
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the report: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
