package generate

import (
	"math"
	"slices"
	"sync"
	"time"
)

// lengthModel learns how long answers are. Completed answers alone are a
// biased sample, since short answers finish first: early in a run they say
// answers are short. The model also counts the requests in flight, whose
// lengths are known to be at least what they have generated so far
// (estimated from their age and the per-request decode rate): a
// Kaplan-Meier estimate over every request started gives the distribution
// as far as it has been observed, a lognormal fitted to that part extends it
// past the longest answer seen, and each request in flight is expected to
// run to the mean of that distribution beyond what it has generated.
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

// estimate combines completed answers with the requests in flight, given
// their ages. Before any answer completed it assumes max_tokens/2.
func (m *lengthModel) estimate(ages []time.Duration) lengthEstimate {
	m.mu.Lock()
	done := slices.Clone(m.recent)
	rate := m.decodeRate
	completed := m.completed
	m.mu.Unlock()
	maxT := float64(m.maxTokens)
	est := lengthEstimate{samples: completed}
	if len(done) == 0 {
		prior := maxT / 2
		est.mean, est.kvShare = prior, prior*2/3 // uniform on [0, max]
		for _, age := range ages {
			low := min(rate*age.Seconds(), maxT)
			est.inFlightDone += low
			est.inFlightLeft += max(prior, low) - low
		}
		m.setMean(est.mean)
		return est
	}
	lows := make([]float64, len(ages))
	for i, age := range ages {
		lows[i] = min(rate*age.Seconds(), maxT)
	}
	tail := fitTail(done, lows)
	var sum, sumSq float64
	for _, v := range done {
		f := float64(v)
		sum += f
		sumSq += f * f
	}
	for _, low := range lows {
		full, fullSq := tail.beyond(low, maxT)
		sum += full
		sumSq += fullSq
		est.inFlightDone += low
		est.inFlightLeft += full - low
	}
	n := float64(len(done) + len(lows))
	est.mean = sum / n
	est.kvShare = sumSq / n / (2 * est.mean)
	m.setMean(est.mean)
	return est
}

func (m *lengthModel) setMean(mean float64) {
	m.mu.Lock()
	m.lastMean = mean
	m.mu.Unlock()
}

// lognormal is the fitted answer length distribution: ln L ~ N(mu, sigma).
type lognormal struct{ mu, sigma float64 }

// fitTail fits a lognormal to the Kaplan-Meier estimate of the lengths:
// done are exact, lows are lower bounds (requests still running). It uses
// two quantiles inside the observed part of the distribution, which works
// however little of the distribution has been observed yet.
func fitTail(done []int, lows []float64) lognormal {
	type obs struct {
		v     float64
		event bool
	}
	all := make([]obs, 0, len(done)+len(lows))
	for _, v := range done {
		all = append(all, obs{math.Max(float64(v), 1), true})
	}
	for _, v := range lows {
		all = append(all, obs{math.Max(v, 1), false})
	}
	slices.SortFunc(all, func(a, b obs) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		case a.event && !b.event:
			return -1 // an answer that ended at v was shorter than one still running at v
		}
		return 0
	})
	// The cumulative distribution at each completed length.
	var xs, ps []float64
	surv, atRisk := 1.0, float64(len(all))
	for _, o := range all {
		if o.event {
			surv *= 1 - 1/atRisk
			xs = append(xs, o.v)
			ps = append(ps, 1-surv)
		}
		atRisk--
	}
	top := ps[len(ps)-1]
	quantile := func(p float64) float64 {
		i, _ := slices.BinarySearch(ps, p)
		return xs[min(i, len(xs)-1)]
	}
	pLo, pHi := top*0.2, top*0.9
	xLo, xHi := quantile(pLo), quantile(pHi)
	zLo, zHi := normalQuantile(pLo), normalQuantile(pHi)
	sigma := 0.5
	if zHi-zLo > 0.05 && xHi > xLo {
		sigma = (math.Log(xHi) - math.Log(xLo)) / (zHi - zLo)
	}
	sigma = min(max(sigma, 0.05), 2.5)
	return lognormal{mu: math.Log(xHi) - sigma*zHi, sigma: sigma}
}

// beyond is E[min(L, cap) | L > low] and E[min(L, cap)^2 | L > low].
func (d lognormal) beyond(low, cap float64) (float64, float64) {
	if low >= cap {
		return cap, cap * cap
	}
	a := math.Log(math.Max(low, 1))
	b := math.Log(cap)
	s := d.sigma
	pAbove := 1 - normalCDF((a-d.mu)/s)
	if pAbove < 1e-12 {
		return low, low * low
	}
	pCap := 1 - normalCDF((b-d.mu)/s)
	// Partial moments of a lognormal between low and cap.
	m1 := math.Exp(d.mu+s*s/2) * (normalCDF((b-d.mu-s*s)/s) - normalCDF((a-d.mu-s*s)/s))
	m2 := math.Exp(2*d.mu+2*s*s) * (normalCDF((b-d.mu-2*s*s)/s) - normalCDF((a-d.mu-2*s*s)/s))
	mean := (m1 + cap*pCap) / pAbove
	sq := (m2 + cap*cap*pCap) / pAbove
	return max(mean, low), max(sq, low*low)
}

func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

func normalQuantile(p float64) float64 {
	p = min(max(p, 1e-9), 1-1e-9)
	return math.Sqrt2 * math.Erfinv(2*p-1)
}
