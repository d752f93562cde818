package capacity

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestLengthEstimateEarlyInARun simulates runs of 300 requests, 60 at a
// time, with lognormal answer lengths, and checks the mean length estimated
// when 10% and 20% of them are done.
func TestLengthEstimateEarlyInARun(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		const n, conc, rate = 300, 60, 100.0
		lens := make([]float64, n)
		var trueSum float64
		for i := range lens {
			lens[i] = math.Min(math.Round(2300*math.Exp(0.5*rng.NormFloat64())), 10240)
			trueSum += lens[i]
		}
		// Each request starts when one of the conc slots frees.
		type run struct{ start, end float64 }
		runs := make([]run, n)
		slots := make([]float64, conc)
		for i := range runs {
			k := 0
			for j := range slots {
				if slots[j] < slots[k] {
					k = j
				}
			}
			runs[i] = run{slots[k], slots[k] + lens[i]/rate}
			slots[k] = runs[i].end
		}

		ends := make([]float64, n)
		for i, r := range runs {
			ends[i] = r.end
		}
		sorted := slices.Clone(ends)
		slices.Sort(sorted)
		for _, frac := range []float64{0.1, 0.2} {
			T := sorted[int(frac*n)]
			m := NewLengthModel(10240)
			var ages []time.Duration
			for i, r := range runs {
				if r.end <= T {
					m.Observe(int(lens[i]), time.Duration((r.end-r.start)*float64(time.Second)))
				} else if r.start <= T {
					ages = append(ages, time.Duration((T-r.start)*float64(time.Second)))
				}
			}
			est := m.Estimate(ages)
			trueMean := trueSum / n
			if math.Abs(est.Mean-trueMean) > 0.2*trueMean {
				t.Errorf("seed %d at %.0f%%: true mean %.0f, estimate %.0f", seed, frac*100, trueMean, est.Mean)
			}
		}
	}
}

// A request in flight has generated nothing while it waited (the fixed
// part of a latency), then decodeRate tokens a second.
func TestGeneratedSkipsTheWait(t *testing.T) {
	lengths := []int{100, 200, 300, 400, 500, 600, 700, 800}
	var latencies []float64
	for _, l := range lengths {
		latencies = append(latencies, 2+float64(l)/100) // 2 s of queue and prefill, 100 tok/s
	}
	rate, fixed := decodeRate(lengths, latencies)
	if math.Abs(rate-100) > 1e-6 || math.Abs(fixed-2) > 1e-6 {
		t.Fatalf("rate %.3f, fixed %.3f; want 100 tok/s after 2 s", rate, fixed)
	}
	if got := generated(rate, fixed, 5*time.Second, 4096); math.Abs(got-300) > 1e-6 {
		t.Fatalf("after 5 s: %.1f tokens, want 300", got)
	}
	if got := generated(rate, fixed, time.Second, 4096); got != 0 {
		t.Fatalf("still waiting: %.1f tokens, want 0", got)
	}
}
