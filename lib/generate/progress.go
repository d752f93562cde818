package generate

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// progress prints how the run goes on stderr: on a terminal one line redrawn
// in place every second, elsewhere (a log file, TERM=dumb) a plain line
// every --progress-interval.
type progress struct {
	w     io.Writer
	live  bool
	every time.Duration
	total int64 // records expected, 0: unknown
	drawn bool  // a live line is on screen
}

// liveRedraw is how often a terminal line is redrawn.
const liveRedraw = time.Second

func newProgress(w io.Writer, every time.Duration, total int64) *progress {
	p := &progress{w: w, every: every, total: total}
	if jsonl.IsTerminal(w) && os.Getenv("TERM") != "dumb" {
		p.live, p.every = true, liveRedraw
	}
	return p
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
			p.print(s.progressLine(p.total))
		}
	}
}

func (p *progress) print(line string) {
	if p.live {
		fmt.Fprintf(p.w, "\r%s\x1b[K", line)
		p.drawn = true
		return
	}
	fmt.Fprintf(p.w, "generate: %s\n", line)
}

// clear removes the live line before the summary is printed.
func (p *progress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

// progressLine is one progress report: counts, rates, and the ETA.
func (s *scheduler) progressLine(total int64) string {
	est, meanPrompt := s.estimate()
	s.mu.Lock()
	t := s.tally
	inFlight := len(s.inFlight)
	s.mu.Unlock()
	elapsed := time.Since(s.start)
	secs := max(elapsed.Seconds(), 1e-3)
	done := t.finished()
	var b strings.Builder
	if total > 0 {
		fmt.Fprintf(&b, "%s/%s done (%.1f%%)", cliutil.Thousands(done), cliutil.Thousands(total), 100*float64(done)/float64(total))
	} else {
		fmt.Fprintf(&b, "%s done", cliutil.Thousands(done))
	}
	fmt.Fprintf(&b, ", %s ok, %s err, %s trunc, %.1f req/s, %s tok/s out, mean completion %s, %d in flight, %s elapsed",
		cliutil.Thousands(t.ok), cliutil.Thousands(t.errors), cliutil.Thousands(t.truncated), float64(t.ok)/secs,
		cliutil.Thousands(int64(float64(t.completionTokens)/secs)), cliutil.Thousands(int64(est.mean)), inFlight, elapsed.Round(time.Second))
	if eta, ok := s.eta(t, total, inFlight, est, meanPrompt, elapsed); ok {
		fmt.Fprintf(&b, ", ETA %s", eta.Round(time.Second))
	}
	return b.String()
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
