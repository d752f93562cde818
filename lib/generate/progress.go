package generate

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/synthpipe/synthpipe/lib/cliutil"
)

// progress prints how the run goes on stderr: on a terminal a bar redrawn
// in place every second, elsewhere (a log file, TERM=dumb) a plain line
// every --progress-interval.
type progress struct {
	w      io.Writer
	live   bool
	colour bool // live and NO_COLOR unset
	width  int  // columns the live line may take
	every  time.Duration
	total  int64 // records expected, 0: unknown
	drawn  bool  // a live line is on screen
}

// liveRedraw is how often a terminal line is redrawn.
const liveRedraw = time.Second

// defaultColumns is the width assumed when neither the terminal nor $COLUMNS
// says.
const defaultColumns = 100

func newProgress(w io.Writer, every time.Duration, total int64) *progress {
	p := &progress{w: w, every: every, total: total}
	fd, isFile := fileDescriptor(w)
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
			p.clear()
			return
		case <-t.C:
			p.print(s.progressView(p.total))
		}
	}
}

func (p *progress) print(v progressView) {
	if p.live {
		fmt.Fprintf(p.w, "\r%s\x1b[K", renderBar(v, p.width, p.colour))
		p.drawn = true
		return
	}
	fmt.Fprintf(p.w, "generate: %s\n", plainLine(v))
}

// clear removes the live line before the summary is printed.
func (p *progress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

// progressView is one progress report: counts, rates and the ETA.
type progressView struct {
	done, total           int64 // total 0: unknown
	ok, errors, truncated int64
	reqPerSec, tokPerSec  float64
	meanCompletion        float64
	inFlight              int
	elapsed               time.Duration
	eta                   time.Duration
	hasETA                bool
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
		meanCompletion: est.mean,
		inFlight:       inFlight,
		elapsed:        elapsed,
	}
	v.eta, v.hasETA = s.eta(t, total, inFlight, est, meanPrompt, elapsed)
	v.standing, v.countMode = s.standing(), s.cfg.countMode.String()
	return v
}

// plainLine is the report as one line of a log.
func plainLine(v progressView) string {
	var b strings.Builder
	if v.total > 0 {
		fmt.Fprintf(&b, "%s/%s done (%.1f%%)", cliutil.Thousands(v.done), cliutil.Thousands(v.total), 100*float64(v.done)/float64(v.total))
	} else {
		fmt.Fprintf(&b, "%s done", cliutil.Thousands(v.done))
	}
	fmt.Fprintf(&b, ", %s ok, %s err, %s trunc, %.1f req/s, %s tok/s out, mean completion %s, %d in flight, %s elapsed",
		cliutil.Thousands(v.ok), cliutil.Thousands(v.errors), cliutil.Thousands(v.truncated), v.reqPerSec,
		cliutil.Thousands(int64(v.tokPerSec)), cliutil.Thousands(int64(v.meanCompletion)), v.inFlight, v.elapsed.Round(time.Second))
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

// minBar is the narrowest bar worth drawing; below it the bar is left out
// and the numbers keep the line.
const minBar = 5

// renderBar is the live line, at most width columns wide:
//
//	[#########.........]  45%  812/1,800 ok 800 err 12 trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight | ETA 12m
//
// The bar takes the columns the numbers leave. Without a known total there
// is no bar and no percentage. A narrow terminal loses the bar first, then
// the ETA, the requests in flight and the rates, so that the counts stay.
// colour paints the bar and a non-zero error count (escapes take no
// columns).
func renderBar(v progressView, width int, colour bool) string {
	counts := fmt.Sprintf("%s done ok %s err %s trunc %s", cliutil.Thousands(v.done), cliutil.Thousands(v.ok), cliutil.Thousands(v.errors), cliutil.Thousands(v.truncated))
	var percent float64
	if v.total > 0 {
		percent = min(float64(v.done)/float64(v.total), 1)
		counts = fmt.Sprintf("%.0f%%  %s/%s ok %s err %s trunc %s", 100*percent, cliutil.Thousands(v.done), cliutil.Thousands(v.total),
			cliutil.Thousands(v.ok), cliutil.Thousands(v.errors), cliutil.Thousands(v.truncated))
	}
	tail := []string{
		fmt.Sprintf(" | %.1f req/s %s tok/s", v.reqPerSec, cliutil.Thousands(int64(v.tokPerSec))),
		fmt.Sprintf(" | %d in flight", v.inFlight),
	}
	if v.hasETA {
		tail = append(tail, " | ETA "+shortDuration(v.eta))
	}
	tail = append(tail, v.standing.barParts()...)
	text := func() string { return counts + strings.Join(tail, "") }
	for len(text()) > width && len(tail) > 0 {
		tail = tail[:len(tail)-1]
	}
	line := text()
	if len(line) > width {
		line = line[:max(width, 0)]
	}
	if colour && v.errors > 0 {
		errs := " err " + cliutil.Thousands(v.errors) + " "
		if i := strings.Index(line, errs); i >= 0 {
			line = line[:i+5] + ansiRed + cliutil.Thousands(v.errors) + ansiReset + line[i+len(errs)-1:]
		}
	}
	// "[" + bar + "]" + two spaces before the numbers.
	barWidth := width - len(text()) - 4
	if v.total == 0 || len(text()) > width || barWidth < minBar {
		return line
	}
	filled := int(percent * float64(barWidth))
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
func (s *scheduler) eta(t tally, total int64, inFlight int, est lengthEstimate, meanPrompt float64, elapsed time.Duration) (time.Duration, bool) {
	// The rate tokens are generated at now: every request in flight at the
	// per-request decode rate. The average since the start would count the
	// first wave's ramp, when few answers had finished.
	rate := float64(inFlight) * est.decodeRate
	if inFlight == 0 || est.decodeRate == 0 {
		rate = (float64(t.completionTokens) + est.inFlightDone) / elapsed.Seconds()
	}
	if rate <= 0 || est.mean <= 0 {
		return 0, false
	}
	notStarted := math.Inf(1)
	if total > 0 {
		notStarted = float64(max(total-t.finished()-int64(inFlight), 0))
	}
	if left := s.budget.tokensLeft(); left >= 0 {
		perRecord := tokenCount(s.cfg.countMode, meanPrompt, est.mean)
		if perRecord > 0 {
			// The requests in flight are part of what the budget still takes.
			fit := max(left/perRecord-float64(inFlight), 0)
			notStarted = min(notStarted, fit)
		}
	}
	if math.IsInf(notStarted, 1) {
		return 0, false
	}
	work := notStarted*est.mean + est.inFlightLeft
	secs := work / rate
	if inFlight > 0 && est.decodeRate > 0 {
		// The drain takes the longest answer's time instead of an average
		// one's. It is counted at half: as the batch empties each decode
		// step gets cheaper, so the last requests run faster than the
		// full batch's per-request rate.
		secs += drainWeight * max(est.longestRemaining()-est.inFlightLeft/float64(inFlight), 0) / est.decodeRate
	}
	return time.Duration(secs * float64(time.Second)), true
}
