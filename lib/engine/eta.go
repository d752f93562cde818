package engine

import (
	"math"
	"time"

	"github.com/synthpipe/synthpipe/lib/capacity"
)

// MinETASamples is how many answers the ETA waits for: before them the
// lengths and the decode rate are guesses, and an ETA made of guesses was
// off by a factor of ten.
const MinETASamples = 16

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
	mode := s.cfg.CountMode
	cost := tokenCount(mode, meanPrompt, est.Mean)
	worst := tokenCount(mode, meanPrompt, float64(s.cfg.Params.MaxTokens))
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
	mode := s.cfg.CountMode
	perRecord := tokenCount(mode, meanPrompt, est.Mean)
	if perRecord <= 0 {
		return math.Inf(1)
	}
	inFlightCost := tokenCount(mode, float64(inFlight)*meanPrompt, est.InFlightDone+est.InFlightLeft)
	worst := tokenCount(mode, meanPrompt, float64(s.cfg.Params.MaxTokens))
	room := left - inFlightCost - worst
	if room < 0 {
		return 0
	}
	return room/perRecord + 1
}
