package engine

import (
	"time"
)

// snapshot is where the run stands now, for the views (lib/runview): the
// progress line, the status file and --metrics-listen. total is the
// records expected, 0 unknown.
func (s *scheduler) snapshot(total int64) Snapshot {
	est, meanPrompt, inFlight := s.estimate()
	t := s.collector.counts()
	elapsed := time.Since(s.start)
	secs := max(elapsed.Seconds(), 1e-3)
	v := Snapshot{
		Started: s.start, Elapsed: elapsed, Total: total,
		AlreadyRecords: s.alreadyRecords, Read: s.reader.read.Load(),
		Done: t.finished(), OK: t.ok, Errors: t.errors, Cut: t.cut, Cancelled: t.cancelled,
		Truncated: t.truncated, Empty: t.empty, Aborted: t.aborted,
		InFlight:     inFlight,
		PromptTokens: t.promptTokens, CompletionTokens: t.completionTokens,
		CountedTokens:     tokenCount(s.cfg.CountMode, t.promptTokens, t.completionTokens) + s.already,
		RequestsPerSecond: float64(t.ok) / secs,
		TokensPerSecond:   float64(t.completionTokens) / secs,
		MeanCompletion:    est.Mean,
		Limit:             holdNames[s.dispatcher.limits.limiting(&s.shownLimit)],
		CountMode:         s.cfg.CountMode.String(),
	}
	v.ETALater = total > 0 || s.budget.tokensLeft() >= 0
	if est.Samples >= MinETASamples {
		v.ETA, v.HasETA = s.eta(t, total, inFlight, est, meanPrompt, elapsed)
	}
	v.Standing = s.standing()
	down := s.workers.pool.downServers()
	for _, r := range s.view.readings() {
		v.Servers = append(v.Servers, ServerReading{URL: r.url, Down: down[r.url], Metrics: r.snap, HasMetrics: r.has})
	}
	return v
}

// standing takes the figures now.
func (s *scheduler) standing() Standing {
	t := s.collector.counts()
	st := Standing{
		Already: s.already, OK: t.ok, Truncated: t.truncated, Empty: t.empty, Aborted: t.aborted,
		Retries: s.workers.retries.Load(), RateLimited: s.workers.rateLimited.Load(), Key: s.key,
	}
	st.TokensSpent, st.TokenBudget, st.USDSpent, st.USDBudget = s.budget.standing()
	st.ServersDown, st.Servers, st.Sidelines = s.workers.pool.downNow()
	st.Server, st.HasServer = s.view.now()
	return st
}

// stopReason is why the run stopped; "" when its input ran out.
func (s *scheduler) stopReason() string {
	reason, _ := s.stops.why()
	return reason
}
