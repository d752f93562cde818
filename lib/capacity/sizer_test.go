package capacity

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
)

// TestLengthModelCorrectsShortFirstBias: early in a run only the short
// answers have finished; counting the requests in flight as lower bounds
// brings the estimate much closer to the true mean than the completed
// answers alone.
func TestLengthModelCorrectsShortFirstBias(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const rate = 100.0 // tokens per second per request
	m := NewLengthModel(10240)
	var trueSum, doneSum float64
	var done int
	var ages []time.Duration
	const elapsed = 20.0 // seconds: answers up to 2,000 tokens are done
	for i := 0; i < 400; i++ {
		l := math.Min(math.Round(2300*math.Exp(0.5*rng.NormFloat64())), 10240)
		trueSum += l
		if l/rate <= elapsed {
			m.Observe(int(l), time.Duration(l/rate*float64(time.Second)))
			doneSum += l
			done++
		} else {
			ages = append(ages, time.Duration(elapsed*float64(time.Second)))
		}
	}
	trueMean, naive := trueSum/400, doneSum/float64(done)
	est := m.Estimate(ages)
	if math.Abs(est.Mean-trueMean) > 0.25*math.Abs(naive-trueMean) {
		t.Fatalf("estimate %.0f, completed-only %.0f, true %.0f: not corrected enough", est.Mean, naive, trueMean)
	}
	t.Logf("true mean %.0f, completed-only %.0f, estimate %.0f", trueMean, naive, est.Mean)
}

func TestAIMD(t *testing.T) {
	a := NewAIMD()
	for i := 0; i < 16*4; i++ {
		a.OnSuccess()
	}
	if got := a.Limit(); got < 19 || got > 21 {
		t.Fatalf("after 4 windows of successes: %d, want about 20", got)
	}
	a.OnRateLimit()
	a.OnRateLimit() // the same burst: not halved twice
	if got := a.Limit(); got < 9 || got > 11 {
		t.Fatalf("after a burst of 429s: %d, want about 10", got)
	}
}

func TestKVSizer(t *testing.T) {
	k := NewKVSizer(&backend.ServerInfo{MaxTotalTokens: 159277, MaxRunningRequests: 256})
	k.Resize(1020, 2300)
	if got := k.Limit(); got != 53 {
		t.Fatalf("159,277 / 3,320 x 1.1: got %d, want 53", got)
	}
	if got := k.Report(); !strings.HasPrefix(got, "concurrency 53: ") {
		t.Fatalf("the first target is reported: %q", got)
	}
	k.Resize(10, 10)
	if got := k.Limit(); got != 282 {
		t.Fatalf("capped by max_running_requests 256 x 1.1: got %d", got)
	}
	// The log line explains the figure it gives (the margin is on the cap too).
	if got, want := k.Report(), "concurrency 282: "; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "capped at max_running_requests 256, +10% queue margin") {
		t.Errorf("the explanation %q does not lead from the cap to 282", got)
	}
}

// An estimate that wavers around a target is reported once: each change is
// measured from the target last reported, not from the last one computed.
func TestKVSizerReportsOnlyLargeChanges(t *testing.T) {
	k := NewKVSizer(&backend.ServerInfo{MaxTotalTokens: 130000})
	var said []int
	// Targets about 130, 121, 130, 120, 131, 130, then about 100 twice (a
	// drift of a fifth, and a quarter is what is said), then about 80.
	for _, perRequest := range []float64{1100, 1180, 1100, 1190, 1090, 1100, 1430, 1420, 1800, 1790} {
		k.Resize(perRequest, 0)
		if why := k.Report(); why != "" {
			var n int
			fmt.Sscanf(why, "concurrency %d:", &n)
			said = append(said, n)
		}
	}
	if fmt.Sprint(said) != "[131 80]" {
		t.Fatalf("reported %v, want [131 80]: the first target, then the one that moved by more than a quarter", said)
	}
}
