package capacity

import (
	"fmt"
	"math"
	"sync"

	"github.com/synthpipe/synthpipe/lib/backend"
)

// KVSizer sizes the requests in flight to what an SGLang server's KV cache
// holds: too few leaves the batch short, too many only queue (or get
// retracted and recomputed) on the server while their client-side timeouts
// run.
type KVSizer struct {
	kv       KV
	mu       sync.Mutex
	cur      int // what this run alone would keep in flight
	why      string
	share    serverShare
	reported int     // the target last said in the log, 0: none yet
	fits     float64 // requests the cache holds at once; those beyond queue
}

// NewKVSizer sizes for a server's capacity; Resize sets the first target
// once the first prompt is known.
func NewKVSizer(info *backend.ServerInfo) *KVSizer {
	return &KVSizer{kv: FromServerInfo(info), cur: 1}
}

func (k *KVSizer) Limit() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.share.on {
		return max(1, min(k.cur, int(k.share.limit)))
	}
	return k.cur
}

func (*KVSizer) OnSuccess()   {}
func (*KVSizer) OnRateLimit() {}

// Resize recomputes the target from the mean prompt length and the mean
// number of generated tokens a running request holds.
func (k *KVSizer) Resize(meanPrompt, kvShare float64) {
	t := k.kv.Size(meanPrompt, kvShare)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cur, k.why, k.fits = t.N, t.Why, t.Fits
	if k.share.on && k.share.limit == 0 {
		k.share.begin(float64(k.cur))
	}
}

// Decoding is how many of held requests in flight the server decodes at
// once: the cache holds fits of them, the rest (the queue margin) wait in
// its queue and generate nothing yet.
func (k *KVSizer) Decoding(held int) float64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fits <= 0 {
		return float64(held)
	}
	return min(float64(held), k.fits)
}

// ReportChange is how far the target must move from the one last said
// for the log to say it again: the estimate is re-made every second, and
// a tenth is what it wanders by while answers come in; the log would
// narrate every wave.
const ReportChange = 0.25

// Report is the target explained for the log when it moved by more than
// ReportChange since the last one reported, else "". The last one
// reported, not the last one computed: an estimate that wavers around a
// value, as it does while few answers are in, is said once, not at every
// wave, and one that drifts is said at each quarter, not at each step.
func (k *KVSizer) Report() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.reported > 0 && math.Abs(float64(k.cur-k.reported)) <= ReportChange*float64(k.reported) {
		return ""
	}
	k.reported = k.cur
	return k.explainLocked()
}

// String explains the current target.
func (k *KVSizer) String() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.explainLocked()
}

func (k *KVSizer) explainLocked() string {
	if k.share.on && k.share.limit > 0 && int(k.share.limit) < k.cur {
		// Sharing is said once another run's requests were seen on the
		// server; until then the limit is the slow start of a run that
		// may share it.
		sharing := ""
		if k.share.others {
			sharing = ", sharing the server"
		}
		return fmt.Sprintf("concurrency %d: %s; %d for now%s (%s)", k.cur, k.why, max(1, int(k.share.limit)), sharing, k.share.why)
	}
	return fmt.Sprintf("concurrency %d: %s", k.cur, k.why)
}

// RunSizes is what generate --concurrency auto keeps in flight against a
// server of capacity kv for requests of these prompt and answer lengths
// (in pairs, in the order they are answered) under --max-tokens maxTokens:
// first, before any answer is known, from the first prompt and the length
// model's prior; settled, once every answer is known, from the mean prompt
// and the length model's estimate from them. generate's dispatcher takes
// the same two steps as its run goes (its first request, then every
// second); estimate takes them at once, to predict that run.
func (kv KV) RunSizes(prompts, answers []int, maxTokens int) (first, settled Target) {
	if len(prompts) == 0 {
		return Target{N: 1}, Target{N: 1}
	}
	m := NewLengthModel(maxTokens)
	first = kv.Size(float64(prompts[0]), m.Estimate(nil).KVShare)
	var promptSum int64
	for i, p := range prompts {
		promptSum += int64(p)
		m.Observe(answers[i], 0) // the latency says nothing of the sizes
	}
	settled = kv.Size(float64(promptSum)/float64(len(prompts)), m.Estimate(nil).KVShare)
	return first, settled
}
