// Package capacity is the one owner of how many requests synthpipe keeps in
// flight against a server: generate sizes its runs with it, and estimate
// predicts those runs with it, so the two cannot disagree. It holds:
//
//   - capacity.go: the sizing from an SGLang server's KV cache (KV.Size,
//     with its queue margin), the prior on answer lengths before any answer
//     is known, and the AIMD bounds;
//   - limiter.go: the limits a server gets (Fixed for --concurrency N,
//     AIMD for servers that say nothing of their capacity);
//   - sizer.go: KVSizer, the limit of a server sized from its KV cache;
//   - share.go: how KVSizers of several runs share one server from its
//     load reports (running and queued requests);
//   - probe.go: the same from probes of its queue, for a server that
//     reports no load (generate --shared);
//   - lengths.go: the length model, which learns answer lengths from the
//     answers and the requests in flight, for the sizing and the ETA.
package capacity

import (
	"fmt"
	"math"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
)

// QueueMargin is the share of requests sent beyond what the KV cache holds,
// so that a finished request is replaced at once from the server's queue
// instead of after a round trip.
const QueueMargin = 0.10

// AIMD bounds for servers that say nothing of their capacity: the requests
// in flight start at AIMDStart, grow by one per window of successes and
// halve on a 429, never past AIMDMax.
const (
	AIMDStart = 16
	AIMDMax   = 1024
)

// DefaultMaxTokens is generate's answer limit without --max-tokens, which
// estimate assumes when it is not told. SGLang's own default (128) cuts
// most answers short.
const DefaultMaxTokens = 4096

// KV is what an SGLang server says it holds.
type KV struct {
	Tokens     int // the KV cache shared by running requests, in tokens
	MaxRunning int // max_running_requests, 0: no limit said
}

// FromServerInfo reads a server's KV capacity from its /server_info.
func FromServerInfo(info *backend.ServerInfo) KV {
	return KV{Tokens: max(info.TokenCapacity, info.MaxTotalTokens), MaxRunning: info.MaxRunningRequests}
}

// Target is a size for the requests in flight, with why.
type Target struct {
	N    int     // requests in flight, at least 1
	Fits float64 // requests the cache holds at once; those beyond queue
	Why  string  // the arithmetic, for the log
}

// Size is how many requests to keep in flight when each holds meanPrompt
// prompt tokens plus held tokens of its answer in the cache on average:
// what the cache holds plus QueueMargin, capped by max_running_requests
// plus the same margin.
func (kv KV) Size(meanPrompt, held float64) Target {
	perRequest := max(meanPrompt+held, 1)
	fit := float64(kv.Tokens) / perRequest
	n := int(math.Ceil(fit * (1 + QueueMargin)))
	why := fmt.Sprintf("KV %s tokens / (%s prompt + %s held by answers) = %.0f fit, +%.0f%% queue margin",
		cliutil.Thousands(int64(kv.Tokens)), cliutil.Thousands(int64(meanPrompt)), cliutil.Thousands(int64(held)), fit, QueueMargin*100)
	if kv.MaxRunning > 0 {
		capped := int(math.Ceil(float64(kv.MaxRunning) * (1 + QueueMargin)))
		if n > capped {
			// The figure said is the one used: the cap, with the same margin.
			n = capped
			why = fmt.Sprintf("%s; capped at max_running_requests %d, +%.0f%% queue margin", why, kv.MaxRunning, QueueMargin*100)
		}
	}
	return Target{N: max(n, 1), Fits: fit, Why: why}
}

// Prior is what answers are taken to be before any is known: uniform up to
// maxTokens, so a mean of maxTokens/2 and, a running request holding half
// its answer on average weighted by its length, maxTokens/3 held.
func Prior(maxTokens float64) (mean, held float64) {
	mean = maxTokens / 2
	return mean, mean * 2 / 3
}

// Held is the mean number of answer tokens a running request holds in the
// KV cache, from the sum and the sum of squares of answer lengths:
// E[L^2]/(2E[L]), since a request is seen in the batch for a time
// proportional to its length and holds half of it on average.
func Held(sum, sumSq float64) float64 {
	if sum <= 0 {
		return 0
	}
	return sumSq / (2 * sum)
}
