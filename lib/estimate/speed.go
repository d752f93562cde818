package estimate

import (
	"math"

	"github.com/synthpipe/synthpipe/lib/capacity"
)

// stepTiming is how long an SGLang server's decode step takes: a fixed part
// (the weights are read once per step whatever the batch) and a part per
// running request (each reads its own KV cache). A full batch's steps are
// slower than the last few requests' at the end of a run.
type stepTiming struct{ fixed, perRequest float64 }

func (s stepTiming) known() bool { return s.fixed > 0 || s.perRequest > 0 }

// seconds is the time of a simulated run: every step's fixed part, and the
// per-request part once for every token generated (a step of b requests
// generates b tokens).
func (s stepTiming) seconds(r batchRun) float64 {
	return float64(r.steps)*s.fixed + float64(r.tokens)*s.perRequest
}

// minFitAnswers is the fewest timed answers a step timing is fitted from.
const minFitAnswers = 8

// fitStepTiming learns a server's step timing from the answers a run on it
// made (done records with their latencies): the run is replayed through the
// batch model, which says how many steps each request lived through and
// how many tokens the batch generated meanwhile; the latencies are then
// their least-squares combination, plus a constant (the round trip and
// prefill). A run's last requests decode in a shrinking batch, faster than
// a full one: fitting both parts is what lets a short run, one wave of
// requests that mostly drained, predict a long one that runs full.
// runs holds each dataset's done records in file order; each is replayed
// on its own, as the datasets ran one after another, under the budget they
// presumably ran with and the --max-tokens their records say.
func fitStepTiming(runs []timedRun, c capacity.KV, budget int64) (stepTiming, bool) {
	first, ok := fitOnce(runs, c, budget, stepTiming{})
	if !ok {
		return first, false
	}
	// generate's first second ran with fewer requests in flight: replay it
	// with the time the first fit gives, and fit again.
	if again, ok := fitOnce(runs, c, budget, first); ok {
		return again, true
	}
	return first, true
}

// timedRun is one dataset's done answers, in file order, and the
// --max-tokens they were asked with (0: not recorded).
type timedRun struct {
	jobs      []timedJob
	maxTokens int
}

// fitOnce replays the runs (with generate's first second when step is
// known) and fits the latencies to what each request lived through.
func fitOnce(runs []timedRun, c capacity.KV, budget int64, step stepTiming) (stepTiming, bool) {
	var rows [][3]float64 // 1, steps, tokens
	var ys []float64
	for _, run := range runs {
		jobs := make([]job, len(run.jobs))
		for i, t := range run.jobs {
			jobs[i] = t.job
		}
		if len(jobs) == 0 {
			continue
		}
		lives := make([]life, len(jobs))
		warmup, conc := sizes(jobs, c, orDefaultMaxTokens(run.maxTokens))
		cl := client{conc: conc, budget: budget, reserve: run.maxTokens, step: step, warmupConc: warmup}
		simulateBatch(jobs, c, cl, lives)
		for i, l := range lives {
			if l.steps == 0 {
				continue
			}
			rows = append(rows, [3]float64{1, float64(l.steps), float64(l.tokens)})
			ys = append(ys, run.jobs[i].latency)
		}
	}
	if len(rows) < minFitAnswers {
		return stepTiming{}, false
	}
	best, bestErr := stepTiming{}, math.Inf(1)
	try := func(cols []int) {
		coef, ok := leastSquares(rows, ys, cols)
		if !ok {
			return
		}
		var s stepTiming
		for k, col := range cols {
			switch col {
			case 1:
				s.fixed = coef[k]
			case 2:
				s.perRequest = coef[k]
			}
			if col != 0 && coef[k] < 0 {
				return // a step does not get faster with more work
			}
		}
		if !s.known() {
			return
		}
		var sse float64
		for i, r := range rows {
			var pred float64
			for k, col := range cols {
				pred += coef[k] * r[col]
			}
			sse += (ys[i] - pred) * (ys[i] - pred)
		}
		if sse < bestErr {
			best, bestErr = s, sse
		}
	}
	try([]int{0, 1, 2})
	if !best.known() {
		// The batch never changed enough to tell the parts apart: one of
		// them alone.
		try([]int{0, 1})
		try([]int{0, 2})
	}
	return best, best.known()
}

// timedJob is a done answer with its latency in seconds.
type timedJob struct {
	job
	latency float64
}

// leastSquares fits y to the chosen columns of rows by the normal
// equations; ok is false when they are singular.
func leastSquares(rows [][3]float64, y []float64, cols []int) ([]float64, bool) {
	n := len(cols)
	// Columns scaled to a root mean square of 1: steps and tokens differ
	// by orders of magnitude, which the normal equations square.
	scale := make([]float64, n)
	for i, ci := range cols {
		for _, row := range rows {
			scale[i] += row[ci] * row[ci]
		}
		scale[i] = math.Sqrt(scale[i] / float64(len(rows)))
		if scale[i] == 0 {
			return nil, false
		}
	}
	a := make([][]float64, n)
	for i := range a {
		a[i] = make([]float64, n+1)
	}
	for r, row := range rows {
		for i, ci := range cols {
			for j, cj := range cols {
				a[i][j] += row[ci] / scale[i] * row[cj] / scale[j]
			}
			a[i][n] += row[ci] / scale[i] * y[r]
		}
	}
	// Gaussian elimination with partial pivoting.
	for col := 0; col < n; col++ {
		pivot := col
		for r := col + 1; r < n; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[pivot][col]) {
				pivot = r
			}
		}
		a[col], a[pivot] = a[pivot], a[col]
		if math.Abs(a[col][col]) < 1e-9*float64(len(rows)) {
			return nil, false
		}
		for r := 0; r < n; r++ {
			if r == col {
				continue
			}
			f := a[r][col] / a[col][col]
			for k := col; k <= n; k++ {
				a[r][k] -= f * a[col][k]
			}
		}
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = a[i][n] / a[i][i] / scale[i]
	}
	return out, true
}
