package generate

import (
	"slices"
	"sync"
	"time"
)

// lengthModel learns how long answers are. Completed answers alone are a
// biased sample, since short answers finish first; the model also counts the
// requests still in flight, whose lengths are known to be at least what they
// have generated so far (estimated from their age and the per-request decode
// rate), and imputes their full length from the completed answers longer
// than that: a survival-style estimate over every request started.
type lengthModel struct {
	mu        sync.Mutex
	maxTokens int
	recent    []int // a ring of the latest completed lengths
	next      int
	completed int64
	// decodeRate is tokens per second per request (EWMA), from completed
	// answers: their latency includes queueing, so it errs low, which keeps
	// the in-flight lower bounds true lower bounds.
	decodeRate float64
	// lastMean is the mean of the latest estimate, for callers that need
	// it often and cheaply.
	lastMean float64
}

// recentLengths bounds the sample the estimates sort.
const recentLengths = 4096

func newLengthModel(maxTokens int) *lengthModel {
	return &lengthModel{maxTokens: maxTokens, recent: make([]int, 0, recentLengths), lastMean: float64(maxTokens) / 2}
}

// cachedMean is the expected answer length as of the latest estimate.
func (m *lengthModel) cachedMean() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastMean
}

// observe records a completed answer.
func (m *lengthModel) observe(completion int, latency time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.recent) < recentLengths {
		m.recent = append(m.recent, completion)
	} else {
		m.recent[m.next] = completion
		m.next = (m.next + 1) % recentLengths
	}
	m.completed++
	if latency > 0 && completion > 0 {
		r := float64(completion) / latency.Seconds()
		if m.decodeRate == 0 {
			m.decodeRate = r
		} else {
			m.decodeRate += (r - m.decodeRate) / 32
		}
	}
}

// lengthEstimate is what the model expects of answers.
type lengthEstimate struct {
	mean float64 // expected answer length
	// kvShare is the mean number of generated tokens a running request
	// holds in the KV cache: E[L^2]/(2E[L]), since a request is seen in the
	// batch for a time proportional to its length and holds half of it on
	// average.
	kvShare float64
	// inFlightLeft is the expected number of tokens the requests in flight
	// have still to generate.
	inFlightLeft float64
	// inFlightDone is the estimated number of tokens they have generated.
	inFlightDone float64
	samples      int64
}

// priorWeight is how many answers the prior (max_tokens/2) is worth before
// real lengths are known.
const priorWeight = 4

// estimate combines completed answers with the requests in flight, given
// their ages.
func (m *lengthModel) estimate(ages []time.Duration) lengthEstimate {
	m.mu.Lock()
	sorted := slices.Clone(m.recent)
	rate := m.decodeRate
	completed := m.completed
	m.mu.Unlock()
	slices.Sort(sorted)
	// suffix[i] is the sum of sorted[i:].
	suffix := make([]float64, len(sorted)+1)
	for i := len(sorted) - 1; i >= 0; i-- {
		suffix[i] = suffix[i+1] + float64(sorted[i])
	}
	maxT := float64(m.maxTokens)
	prior := maxT / 2
	sum, sumSq, n := prior*priorWeight, prior*prior*priorWeight*4/3, float64(priorWeight)
	for _, v := range sorted {
		f := float64(v)
		sum += f
		sumSq += f * f
		n++
	}
	var est lengthEstimate
	est.samples = completed
	for _, age := range ages {
		low := min(rate*age.Seconds(), maxT)
		i, _ := slices.BinarySearch(sorted, int(low)+1)
		above := len(sorted) - i
		var full float64
		if above >= 3 {
			full = suffix[i] / float64(above)
		} else {
			// Longer than nearly every answer seen: somewhere between
			// here and the limit.
			full = low + (maxT-low)/4
		}
		full = max(full, low)
		sum += full
		sumSq += full * full
		n++
		est.inFlightDone += low
		est.inFlightLeft += full - low
	}
	est.mean = sum / n
	m.mu.Lock()
	m.lastMean = est.mean
	m.mu.Unlock()
	if est.mean > 0 {
		est.kvShare = sumSq / n / (2 * est.mean)
	}
	return est
}
