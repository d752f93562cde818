package runview

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/engine"
	"github.com/synthpipe/synthpipe/lib/iostreams"
)

// Progress prints how the run goes on stderr: on a terminal a bar redrawn
// in place every second, elsewhere (a log file, TERM=dumb) a plain line
// every --progress-interval. Its console is the run's stderr: every other
// line goes through it, so that none is glued onto the bar.
type Progress struct {
	console *Console
	live    bool
	colour  bool // live and NO_COLOR unset
	width   int  // columns the live line may take
	every   time.Duration
}

// Console owns stderr while a run goes on. On a terminal the live bar stays
// on the last line: a log line clears it first, is printed, and the bar is
// drawn again below it.
type Console struct {
	mu  sync.Mutex
	w   io.Writer
	bar string // the live line on screen, "" while none
}

// NewConsole makes w, the run's stderr, a console.
func NewConsole(w io.Writer) *Console { return &Console{w: w} }

// Write prints whole lines (a log line is one Write) above the live bar.
func (c *Console) Write(p []byte) (int, error) {
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
func (c *Console) draw(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bar = line
	io.WriteString(c.w, "\r"+line+clearToEnd)
}

// clear takes the bar off the screen, before the summary.
func (c *Console) clear() {
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

// LiveRedraw is how often a terminal line is redrawn.
const LiveRedraw = time.Second

// DefaultColumns is the width assumed when neither the terminal nor $COLUMNS
// says; generate's help states it.
const DefaultColumns = 100

// NewProgress reports on the run's stderr every interval: s.Err is the
// console that owns stderr, or a writer it wraps in one. On a terminal
// (s.IsStderrTTY) the bar is redrawn every second instead, as wide as
// s.TerminalWidth says.
func NewProgress(s *iostreams.IOStreams, every time.Duration) *Progress {
	con, ok := s.Err.(*Console)
	if !ok {
		con = NewConsole(s.Err)
	}
	p := &Progress{console: con, every: every}
	p.live, p.colour = progressMode(s.IsStderrTTY(), os.Getenv("TERM"), os.Getenv("NO_COLOR"))
	if p.live {
		p.every = LiveRedraw
		// One column short of the edge: a line that fills the last
		// column wraps on many terminals, and "\r" would then redraw
		// only its second half.
		p.width = terminalColumns(s.TerminalWidth()) - 1
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

// terminalColumns is the width of the terminal, as the kernel knows it
// (kernel, 0 when it does not say); else $COLUMNS, which a shell sets for
// itself but rarely exports; else DefaultColumns.
func terminalColumns(kernel int) int {
	if kernel > 0 {
		return kernel
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return DefaultColumns
}

// Run prints what snapshot says every interval until stop is closed; a
// nil Progress (-q) prints nothing.
func (p *Progress) Run(snapshot func() engine.Snapshot, stop <-chan struct{}) {
	if p == nil || p.every <= 0 {
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
			p.print(snapshot())
		}
	}
}

func (p *Progress) print(v engine.Snapshot) {
	if p.live {
		p.console.draw(renderBar(v, p.width, p.colour))
		return
	}
	fmt.Fprintf(p.console, "generate: %s\n", plainLine(v))
}

// percentDone is done of total in whole percent, rounded down: 100% only
// when every record is done.
func percentDone(done, total int64) int64 {
	return min(100*done/total, 100)
}

// inFlightText is the requests in flight and what keeps them from being
// more.
func inFlightText(v engine.Snapshot) string {
	if v.Limit == "" {
		return fmt.Sprintf("%d in flight", v.InFlight)
	}
	return fmt.Sprintf("%d in flight (limit: %s)", v.InFlight, v.Limit)
}

// plainLine is the report as one line of a log.
func plainLine(v engine.Snapshot) string {
	var b strings.Builder
	if v.Total > 0 {
		fmt.Fprintf(&b, "%s/%s done (%d%%)", cliutil.Thousands(v.Done), cliutil.Thousands(v.Total), percentDone(v.Done, v.Total))
	} else {
		fmt.Fprintf(&b, "%s done", cliutil.Thousands(v.Done))
	}
	fmt.Fprintf(&b, ", %s ok, %s err, %s trunc, %.1f req/s, %s tok/s out, mean completion %s, %s, %s elapsed",
		cliutil.Thousands(v.OK), cliutil.Thousands(v.Errors), cliutil.Thousands(v.Truncated), v.RequestsPerSecond,
		cliutil.Thousands(int64(v.TokensPerSecond)), cliutil.Thousands(int64(v.MeanCompletion)), inFlightText(v), v.Elapsed.Round(time.Second))
	if v.HasETA {
		fmt.Fprintf(&b, ", ETA %s", v.ETA.Round(time.Second))
	}
	b.WriteString(v.Standing.Plain(v.CountMode))
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
func renderBar(v engine.Snapshot, width int, colour bool) string {
	head := cliutil.Thousands(v.Done) + " done"
	if v.Total > 0 {
		head = fmt.Sprintf("%d%% %s/%s", percentDone(v.Done, v.Total), cliutil.Thousands(v.Done), cliutil.Thousands(v.Total))
	}
	counts := fmt.Sprintf("%s ok %s err %s trunc %s", head, cliutil.Thousands(v.OK), cliutil.Thousands(v.Errors), cliutil.Thousands(v.Truncated))
	rates := fmt.Sprintf(" | %.1f req/s %s tok/s", v.RequestsPerSecond, cliutil.Thousands(int64(v.TokensPerSecond)))
	flight := " | " + inFlightText(v)
	eta := ""
	switch {
	case v.HasETA:
		eta = " | ETA " + shortDuration(v.ETA)
	case v.ETALater:
		eta = " | ETA ..."
	}
	// The longest of these lines that fits room: the standing's parts go
	// first, the last first, but for the first (the budget's share when
	// there is a budget), then the rates, that first part, the requests in
	// flight and the ETA.
	extras := v.Standing.BarParts()
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
	if v.Total == 0 || len(line) > room || width/5 < minBar {
		barWidth = 0
		line = fit(width)
	}
	if len(line) > width {
		line = line[:max(width, 0)]
	}
	if colour && v.Errors > 0 {
		errs := " err " + cliutil.Thousands(v.Errors) + " "
		if i := strings.Index(line, errs); i >= 0 {
			line = line[:i+5] + ansiRed + cliutil.Thousands(v.Errors) + ansiReset + line[i+len(errs)-1:]
		}
	}
	if barWidth == 0 {
		return line
	}
	// Whole characters only, rounded down like the percentage: a full bar
	// means every record is done.
	filled := int(min(v.Done*int64(barWidth)/v.Total, int64(barWidth)))
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
