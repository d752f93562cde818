package generate

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
			m := newLengthModel(10240)
			var ages []time.Duration
			for i, r := range runs {
				if r.end <= T {
					m.observe(int(lens[i]), time.Duration((r.end-r.start)*float64(time.Second)))
				} else if r.start <= T {
					ages = append(ages, time.Duration((T-r.start)*float64(time.Second)))
				}
			}
			est := m.estimate(ages)
			trueMean := trueSum / n
			if math.Abs(est.mean-trueMean) > 0.2*trueMean {
				t.Errorf("seed %d at %.0f%%: true mean %.0f, estimate %.0f", seed, frac*100, trueMean, est.mean)
			}
		}
	}
}
