package capacity

import (
	"math"
	"testing"
	"time"
)

// probeBase is the latency of a probe that did not wait, probeAnswer the
// mean latency of an answer, in the model server of probeReadings.
const (
	probeBase   = 6 * time.Millisecond // three steps of 2 ms
	probeAnswer = time.Second
)

// probingRuns are sharingRuns that have no /metrics to read; the model's
// clock starts after they began probing.
func probingRuns(n int) []*KVSizer {
	runs := sharingRuns(n)
	for _, k := range runs {
		k.ShareByProbe()
	}
	probeClock = time.Now().Add(time.Second)
	return runs
}

// answer gives every run answers that took probeAnswer.
func answer(runs []*KVSizer) {
	for _, k := range runs {
		for range probeLatN {
			k.Answered(probeAnswer, 500) // 2 ms a token
		}
	}
}

// probeClock is the model's time (probingRuns starts it).
var probeClock time.Time

// probeRounds lets every run probe the server in turn, each using its
// whole limit, the server running at most 48 of what the runs hold plus
// other and queueing the rest first come, first served: a probe waits the
// queued share of an answer's latency. A round lasts a quarter of an
// answer's latency, as probeEvery has it: a run sends up to its limit at
// once, but a cut takes effect as its requests end, a quarter of them a
// round. It returns the server's total at the last round.
func probeRounds(runs []*KVSizer, rounds int, other float64) float64 {
	var total float64
	held := make([]float64, len(runs))
	for i, k := range runs {
		held[i] = float64(k.Limit())
	}
	for range rounds {
		total = other
		for i, k := range runs {
			held[i] = max(float64(k.Limit()), held[i]*3/4)
			total += held[i]
		}
		queued := max(0, total-48) / total
		latency := probeBase + time.Duration(queued*float64(probeAnswer))
		for i, k := range runs {
			k.Probed(probeClock.Add(-latency), probeClock, int(held[i]))
		}
		probeClock = probeClock.Add(probeAnswer / 4)
	}
	return total
}

func TestProbeAloneKeepsTheCeiling(t *testing.T) {
	runs := probingRuns(1)
	k := runs[0]
	probeRounds(runs, 8, 0)
	if got := k.Limit(); got != 7 {
		t.Fatalf("no answer yet, so no telling how long a wait is: %d, want 7, an eighth of 53", got)
	}
	answer(runs)
	probeRounds(runs, 16, 0)
	if got := k.Limit(); got != 53 {
		t.Fatalf("alone, after doubling once an answer's latency for four: %d, want the 53 it would keep without sharing (%s)", got, k)
	}
	probeRounds(runs, 200, 0)
	if got := k.Limit(); got < 50 {
		t.Fatalf("alone, later, its own queue margin queued: %d, want about 53 (%s)", got, k)
	}
}

func TestProbeCutIsNotRepeatedOnAStaleReading(t *testing.T) {
	runs := probingRuns(1)
	k := runs[0]
	answer(runs)
	probeRounds(runs, 16, 0)
	// Others came: half of the server's requests wait.
	for range 2 * probeReadings {
		probeClock = probeClock.Add(probeAnswer / 4)
		k.Probed(probeClock.Add(-probeBase-probeAnswer/2), probeClock, 53)
	}
	cut := k.Limit()
	if aim := ProbeTarget; cut >= 53 || cut < int(53*0.5/(1-aim)) {
		t.Fatalf("half the requests queued: limit %d, want under 53 and at least 53 x (1 - 50%%) / (1 - %.0f%%)", cut, ProbeTarget*100)
	}
	// Probes sent before the cut and answered after it measured the queue
	// the cut is for: however long they waited, they must not cut again.
	before := k.share.probe.changed.Add(-time.Millisecond)
	for range 2 * probeReadings {
		probeClock = probeClock.Add(probeAnswer / 4)
		k.Probed(before, probeClock, 53)
	}
	if got := k.Limit(); got != cut {
		t.Fatalf("cut twice for one excess: %d, then %d", cut, got)
	}
}

func TestProbeConvergesToShares(t *testing.T) {
	for _, n := range []int{2, 4, 10} {
		runs := probingRuns(n)
		answer(runs)
		// Unequal starts: the first run had the server to itself.
		probeRounds(runs[:1], 20, 0)
		total := probeRounds(runs, 2000, 0)
		fair := 53 / float64(n)
		for i, k := range runs {
			if got := float64(k.Limit()); math.Abs(got-fair) > max(2, 0.35*fair) {
				t.Errorf("%d runs: run %d has %v, fair share %.1f (%s)", n, i, got, fair, k)
			}
		}
		if total < 48 || total > 53+float64(n) {
			t.Errorf("%d runs: the server holds %v; one run alone 53, the cache 48", n, total)
		}
	}
}
