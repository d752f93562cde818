package estimate

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/exitcode"
)

// report is the estimate, as --json prints it.
type report struct {
	Budget *int64 `json:"budget"`
	// MaxTrainLength: --max-train-length, with each row's PastTrain.
	MaxTrainLength *int64          `json:"max_train_length,omitempty"`
	Seed           uint64          `json:"seed"`
	Draws          int             `json:"draws"`
	Backends       []backendReport `json:"backends"`
	Datasets       []*datasetRow   `json:"datasets"`
	Total          *datasetRow     `json:"total"`
}

type backendReport struct {
	Label       string   `json:"label"`
	Kind        string   `json:"kind"`
	URL         string   `json:"url"`
	Model       string   `json:"model,omitempty"`
	KVTokens    int      `json:"kv_tokens,omitempty"`
	MaxRunning  int      `json:"max_running,omitempty"`
	Rate        *float64 `json:"rate,omitempty"`         // tokens per second of the whole backend
	StepSeconds *float64 `json:"step_seconds,omitempty"` // SGLang: a decode step's fixed part
	// StepSecondsPerRequest is what each running request adds to a step.
	StepSecondsPerRequest *float64 `json:"step_seconds_per_request,omitempty"`
	RateSource            string   `json:"rate_source"`
	PriceIn               *float64 `json:"price_in,omitempty"`  // USD per million prompt tokens
	PriceOut              *float64 `json:"price_out,omitempty"` // USD per million completion tokens
	PriceSource           string   `json:"price_source,omitempty"`
	HourlyCost            *float64 `json:"hourly_cost,omitempty"`
}

// datasetRow is one row of the table.
type datasetRow struct {
	Dataset     string  `json:"dataset"`
	Records     int64   `json:"records"`
	DoneRecords int64   `json:"done_records"`
	Spent       int64   `json:"spent"`
	BudgetLeft  *int64  `json:"budget_left,omitempty"`
	Fit         float64 `json:"fit"`
	// Conversations (tokenize-prompts --turns all records) among the
	// records; with any, the turns (requests) of the records that fit and
	// their prompt tokens past a prefix cache (see prefilled).
	Conversations int64    `json:"conversations,omitempty"`
	Turns         *float64 `json:"turns,omitempty"`
	Prefill       *float64 `json:"prefill_tokens,omitempty"`
	Prompt        float64  `json:"prompt_tokens"`
	Completion    float64  `json:"completion_tokens"`
	TotalTokens   spread   `json:"total_tokens"`
	Uncut         spread   `json:"uncut_tokens"`
	PastBudget    float64  `json:"past_budget"`
	// PastTrain: the tokens of the records that fit that a trainer with
	// sequence length --max-train-length cuts off (paid for, never
	// trained), and how many records lose some; with that flag only.
	PastTrain        *float64      `json:"past_train_tokens,omitempty"`
	PastTrainRecords *float64      `json:"past_train_records,omitempty"`
	Lengths          *lengthReport `json:"lengths,omitempty"`
	Backends         []cost        `json:"backends"`

	totals []int64 // per draw, for the total row's percentiles
	uncuts []int64
	// turns and prefill are shown (Turns, Prefill) when the input holds
	// conversations.
	turns, prefill float64
}

type spread struct {
	Mean float64 `json:"mean"`
	P10  int64   `json:"p10"`
	P50  int64   `json:"p50"`
	P90  int64   `json:"p90"`
}

func spreadOf(v []int64) spread {
	return spread{Mean: mean(v), P10: percentile(v, 10), P50: percentile(v, 50), P90: percentile(v, 90)}
}

type lengthReport struct {
	Source         string  `json:"source"`
	Mean           float64 `json:"mean"`
	TruncatedShare float64 `json:"truncated_share"`
}

// cost is one dataset on one backend. Seconds and USD are null when the
// backend has no speed or no price.
type cost struct {
	Label        string   `json:"label"`
	Seconds      *float64 `json:"seconds"`
	Hours        *float64 `json:"hours"`
	USD          *float64 `json:"usd"`
	Steps        int64    `json:"steps,omitempty"` // SGLang: decode steps
	UncutSeconds *float64 `json:"uncut_seconds,omitempty"`
	UncutUSD     *float64 `json:"uncut_usd,omitempty"`
	// NotComputed names the figures that came out as no time or money (a
	// speed or price past belief): null above, and said.
	NotComputed []string `json:"not_computed,omitempty"`
}

func ptr[T any](v T) *T { return &v }

// roundTo rounds v to a multiple of unit, away from float noise such as
// 0.09999999999999999 for a price of 0.1.
func roundTo(v, unit float64) float64 { return math.Round(v/unit) * unit }

// lengthsFor picks what a dataset's answers are drawn from: its own done
// answers when there are enough, else --lengths, else every dataset's.
func lengthsFor(g *group, cfg *config, pooled *empirical) (lengths, error) {
	own := &empirical{values: g.done.answers, truncated: g.done.truncated, limit: cfg.maxTokens, source: "done file"}
	switch {
	case len(own.values) >= minDoneAnswers:
		return own, nil
	case cfg.lengths != nil:
		return cfg.lengths, nil
	case pooled != nil && len(pooled.values) > 0:
		return pooled, nil
	case len(own.values) > 0:
		return own, nil
	}
	return nil, cliutil.Usagef("dataset %q: no answer lengths known (no answers in the done file): give --lengths SPEC", g.name)
}

// pooledLengths is every dataset's done answers, the datasets in name
// order; nil without a done record.
func pooledLengths(done map[string]*doneStats, maxTokens int) *empirical {
	var pooled *empirical
	// The same pooled sample, and so the same draws, every time.
	for _, name := range slices.Sorted(maps.Keys(done)) {
		d := done[name]
		if pooled == nil {
			pooled = &empirical{limit: maxTokens, source: "done file, all datasets"}
		}
		pooled.values = append(pooled.values, d.answers...)
		pooled.truncated += d.truncated
	}
	return pooled
}

func buildReport(cfg *config, groups []*group, done map[string]*doneStats, backends []*backendModel) (*report, error) {
	rep := &report{Seed: cfg.seed, Draws: cfg.draws}
	if cfg.maxTrainLength > 0 {
		rep.MaxTrainLength = ptr(cfg.maxTrainLength)
	}
	if cfg.budget >= 0 {
		rep.Budget = ptr(cfg.budget)
	}
	if len(groups) == 0 {
		return nil, exitcode.NoInputf("no records to do in the input: nothing to estimate")
	}
	pooled := pooledLengths(done, cfg.maxTokens)
	for _, b := range backends {
		rep.Backends = append(rep.Backends, describeBackend(b))
	}
	total := &datasetRow{Dataset: "total", Backends: make([]cost, len(backends))}
	for i, b := range backends {
		total.Backends[i].Label = b.label
	}
	total.totals = make([]int64, cfg.draws)
	total.uncuts = make([]int64, cfg.draws)
	for _, g := range groups {
		dist, err := lengthsFor(g, cfg, pooled)
		if err != nil {
			return nil, err
		}
		row := estimateRow(cfg, g, dist, backends)
		addRow(total, row)
		rep.Datasets = append(rep.Datasets, row)
	}
	rep.Total = total
	rep.finishTotal(cfg.budget >= 0)
	return rep, nil
}

// estimateRow is a dataset's row: its futures drawn with answers from
// dist, and their time and money on each backend.
func estimateRow(cfg *config, g *group, dist lengths, backends []*backendModel) *datasetRow {
	row := &datasetRow{Dataset: g.name, Records: int64(len(g.todo)), Conversations: g.convs, DoneRecords: g.done.records, Spent: g.done.spent,
		Lengths: &lengthReport{Source: dist.String(), Mean: dist.mean(), TruncatedShare: dist.truncatedShare()}}
	left := int64(-1)
	if cfg.budget >= 0 {
		left = max(cfg.budget-g.done.spent, 0)
		row.BudgetLeft = ptr(left)
	}
	draws := simulate(g, dist, left, cfg.draws, cfg.seed, cfg.maxTokens, cfg.maxTrainLength)
	row.addDraws(draws, cfg.maxTrainLength > 0)
	if left >= 0 {
		past := make([]int64, len(draws))
		for i, d := range draws {
			past[i] = max(d.uncut-left, 0)
		}
		row.PastBudget = mean(past)
	}
	for _, b := range backends {
		row.Backends = append(row.Backends, costOf(b, draws, left, cfg.maxTokens))
	}
	return row
}

// addDraws gives the row the means and spreads of its draws' tokens, and
// with pastTrain what a trainer cuts off.
func (row *datasetRow) addDraws(draws []draw, pastTrain bool) {
	var fit, prompt, completion, turns, prefill, trainCut, trainCutRecords []int64
	for _, d := range draws {
		trainCut = append(trainCut, d.pastTrain)
		trainCutRecords = append(trainCutRecords, d.pastTrainRecords)
		fit = append(fit, d.fit)
		prompt = append(prompt, d.prompt)
		completion = append(completion, d.completion)
		turns = append(turns, d.turns)
		prefill = append(prefill, d.prefill)
		row.totals = append(row.totals, d.total())
		row.uncuts = append(row.uncuts, d.uncut)
	}
	row.Fit, row.Prompt, row.Completion = mean(fit), mean(prompt), mean(completion)
	row.turns, row.prefill = mean(turns), mean(prefill)
	if pastTrain {
		row.PastTrain, row.PastTrainRecords = ptr(mean(trainCut)), ptr(mean(trainCutRecords))
	}
	row.TotalTokens, row.Uncut = spreadOf(row.totals), spreadOf(row.uncuts)
}

// finishTotal completes the total row once every dataset is added: its
// spreads, what is left of the budgets (with a budget), and the
// conversation columns of every row when any dataset holds conversations.
func (rep *report) finishTotal(hasBudget bool) {
	total := rep.Total
	for i := range total.Backends {
		total.Backends[i].dropNotComputed()
	}
	total.TotalTokens, total.Uncut = spreadOf(total.totals), spreadOf(total.uncuts)
	if hasBudget {
		var left int64
		for _, r := range rep.Datasets {
			left += *r.BudgetLeft
		}
		total.BudgetLeft = ptr(left)
	}
	if total.Conversations > 0 {
		for _, r := range append(rep.Datasets, total) {
			r.Turns, r.Prefill = ptr(r.turns), ptr(r.prefill)
		}
	}
}

// costOf is a dataset's time and money on a backend, the mean over the
// timed draws.
func costOf(b *backendModel, draws []draw, left int64, reserve int) cost {
	c := cost{Label: b.label}
	hasBudget := left >= 0
	n := min(len(draws), timedDraws)
	var secs, uncutSecs, usd, uncutUSD float64
	var steps int64
	for _, d := range draws[:n] {
		s, st := b.runTime(d.jobs, d.follows, left, reserve)
		secs += s
		steps += st
		if hasBudget {
			us, _ := b.runTime(d.uncutJobs, d.uncutFollows, -1, 0)
			uncutSecs += us
		}
	}
	for _, d := range draws {
		usd += float64(d.prompt)*b.price.prompt + float64(d.completion)*b.price.completion
		uncutUSD += float64(d.uncutPrompt)*b.price.prompt + float64(d.uncutCompl)*b.price.completion
	}
	usd = roundTo(usd/float64(len(draws)), 1e-9)
	uncutUSD = roundTo(uncutUSD/float64(len(draws)), 1e-9)
	why := &c.NotComputed
	if b.knowsTime() {
		if c.Seconds = bounded(secs/float64(n), maxSeconds, "time", "s", why); c.Seconds != nil {
			c.Hours = ptr(*c.Seconds / 3600)
			c.Steps = steps / int64(n)
		}
		if hasBudget {
			c.UncutSeconds = bounded(uncutSecs/float64(n), maxSeconds, "uncut time", "s", why)
		}
	}
	switch {
	case b.kind == kindOpenRouter:
		c.USD = bounded(usd, maxUSD, "cost", "USD", why)
		if hasBudget {
			c.UncutUSD = bounded(uncutUSD, maxUSD, "uncut cost", "USD", why)
		}
	case b.hourlyCost > 0 && c.Seconds != nil:
		c.USD = bounded(*c.Hours*b.hourlyCost, maxUSD, "cost", "USD", why)
		if hasBudget && c.UncutSeconds != nil {
			c.UncutUSD = bounded(*c.UncutSeconds/3600*b.hourlyCost, maxUSD, "uncut cost", "USD", why)
		}
	}
	return c
}

// addRow adds a dataset to the total: the datasets run one after another.
func addRow(t, r *datasetRow) {
	t.Records += r.Records
	t.DoneRecords += r.DoneRecords
	t.Spent += r.Spent
	t.Fit += r.Fit
	t.Conversations += r.Conversations
	t.turns += r.turns
	t.prefill += r.prefill
	t.Prompt += r.Prompt
	t.Completion += r.Completion
	t.PastBudget += r.PastBudget
	if r.PastTrain != nil {
		t.PastTrain = ptr(value(t.PastTrain) + *r.PastTrain)
		t.PastTrainRecords = ptr(value(t.PastTrainRecords) + *r.PastTrainRecords)
	}
	for i, v := range r.totals {
		t.totals[i] += v
		t.uncuts[i] += r.uncuts[i]
	}
	for i, c := range r.Backends {
		tc := &t.Backends[i]
		tc.Steps += c.Steps
		tc.Seconds = addPtr(tc.Seconds, c.Seconds)
		tc.Hours = addPtr(tc.Hours, c.Hours)
		tc.USD = addPtr(tc.USD, c.USD)
		tc.UncutSeconds = addPtr(tc.UncutSeconds, c.UncutSeconds)
		tc.UncutUSD = addPtr(tc.UncutUSD, c.UncutUSD)
		for _, w := range c.NotComputed {
			if !slices.Contains(tc.NotComputed, w) {
				tc.NotComputed = append(tc.NotComputed, w)
			}
		}
	}
}

// dropNotComputed leaves out of a total the figures some dataset could not
// compute: a sum without them would be less than the whole.
func (c *cost) dropNotComputed() {
	for _, w := range c.NotComputed {
		switch what, _, _ := strings.Cut(w, " ("); what {
		case "time":
			c.Seconds, c.Hours = nil, nil
		case "uncut time":
			c.UncutSeconds = nil
		case "cost":
			c.USD = nil
		case "uncut cost":
			c.UncutUSD = nil
		}
	}
}

// notComputedLines says, per backend, what the table leaves out and why.
func notComputedLines(rep *report) string {
	var b strings.Builder
	for i, c := range rep.Total.Backends {
		if len(c.NotComputed) > 0 {
			fmt.Fprintf(&b, "%s: not computed: %s: the speed or prices it was given are past belief (see %s's line above)\n",
				rep.Backends[i].Label, strings.Join(c.NotComputed, ", "), rep.Backends[i].Label)
		}
	}
	return b.String()
}

func addPtr(a, b *float64) *float64 {
	if b == nil {
		return a
	}
	if a == nil {
		return ptr(*b)
	}
	return ptr(*a + *b)
}

func describeBackend(b *backendModel) backendReport {
	r := backendReport{Label: b.label, URL: b.url, Model: b.model, RateSource: b.rateSource}
	if b.rate > 0 {
		r.Rate = ptr(b.rate)
	}
	switch b.kind {
	case kindSGLang:
		r.Kind = "sglang"
		r.KVTokens, r.MaxRunning = b.cap.Tokens, b.cap.MaxRunning
		if b.step.known() {
			r.StepSeconds = ptr(b.step.fixed)
			r.StepSecondsPerRequest = ptr(b.step.perRequest)
		}
		if b.hourlyCost > 0 {
			r.HourlyCost = ptr(b.hourlyCost)
		}
	case kindOpenRouter:
		r.Kind = "openrouter"
		r.PriceIn, r.PriceOut = ptr(roundTo(b.price.prompt*perMillion, 1e-9)), ptr(roundTo(b.price.completion*perMillion, 1e-9))
		r.PriceSource = b.priceSource
	}
	return r
}

func writeJSON(w io.Writer, rep *report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// writeSources prints where the figures come from: the backends' sources,
// each dataset's answers and budget, and what conversations' figures mean.
func writeSources(b *strings.Builder, rep *report) {
	for _, be := range rep.Backends {
		fmt.Fprintf(b, "%s  %s\n", be.Label, backendLine(be))
	}
	for _, d := range rep.Datasets {
		l := d.Lengths
		fmt.Fprintf(b, "%s: answers from %s, mean %s tokens, %.1f%% truncated", d.Dataset, l.Source,
			cliutil.Thousands(int64(math.Round(l.Mean))), 100*l.TruncatedShare)
		if d.BudgetLeft != nil {
			fmt.Fprintf(b, "; budget %s, %s spent, %s left", cliutil.Thousands(*rep.Budget), cliutil.Thousands(d.Spent), cliutil.Thousands(*d.BudgetLeft))
		}
		if d.Conversations > 0 {
			fmt.Fprintf(b, "; %s", cliutil.Count(d.Conversations, "conversation"))
		}
		b.WriteString("\n")
	}
	if rep.Total.Turns != nil {
		b.WriteString("conversations: turns are requests (a record of one answer is one); prompt is every turn's prompt as sent,\n" +
			"  the conversation so far each time (budgets and prices count it); prefill is the prompt a prefix cache does not hold\n")
	}
}

// writeTable prints where the figures come from, then the table.
func writeTable(w io.Writer, rep *report) error {
	var b strings.Builder
	writeSources(&b, rep)
	convs := rep.Total.Turns != nil
	b.WriteString("\n")
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{"dataset", "records"}
	if rep.Budget != nil {
		header = append(header, "fit")
	}
	if convs {
		header = append(header, "turns")
	}
	header = append(header, "prompt")
	if convs {
		header = append(header, "prefill")
	}
	header = append(header, "completion", "total", "p10", "p90")
	if rep.Budget != nil {
		header = append(header, "past budget")
	}
	if rep.MaxTrainLength != nil {
		header = append(header, "past train len")
	}
	for _, be := range rep.Backends {
		header = append(header, be.Label+" time", be.Label+" USD")
	}
	rows := append(rep.Datasets, rep.Total)
	width := len(header[0])
	for _, r := range rows {
		width = max(width, len(r.Dataset))
	}
	header[0] = padRight(header[0], width)
	writeCells(tw, header)
	for _, r := range rows {
		cells := []string{padRight(r.Dataset, width), cliutil.Thousands(r.Records)}
		if rep.Budget != nil {
			cells = append(cells, cliutil.Thousands(int64(math.Round(r.Fit))))
		}
		if convs {
			cells = append(cells, cliutil.Thousands(int64(math.Round(*r.Turns))))
		}
		cells = append(cells, tokens(r.Prompt))
		if convs {
			cells = append(cells, tokens(*r.Prefill))
		}
		cells = append(cells, tokens(r.Completion), tokens(r.TotalTokens.Mean),
			tokens(float64(r.TotalTokens.P10)), tokens(float64(r.TotalTokens.P90)))
		if rep.Budget != nil {
			cells = append(cells, tokens(r.PastBudget))
		}
		if rep.MaxTrainLength != nil {
			cells = append(cells, tokens(value(r.PastTrain)))
		}
		for _, c := range r.Backends {
			cells = append(cells, duration(c.Seconds), dollars(c.USD))
		}
		writeCells(tw, cells)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Right alignment pads the first column too: drop that padding.
	for _, line := range strings.SplitAfter(table.String(), "\n") {
		b.WriteString(strings.TrimPrefix(line, "  "))
	}
	if rep.Budget != nil {
		b.WriteString(uncutLine(rep.Total))
	}
	b.WriteString(notComputedLines(rep))
	_, err := io.WriteString(w, b.String())
	return err
}

// uncutLine says what running every record, the budget ignored, would add.
func uncutLine(t *datasetRow) string {
	var parts []string
	for _, c := range t.Backends {
		var more []string
		if c.UncutSeconds != nil && c.Seconds != nil {
			// Less time is possible: without --token-budget's
			// reservations nothing holds the requests back.
			if d := *c.UncutSeconds - *c.Seconds; d >= 0 {
				more = append(more, duration(&d)+" more")
			} else {
				more = append(more, duration(ptr(-d))+" less")
			}
		}
		if c.UncutUSD != nil && c.USD != nil {
			more = append(more, dollars(ptr(*c.UncutUSD-*c.USD))+" more")
		}
		if len(more) > 0 {
			parts = append(parts, c.Label+" "+strings.Join(more, ", "))
		}
	}
	line := fmt.Sprintf("\nwithout the budget: %s records, %s tokens, %s past the budget", cliutil.Thousands(t.Records),
		tokens(t.Uncut.Mean), tokens(t.PastBudget))
	if len(parts) > 0 {
		line += "; " + strings.Join(parts, "; ")
	}
	return line + "\n"
}

func writeCells(tw *tabwriter.Writer, cells []string) {
	fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
}

// padRight pads the dataset names to one width: the table aligns numbers
// right, and names read better aligned left.
func padRight(s string, width int) string {
	return s + strings.Repeat(" ", max(width-len(s), 0))
}

func backendLine(be backendReport) string {
	var parts []string
	switch be.Kind {
	case "sglang":
		parts = append(parts, fmt.Sprintf("sglang %s: KV %s tokens, %s running at most", be.URL,
			cliutil.Thousands(int64(be.KVTokens)), cliutil.Thousands(int64(be.MaxRunning))))
		if be.HourlyCost != nil {
			parts = append(parts, fmt.Sprintf("$%.2f an hour", *be.HourlyCost))
		}
	default:
		parts = append(parts, fmt.Sprintf("openrouter %s: $%s in, $%s out per million tokens (%s)", be.Model,
			money(*be.PriceIn), money(*be.PriceOut), be.PriceSource))
	}
	if be.RateSource != "" {
		parts = append(parts, "speed from "+be.RateSource)
	} else {
		parts = append(parts, "no speed known (give --rate)")
	}
	return strings.Join(parts, "; ")
}

// tokens writes a token count: exact below a million, else 12.3M.
func tokens(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	}
	return cliutil.Thousands(int64(math.Round(v)))
}

func money(v float64) string {
	s := fmt.Sprintf("%.4f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

func dollars(v *float64) string {
	if v == nil {
		return "-"
	}
	switch {
	case *v > 0 && *v < 0.01:
		return "$" + strconv.FormatFloat(*v, 'g', 2, 64)
	case *v < 10:
		return fmt.Sprintf("$%.2f", *v)
	}
	return "$" + cliutil.Thousands(int64(math.Round(*v)))
}

// duration writes seconds as people read a run's length: 45s, 12m30s, 7h05m.
func duration(secs *float64) string {
	if secs == nil {
		return "-"
	}
	d := time.Duration(*secs * float64(time.Second))
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds()))
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// value is *p, 0 for nil.
func value(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
