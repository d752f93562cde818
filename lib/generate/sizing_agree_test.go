package generate

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/estimate"
)

// generateConcurrency is what a run sizes its requests in flight to, the
// way the dispatcher and the tuner do it: from the first prompt and the
// length model's prior, then from the mean prompt and the answers it has
// seen.
func generateConcurrency(info *backend.ServerInfo, prompts, answers []int, maxTokens int) (warmup, settled int) {
	k := capacity.NewKVSizer(info)
	model := capacity.NewLengthModel(maxTokens)
	k.Resize(float64(prompts[0]), model.Estimate(nil).KVShare)
	warmup = k.Limit()
	var promptSum float64
	for i, a := range answers {
		model.Observe(a, time.Second)
		promptSum += float64(prompts[i])
	}
	k.Resize(promptSum/float64(len(prompts)), model.Estimate(nil).KVShare)
	return warmup, k.Limit()
}

// TestEstimateSizesAsGenerateDoes holds estimate's model of generate
// --concurrency auto to generate's own sizing, on the same server and the
// same prompts and answers: were either to size differently, the
// estimate's time would be for a run that never happens.
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
		n := 1 + rng.IntN(300)
		prompts, answers := make([]int, n), make([]int, n)
		for i := range prompts {
			prompts[i] = 1 + rng.IntN(8000)
			answers[i] = rng.IntN(12000)
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
