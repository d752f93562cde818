package capacity

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/synthpipe/synthpipe/lib/lengthdist"
)

// LengthModel learns how long answers are. Completed answers alone are a
// biased sample, since short answers finish first: early in a run they say
// answers are short. The model also counts the requests in flight, whose
// lengths are known to be at least what they have generated so far
// (estimated from their age and the per-request decode rate). Together
// they give the distribution of every request started (a lognormal fitted by maximum likelihood, the running requests counting
// as censored observations), and each request in flight is expected to run
// to the mean of that distribution beyond what it has generated.
type LengthModel struct {
	mu        sync.Mutex
	maxTokens int
	recent    []int     // a ring of the latest completed lengths
	latencies []float64 // and their latencies in seconds
	next      int
	completed int64
	// lastMean is the mean of the latest estimate, for callers that need
	// it often and cheaply.
	lastMean float64
}

// recentLengths bounds the sample the estimates sort.
const recentLengths = 4096

func NewLengthModel(maxTokens int) *LengthModel {
	return &LengthModel{maxTokens: maxTokens, recent: make([]int, 0, recentLengths),
		latencies: make([]float64, 0, recentLengths), lastMean: float64(maxTokens) / 2}
}

// CachedMean is the expected answer length as of the latest estimate.
func (m *LengthModel) CachedMean() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastMean
}

// Observe records a completed answer.
func (m *LengthModel) Observe(completion int, latency time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.recent) < recentLengths {
		m.recent = append(m.recent, completion)
		m.latencies = append(m.latencies, latency.Seconds())
	} else {
		m.recent[m.next] = completion
		m.latencies[m.next] = latency.Seconds()
		m.next = (m.next + 1) % recentLengths
	}
	m.completed++
}

// decodeRate is the tokens per second one running request gets: the slope
// of latency over answer length, so that the fixed part of every latency
// (queueing, prefill, the round trip) does not count as slow decoding. That
// fixed part, the intercept, is returned too: a request in flight has spent
// it before its first token.
func decodeRate(lengths []int, latencies []float64) (rate, fixed float64) {
	var n, sx, sy, sxx, sxy float64
	for i, l := range lengths {
		x, y := float64(l), latencies[i]
		n++
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	if n == 0 || sy <= 0 {
		return 0, 0
	}
	if den := n*sxx - sx*sx; n >= 8 && den > 0 {
		if slope := (n*sxy - sx*sy) / den; slope > 0 {
			return 1 / slope, max((sy-slope*sx)/n, 0)
		}
	}
	return sx / sy, 0 // too few answers, or no trend: the plain average
}

// LengthEstimate is what the model expects of answers.
type LengthEstimate struct {
	Mean float64 // expected answer length
	// KVShare is the mean number of generated tokens a running request
	// holds in the KV cache: E[L^2]/(2E[L]), since a request is seen in the
	// batch for a time proportional to its length and holds half of it on
	// average.
	KVShare float64
	// InFlightLeft is the expected number of tokens the requests in flight
	// have still to generate.
	InFlightLeft float64
	// InFlightDone is the estimated number of tokens they have generated.
	InFlightDone float64
	Samples      int64
	// The fitted distribution, the lower bounds of the requests in flight
	// and the answer limit, for the drain estimate.
	fit       lengthdist.Lognormal
	lows      []float64
	maxTokens float64
	// DecodeRate is tokens per second per running request.
	DecodeRate float64
}

// Estimate combines completed answers with the requests in flight, given
// their ages. Before any answer completed it assumes max_tokens/2.
func (m *LengthModel) Estimate(ages []time.Duration) LengthEstimate {
	m.mu.Lock()
	done := slices.Clone(m.recent)
	rate, fixed := decodeRate(m.recent, m.latencies)
	completed := m.completed
	m.mu.Unlock()
	maxT := float64(m.maxTokens)
	est := LengthEstimate{Samples: completed, maxTokens: maxT, DecodeRate: rate}
	if len(done) == 0 {
		prior, held := Prior(maxT)
		est.Mean, est.KVShare = prior, held
		for _, age := range ages {
			low := generated(rate, fixed, age, maxT)
			est.InFlightDone += low
			est.InFlightLeft += max(prior, low) - low
		}
		m.setMean(est.Mean)
		return est
	}
	lows := make([]float64, len(ages))
	for i, age := range ages {
		lows[i] = generated(rate, fixed, age, maxT)
	}
	tail := fitTail(done, lows)
	est.fit, est.lows = tail, lows
	var sum, sumSq float64
	for _, v := range done {
		f := float64(v)
		sum += f
		sumSq += f * f
	}
	for _, low := range lows {
		full, fullSq := tail.Beyond(low, maxT)
		sum += full
		sumSq += fullSq
		est.InFlightDone += low
		est.InFlightLeft += full - low
	}
	n := float64(len(done) + len(lows))
	est.Mean = sum / n
	est.KVShare = Held(sum, sumSq)
	m.setMean(est.Mean)
	return est
}

// generated is what a request in flight for age has generated: nothing
// during the fixed part of a latency (a request queued on the server
// beyond what its cache holds waits there), then rate tokens a second, up to
// maxT. Counting the wait as decoding made the requests in flight look
// long early in a run, and the ETA pessimistic.
func generated(rate, fixed float64, age time.Duration, maxT float64) float64 {
	return min(rate*max(age.Seconds()-fixed, 0), maxT)
}

func (m *LengthModel) setMean(mean float64) {
	m.mu.Lock()
	m.lastMean = mean
	m.mu.Unlock()
}

// fitSample bounds the points the fit looks at, to keep it cheap.
const fitSample = 512

// fitTail fits a lognormal to the lengths by maximum likelihood with
// censoring: done are exact lengths, lows are lower bounds (requests still
// running). Every point informs the fit, so it holds early in a run, when
// the completed answers are few and all short.
func fitTail(done []int, lows []float64) lengthdist.Lognormal {
	var events, censored []float64
	step := max(1, (len(done)+len(lows))/fitSample)
	for i := 0; i < len(done); i += step {
		events = append(events, math.Log(math.Max(float64(done[i]), 1)))
	}
	for i := 0; i < len(lows); i += step {
		censored = append(censored, math.Log(math.Max(lows[i], 1)))
	}
	if len(events) == 0 {
		events = append(events, math.Log(math.Max(float64(done[0]), 1)))
	}
	lo, hi := events[0], events[0]
	for _, v := range append(slices.Clone(events), censored...) {
		lo, hi = min(lo, v), max(hi, v)
	}
	logLik := func(mu, sigma float64) float64 {
		ll := -float64(len(events)) * math.Log(sigma)
		for _, x := range events {
			z := (x - mu) / sigma
			ll -= z * z / 2
		}
		for _, c := range censored {
			ll += math.Log(math.Max(0.5*math.Erfc((c-mu)/sigma/math.Sqrt2), 1e-300))
		}
		return ll
	}
	bestMu := func(sigma float64) (float64, float64) {
		mu := goldenMax(lo-1, hi+3, func(mu float64) float64 { return logLik(mu, sigma) })
		return mu, logLik(mu, sigma)
	}
	sigma := goldenMax(0.05, 2.5, func(sigma float64) float64 { _, ll := bestMu(sigma); return ll })
	mu, _ := bestMu(sigma)
	return lengthdist.Lognormal{Mu: mu, Sigma: sigma}
}

// goldenMax finds the maximum of a unimodal f on [a, b].
func goldenMax(a, b float64, f func(float64) float64) float64 {
	const inv = 0.6180339887498949
	c, d := b-inv*(b-a), a+inv*(b-a)
	fc, fd := f(c), f(d)
	for i := 0; i < 28; i++ {
		if fc > fd {
			b, d, fd = d, c, fc
			c = b - inv*(b-a)
			fc = f(c)
		} else {
			a, c, fc = c, d, fd
			d = a + inv*(b-a)
			fd = f(d)
		}
	}
	return (a + b) / 2
}

// drainDraws is how many times the drain is simulated.
const drainDraws = 16

// LongestRemaining is the expected largest number of tokens a request in
// flight has still to generate: when no request is left to start, the run
// ends with the longest of them, while the others' slots sit idle.
func (e LengthEstimate) LongestRemaining() float64 {
	if len(e.lows) == 0 || e.fit.Sigma == 0 {
		return 0
	}
	rng := rand.New(rand.NewPCG(uint64(len(e.lows)), 1))
	var sum float64
	for range drainDraws {
		longest := 0.0
		for _, low := range e.lows {
			longest = max(longest, e.fit.DrawBeyond(rng, low, e.maxTokens)-low)
		}
		sum += longest
	}
	return sum / drainDraws
}
