package capacity

import (
	"math"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/servermetrics"
)

// sharingRuns are n runs against one server of 159,277 KV tokens, ~3,320
// tokens a request: alone, each would keep 53 in flight.
func sharingRuns(n int) []*KVSizer {
	runs := make([]*KVSizer, n)
	for i := range runs {
		runs[i] = NewKVSizer(&backend.ServerInfo{MaxTotalTokens: 159277, MaxRunningRequests: 256})
		runs[i].StartSharing()
		runs[i].Resize(1020, 2300)
	}
	return runs
}

// readings lets every run read the server in turn, each using its whole
// limit, the server holding what the runs send plus other; it returns the
// server's total at the last reading.
func readings(runs []*KVSizer, rounds int, other float64) float64 {
	var total float64
	for range rounds {
		total = other
		for _, k := range runs {
			total += float64(k.Limit())
		}
		for _, k := range runs {
			k.Observe(Load{Running: min(total, 48), Queued: max(0, total-48)}, k.Limit())
		}
	}
	return total
}

func TestShareAloneKeepsTheCeiling(t *testing.T) {
	runs := sharingRuns(1)
	k := runs[0]
	if got := k.Limit(); got != 7 {
		t.Fatalf("a run starts at an eighth of 53: got %d", got)
	}
	readings(runs, 3, 0)
	if got := k.Limit(); got != 53 {
		t.Fatalf("alone, after three readings: %d, want the 53 it would keep without sharing (%s)", got, k)
	}
	readings(runs, 50, 0)
	if got := k.Limit(); got != 53 {
		t.Fatalf("alone, later: %d, want 53", got)
	}
}

func TestShareCutIsNotRepeatedOnAStaleReading(t *testing.T) {
	k := sharingRuns(1)[0]
	readings([]*KVSizer{k}, 3, 0)
	// Others came: the server holds 106 of which this run 53, and runs
	// 48: together the runs should hold 48 and 1% queued.
	goal := 48 / (1 - ShareQueueTarget)
	want := int(53 * goal / 106)
	k.Observe(Load{Running: 48, Queued: 58}, 53)
	if got := k.Limit(); got != want || want != 24 {
		t.Fatalf("53 x 48.5/106: got %d", got)
	}
	// Nothing finished yet: the same reading must not cut again.
	k.Observe(Load{Running: 48, Queued: 58}, 53)
	if got := k.Limit(); got != want {
		t.Fatalf("cut twice for one excess: %d", got)
	}
}

func TestShareConvergesToEqualShares(t *testing.T) {
	for _, n := range []int{2, 4, 10} {
		runs := sharingRuns(n)
		// Unequal starts: the first run had the server to itself.
		readings(runs[:1], 5, 0)
		total := readings(runs, 400, 0)
		fair := 53 / float64(n)
		for i, k := range runs {
			if got := float64(k.Limit()); math.Abs(got-fair) > max(2, 0.25*fair) {
				t.Errorf("%d runs: run %d has %v, fair share %.1f", n, i, got, fair)
			}
		}
		if total > 53+float64(n) {
			t.Errorf("%d runs: the server holds %v, one run alone %d", n, total, 53)
		}
	}
}

// Runs whose answers so far differ size the server differently (early on,
// a run has seen only its short answers): its queue, the same for every
// run, holds the sum near what the server runs, not at the largest size.
func TestShareQueueOutweighsTheLargestSize(t *testing.T) {
	runs := sharingRuns(3)
	runs[2].Resize(1020, 800) // this one thinks 96 fit
	if got := runs[2].cur; got < 90 {
		t.Fatalf("the optimist's size: %d", got)
	}
	readings(runs, 200, 0)
	total := readings(runs, 1, 0)
	// The server runs 48: one run alone would hold 53 (48 and its 10%).
	if total > 53 {
		t.Errorf("the runs hold %v, the server runs 48 (%d, %d, %d)", total, runs[0].Limit(), runs[1].Limit(), runs[2].Limit())
	}
}

func TestShareLeavesRoomForOthers(t *testing.T) {
	runs := sharingRuns(2)
	readings(runs, 100, 30) // another client, not sharing, holds 30
	if sum := runs[0].Limit() + runs[1].Limit(); sum > 53-30+2 {
		t.Fatalf("two runs hold %d beside 30 others, the ceiling being 53", sum)
	}
}

// FuzzShareFromLoadReports feeds whatever a server may answer at /metrics,
// /v1/loads or /get_load through the parser and, when it is a reading the
// sharing rule takes, through the rule: the limit stays a count between 1
// and the ceiling, whatever was read (one NaN once made it NaN for good).
func FuzzShareFromLoadReports(f *testing.F) {
	for _, seed := range []string{
		"sglang:num_running_reqs 40\nsglang:num_queue_reqs 30\n",
		"sglang:num_running_reqs NaN\nsglang:num_queue_reqs 3\n",
		"sglang:num_running_reqs 1e308\nsglang:num_queue_reqs 1e308\n",
		"sglang:num_running_reqs 5e-324\nsglang:num_queue_reqs 0\n",
		`{"loads":[{"num_running_reqs":1e999,"num_waiting_reqs":0}]}`,
		`{"loads":[{"num_running_reqs":3,"num_waiting_reqs":2},{"num_running_reqs":1e300,"num_waiting_reqs":1e300}]}`,
		`[{"num_reqs":7,"num_waiting_reqs":2}]`,
	} {
		f.Add(seed, uint8(20))
	}
	f.Fuzz(func(t *testing.T, body string, mine uint8) {
		for _, source := range servermetrics.Sources {
			snap, err := servermetrics.ParseFrom(strings.NewReader(body), source, "")
			if err != nil || CountsUnusable(&snap) || !snap.Has[servermetrics.NumRunningReqs] || !snap.Has[servermetrics.NumQueueReqs] {
				continue
			}
			k := sharingRuns(1)[0]
			for range 3 {
				k.Observe(Load{Running: snap.Running, Queued: snap.Queued}, int(mine))
				k.mu.Lock()
				limit, ceiling := k.share.limit, float64(k.cur)
				k.mu.Unlock()
				if math.IsNaN(limit) || limit < 1 || limit > ceiling {
					t.Fatalf("%s %q (running %v, queued %v): limit %v, ceiling %v", source, body, snap.Running, snap.Queued, limit, ceiling)
				}
			}
		}
	})
}
