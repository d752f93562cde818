package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/estimate"
)

// generateConcurrency is what a run's dispatcher keeps in flight against
// one server sized from its KV cache: after its first request (sizeFirst,
// before any answer), then after the tuner's re-sizing once every request
// was dispatched and answered (retune), the answers reaching the length
// model as the collector hands them over.
func generateConcurrency(info *backend.ServerInfo, prompts, answers []int, maxTokens int) (warmup, settled int) {
	srv := &server{url: "http://gpu1:30000", limiter: capacity.NewKVSizer(info)}
	d := &dispatcher{pool: newPool([]*server{srv}, time.Minute), lengths: capacity.NewLengthModel(maxTokens),
		flight: newFlight(), note: func(string, ...any) {}}
	d.kvFrom([]*server{srv})
	s := &scheduler{dispatcher: d, lengths: d.lengths, flight: d.flight}
	for i, p := range prompts {
		j := &job{seq: int64(i), promptTokens: p}
		d.sizeFirst(j)
		if i == 0 {
			warmup = srv.limiter.Limit()
		}
		d.flight.begin(j)
		d.flight.end(j)
		d.lengths.Observe(answers[i], time.Second)
	}
	s.retune(true)
	return warmup, srv.limiter.Limit()
}

// TestEstimateSizesAsGenerateDoes holds estimate's model of generate
// --concurrency auto (the sizes its simulations run with) to generate's
// own dispatcher and tuner, on the same server and the same prompts and
// answers: were either to size differently, the estimate's time would be
// for a run that never happens. Some runs hold more answers than the
// length model keeps (it keeps the latest).
func TestEstimateSizesAsGenerateDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	for trial := range 200 {
		info := &backend.ServerInfo{MaxTotalTokens: 2000 + rng.IntN(400000)}
		if rng.IntN(2) == 0 {
			info.MaxRunningRequests = 1 + rng.IntN(512)
		}
		if rng.IntN(3) == 0 {
			info.TokenCapacity = info.MaxTotalTokens + rng.IntN(1000)
		}
		n, drift := 1+rng.IntN(300), false
		if trial%50 == 0 {
			// More answers than the length model keeps, the first ones
			// longer: the size depends on which answers count.
			n, drift = 4500+rng.IntN(2000), true
		}
		prompts, answers := make([]int, n), make([]int, n)
		long := rng.IntN(4) == 0 // a few long answers: the held share is not the mean's
		for i := range prompts {
			prompts[i] = 1 + rng.IntN(8000)
			answers[i] = rng.IntN(12000)
			if long && rng.IntN(20) == 0 || drift && i < 1000 {
				answers[i] = 20000 + rng.IntN(12000)
			}
		}
		maxTokens := 1 + rng.IntN(32768)
		gw, gs := generateConcurrency(info, prompts, answers, maxTokens)
		ew, es := estimate.Concurrency(capacity.FromServerInfo(info), prompts, answers, maxTokens)
		if gw != ew || gs != es {
			t.Fatalf("trial %d (%+v, %d requests, --max-tokens %d): generate keeps %d then %d in flight, estimate says %d then %d",
				trial, *info, n, maxTokens, gw, gs, ew, es)
		}
	}
}
