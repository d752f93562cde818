package generate

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/cliutil"
)

// progress prints how the run goes on stderr: on a terminal a bar redrawn
// in place every second, elsewhere (a log file, TERM=dumb) a plain line
// every --progress-interval. Its console is the run's stderr: every other
// line goes through it, so that none is glued onto the bar.
type progress struct {
	console *console
	live    bool
	colour  bool // live and NO_COLOR unset
	width   int  // columns the live line may take
	every   time.Duration
	total   int64 // records expected, 0: unknown
}

// console owns stderr while a run goes on. On a terminal the live bar stays
// on the last line: a log line clears it first, is printed, and the bar is
// drawn again below it.
type console struct {
	mu  sync.Mutex
	w   io.Writer
	bar string // the live line on screen, "" while none
}

// Write prints whole lines (a log line is one Write) above the live bar.
func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bar == "" {
		return c.w.Write(p)
	}
	if _, err := io.WriteString(c.w, eraseLine); err != nil {
		return 0, err
	}
	n, err := c.w.Write(p)
	if err == nil && len(p) > 0 && p[len(p)-1] == '\n' {
		_, err = io.WriteString(c.w, c.bar+clearToEnd)
	}
	return n, err
}

// draw puts line on the screen's last line in place of the bar before.
func (c *console) draw(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bar = line
	io.WriteString(c.w, "\r"+line+clearToEnd)
}

// clear takes the bar off the screen, before the summary.
func (c *console) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bar != "" {
		io.WriteString(c.w, eraseLine)
		c.bar = ""
	}
}

// The escapes of a live line: back to its start, and erase from the cursor
// to the end of the line (ECMA-48 EL).
const (
	clearToEnd = "\x1b[K"
	eraseLine  = "\r" + clearToEnd
)

// liveRedraw is how often a terminal line is redrawn.
const liveRedraw = time.Second

// defaultColumns is the width assumed when neither the terminal nor $COLUMNS
// says.
const defaultColumns = 100

// newProgress reports on w: the console that owns stderr, or a writer it
// wraps in one.
func newProgress(w io.Writer, every time.Duration, total int64) *progress {
	con, ok := w.(*console)
	if !ok {
		con = &console{w: w}
	}
	p := &progress{console: con, every: every, total: total}
	fd, isFile := fileDescriptor(con.w)
	p.live, p.colour = progressMode(isFile && term.IsTerminal(fd), os.Getenv("TERM"), os.Getenv("NO_COLOR"))
	if p.live {
		p.every = liveRedraw
		// One column short of the edge: a line that fills the last
		// column wraps on many terminals, and "\r" would then redraw
		// only its second half.
		p.width = terminalColumns(fd) - 1
	}
	return p
}

// progressMode decides between the live bar (a terminal that can redraw a
// line) and plain lines, and whether the bar has colours (NO_COLOR unset,
// as https://no-color.org asks).
func progressMode(terminal bool, term, noColor string) (live, colour bool) {
	live = terminal && term != "dumb"
	return live, live && noColor == ""
}

// fileDescriptor is w's descriptor when w is an open file.
func fileDescriptor(w io.Writer) (int, bool) {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return 0, false
	}
	return int(f.Fd()), true
}

// terminalColumns is the width of the terminal on fd, as the kernel knows it
// (a window resized later is not followed); else $COLUMNS, which a shell sets
// for itself but rarely exports; else defaultColumns.
func terminalColumns(fd int) int {
	if n, _, err := term.GetSize(fd); err == nil && n > 0 {
		return n
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return defaultColumns
}

// loop prints until stop is closed.
func (p *progress) loop(s *scheduler, stop <-chan struct{}) {
	if p.every <= 0 {
		return
	}
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			p.console.clear()
			return
		case <-t.C:
			p.print(s.progressView(p.total))
		}
	}
}

func (p *progress) print(v progressView) {
	if p.live {
		p.console.draw(renderBar(v, p.width, p.colour))
		return
	}
	fmt.Fprintf(p.console, "generate: %s\n", plainLine(v))
}

// progressView is one progress report: counts, rates and the ETA.
type progressView struct {
	done, total           int64 // total 0: unknown
	ok, errors, truncated int64
	reqPerSec, tokPerSec  float64
	meanCompletion        float64
	inFlight              int
	limit                 string // what holds the requests in flight down, "" nothing
	elapsed               time.Duration
	eta                   time.Duration
	hasETA                bool
	etaLater              bool // an ETA is coming, once enough answers are in
	// standing is the budgets, soft failures, retries, servers down and
	// the servers' own view; countMode names what the token budget counts.
	standing  standing
	countMode string
}

// progressView takes the counts, rates and ETA of the run now.
func (s *scheduler) progressView(total int64) progressView {
	est, meanPrompt, inFlight := s.estimate()
	t := s.collector.counts()
	elapsed := time.Since(s.start)
	secs := max(elapsed.Seconds(), 1e-3)
	v := progressView{
		done: t.finished(), total: total,
		ok: t.ok, errors: t.errors, truncated: t.truncated,
		reqPerSec:      float64(t.ok) / secs,
		tokPerSec:      float64(t.completionTokens) / secs,
		meanCompletion: est.Mean,
		inFlight:       inFlight,
		limit:          holdNames[s.dispatcher.limits.limiting(&s.shownLimit)],
		elapsed:        elapsed,
	}
	v.etaLater = total > 0 || s.budget.tokensLeft() >= 0
	if est.Samples >= minETASamples {
		v.eta, v.hasETA = s.eta(t, total, inFlight, est, meanPrompt, elapsed)
	}
	v.standing, v.countMode = s.standing(), s.cfg.countMode.String()
	return v
}

// minETASamples is how many answers the ETA waits for: before them the
// lengths and the decode rate are guesses, and an ETA made of guesses was
// off by a factor of ten.
const minETASamples = 16

// percentDone is done of total in whole percent, rounded down: 100% only
// when every record is done.
func percentDone(done, total int64) int64 {
	return min(100*done/total, 100)
}

// inFlightText is the requests in flight and what keeps them from being
// more.
func inFlightText(v progressView) string {
	if v.limit == "" {
		return fmt.Sprintf("%d in flight", v.inFlight)
	}
	return fmt.Sprintf("%d in flight (limit: %s)", v.inFlight, v.limit)
}

// plainLine is the report as one line of a log.
func plainLine(v progressView) string {
	var b strings.Builder
	if v.total > 0 {
		fmt.Fprintf(&b, "%s/%s done (%d%%)", cliutil.Thousands(v.done), cliutil.Thousands(v.total), percentDone(v.done, v.total))
	} else {
		fmt.Fprintf(&b, "%s done", cliutil.Thousands(v.done))
	}
	fmt.Fprintf(&b, ", %s ok, %s err, %s trunc, %.1f req/s, %s tok/s out, mean completion %s, %s, %s elapsed",
		cliutil.Thousands(v.ok), cliutil.Thousands(v.errors), cliutil.Thousands(v.truncated), v.reqPerSec,
		cliutil.Thousands(int64(v.tokPerSec)), cliutil.Thousands(int64(v.meanCompletion)), inFlightText(v), v.elapsed.Round(time.Second))
	if v.hasETA {
		fmt.Fprintf(&b, ", ETA %s", v.eta.Round(time.Second))
	}
	b.WriteString(v.standing.plain(v.countMode))
	return b.String()
}

// ANSI colours of the live bar.
const (
	ansiGreen = "\x1b[32m"
	ansiRed   = "\x1b[31m"
	ansiReset = "\x1b[0m"
)

// The bar takes a fifth of the line, within these bounds; below minBar
// columns it is left out and the numbers keep the line.
const (
	minBar = 10
	maxBar = 40
)

// renderBar is the live line, at most width columns wide:
//
//	[##########..............]  45% 812/1,800 ok 800 err 12 trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight (limit: budget) | ETA 12m
//
// The bar takes a fifth of the width (10 to 40 columns), the numbers the
// rest. Without a known total there is no bar and no percentage. A narrow
// terminal loses the standing's parts (the server's view, trouble) first,
// then the rates, the budget's share, the requests in flight, the ETA and
// the bar, so that the counts stay. colour paints the bar and a non-zero
// error count (escapes take no columns).
func renderBar(v progressView, width int, colour bool) string {
	head := cliutil.Thousands(v.done) + " done"
	if v.total > 0 {
		head = fmt.Sprintf("%d%% %s/%s", percentDone(v.done, v.total), cliutil.Thousands(v.done), cliutil.Thousands(v.total))
	}
	counts := fmt.Sprintf("%s ok %s err %s trunc %s", head, cliutil.Thousands(v.ok), cliutil.Thousands(v.errors), cliutil.Thousands(v.truncated))
	rates := fmt.Sprintf(" | %.1f req/s %s tok/s", v.reqPerSec, cliutil.Thousands(int64(v.tokPerSec)))
	flight := " | " + inFlightText(v)
	eta := ""
	switch {
	case v.hasETA:
		eta = " | ETA " + shortDuration(v.eta)
	case v.etaLater:
		eta = " | ETA ..."
	}
	// The longest of these lines that fits room: the standing's parts go
	// first, the last first, but for the first (the budget's share when
	// there is a budget), then the rates, that first part, the requests in
	// flight and the ETA.
	extras := v.standing.barParts()
	var lines []string
	for n := len(extras); n >= min(len(extras), 1); n-- {
		lines = append(lines, counts+rates+flight+eta+strings.Join(extras[:n], ""))
	}
	if len(extras) > 0 {
		lines = append(lines, counts+flight+eta+extras[0])
	}
	lines = append(lines, counts+flight+eta, counts+eta)
	fit := func(room int) string {
		for _, line := range lines {
			if len(line) <= room {
				return line
			}
		}
		return counts
	}
	barWidth := min(max(width/5, minBar), maxBar)
	// "[" + bar + "]" + two spaces before the numbers.
	room := width - barWidth - 4
	line := fit(room)
	if v.total == 0 || len(line) > room || width/5 < minBar {
		barWidth = 0
		line = fit(width)
	}
	if len(line) > width {
		line = line[:max(width, 0)]
	}
	if colour && v.errors > 0 {
		errs := " err " + cliutil.Thousands(v.errors) + " "
		if i := strings.Index(line, errs); i >= 0 {
			line = line[:i+5] + ansiRed + cliutil.Thousands(v.errors) + ansiReset + line[i+len(errs)-1:]
		}
	}
	if barWidth == 0 {
		return line
	}
	// Whole characters only, rounded down like the percentage: a full bar
	// means every record is done.
	filled := int(min(v.done*int64(barWidth)/v.total, int64(barWidth)))
	bar := strings.Repeat("#", filled)
	if colour {
		bar = ansiGreen + bar + ansiReset
	}
	return "[" + bar + strings.Repeat(".", barWidth-filled) + "]  " + line
}

// shortDuration is d as a person reads an ETA: 45s, 12m, 3h05m.
func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// drainWeight is the share of the drain's extra time the ETA counts.
const drainWeight = 0.5

// eta estimates the time left from tokens, not records: the work left is the
// records not started times the expected answer length, plus what the
// requests in flight still have to generate, divided by the rate tokens are
// generated at (counting the progress of the requests in flight, so that
// the start of the run, when few answers have finished, is not read as
// slow). The last wave adds its drain: the run ends with the longest answer
// in flight while the other slots sit idle. With a token budget the work
// left stops at the budget.
func (s *scheduler) eta(t tally, total int64, inFlight int, est capacity.LengthEstimate, meanPrompt float64, elapsed time.Duration) (time.Duration, bool) {
	// The rate tokens are generated at now: every request in flight at the
	// per-request decode rate. The average since the start would count the
	// first wave's ramp, when few answers had finished.
	// Requests queued on a server beyond what its KV cache holds generate
	// nothing yet: they are not counted.
	rate := min(float64(inFlight), s.dispatcher.pool.decoding()) * est.DecodeRate
	if inFlight == 0 || est.DecodeRate == 0 {
		rate = (float64(t.completionTokens) + est.InFlightDone) / elapsed.Seconds()
	}
	if rate <= 0 || est.Mean <= 0 {
		return 0, false
	}
	notStarted := math.Inf(1)
	if total > 0 {
		notStarted = float64(max(total-t.finished()-int64(inFlight), 0))
	}
	tail := 0.0 // the budget's tail, when a budget holds the run
	if left := s.budget.tokensLeft(); left >= 0 {
		tail = s.budgetTail(left, notStarted, inFlight, est, meanPrompt)
		notStarted = min(notStarted, s.budgetStarts(left, inFlight, est, meanPrompt))
	}
	if math.IsInf(notStarted, 1) {
		return 0, false
	}
	work := notStarted*est.Mean + est.InFlightLeft
	secs := work / rate
	if inFlight > 0 && est.DecodeRate > 0 {
		// The drain takes the longest answer's time instead of an average
		// one's. It is counted at half: as the batch empties each decode
		// step gets cheaper, so the last requests run faster than the
		// full batch's per-request rate.
		secs += drainWeight * max(est.LongestRemaining()-est.InFlightLeft/float64(inFlight), 0) / est.DecodeRate
	}
	secs = max(secs, tail)
	return time.Duration(secs * float64(time.Second)), true
}

// budgetTail is how long the rest of a run under a token budget takes
// when the budget, not the servers, holds it: every request in flight
// holds its worst case (prompt and max_tokens) against the budget, so that
// of left tokens only left/worst requests run at once, and each answer
// frees its worst case but spends its expected cost. Near the end the
// requests in flight thin out (3 in flight, then 2, then 1) while each
// still takes an answer's time: the rate now, which the ETA otherwise
// divides by, overstates the rate then. The tail is counted in waves of
// one answer's time (budgetWaves), less what the requests in flight have
// done; 0 when it cannot be told yet.
func (s *scheduler) budgetTail(left, notStarted float64, inFlight int, est capacity.LengthEstimate, meanPrompt float64) float64 {
	mode := s.cfg.countMode
	cost := tokenCount(mode, meanPrompt, est.Mean)
	worst := tokenCount(mode, meanPrompt, float64(s.cfg.params.MaxTokens))
	if cost <= 0 || worst <= 0 || est.DecodeRate <= 0 {
		return 0
	}
	answer := est.Mean / est.DecodeRate // one answer's time
	most := max(s.dispatcher.pool.capacity(), inFlight, 1)
	waves := budgetWaves(left, cost, worst, notStarted+float64(inFlight), most)
	secs := waves * answer
	if inFlight > 0 {
		secs -= min(est.InFlightDone/float64(inFlight)/est.DecodeRate, answer)
	}
	return max(secs, 0)
}

// budgetWaves is how many answers' times the rest of a run takes with left
// tokens of budget, requests of expected cost and worst case worst,
// starts requests left to start (those in flight included), at most most
// at once: in each wave as many run as the servers allow and the budget
// holds worst cases for, each spending cost; the run ends when the next
// worst case no longer fits, or nothing is left to start.
func budgetWaves(left, cost, worst, starts float64, most int) float64 {
	waves := 0.0
	for ; waves < maxBudgetWaves; waves++ {
		n := min(float64(most), math.Floor(left/worst), math.Ceil(starts))
		if n < 1 {
			break
		}
		left -= n * cost
		starts -= n
	}
	return waves
}

// maxBudgetWaves bounds budgetWaves' loop: a budget of billions of tokens
// with one request at a time.
const maxBudgetWaves = 1e5

// budgetStarts is how many more requests the token budget lets start, of
// left tokens: the requests in flight take their expected cost first, each
// new one its expected cost, and the last starts while its worst case
// (prompt and max_tokens) still fits: a run under a budget ends when that
// worst case no longer does, well before the budget is spent.
func (s *scheduler) budgetStarts(left float64, inFlight int, est capacity.LengthEstimate, meanPrompt float64) float64 {
	mode := s.cfg.countMode
	perRecord := tokenCount(mode, meanPrompt, est.Mean)
	if perRecord <= 0 {
		return math.Inf(1)
	}
	inFlightCost := tokenCount(mode, float64(inFlight)*meanPrompt, est.InFlightDone+est.InFlightLeft)
	worst := tokenCount(mode, meanPrompt, float64(s.cfg.params.MaxTokens))
	room := left - inFlightCost - worst
	if room < 0 {
		return 0
	}
	return room/perRecord + 1
}
