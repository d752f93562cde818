package estimate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/lengthdist"
)

// lengths is a distribution of answer lengths in completion tokens, the
// answer limit (max_tokens) applied.
type lengths interface {
	// draw returns one answer length.
	draw(rng *rand.Rand) int
	// mean is the expected length.
	mean() float64
	// truncatedShare is the share of answers that stop at the limit.
	truncatedShare() float64
	// String says where the distribution comes from, for the report.
	String() string
}

// empirical draws from lengths seen in a done file, with replacement: the
// answers still to come look like the answers already made.
type empirical struct {
	values    []int
	truncated int64 // of values, answers that stopped at their limit
	limit     int   // --max-tokens, 0: none
	source    string
}

func (e *empirical) draw(rng *rand.Rand) int {
	v := e.values[rng.IntN(len(e.values))]
	if e.limit > 0 {
		v = min(v, e.limit)
	}
	return v
}

func (e *empirical) mean() float64 {
	var sum float64
	for _, v := range e.values {
		if e.limit > 0 {
			v = min(v, e.limit)
		}
		sum += float64(v)
	}
	return sum / float64(len(e.values))
}

func (e *empirical) truncatedShare() float64 {
	if e.limit > 0 {
		n := 0
		for _, v := range e.values {
			if v >= e.limit {
				n++
			}
		}
		return float64(n) / float64(len(e.values))
	}
	return float64(e.truncated) / float64(len(e.values))
}

func (e *empirical) String() string {
	return fmt.Sprintf("%s (%d answers)", e.source, len(e.values))
}

// lognormal is answers of a lengthdist.Lognormal, rounded, capped at
// limit when positive.
type lognormal struct {
	lengthdist.Lognormal
	limit int
	spec  string // as the user wrote it
}

func (d *lognormal) draw(rng *rand.Rand) int {
	n := int(math.Round(math.Min(d.Draw(rng), maxLength)))
	if d.limit > 0 {
		n = min(n, d.limit)
	}
	return n
}

func (d *lognormal) mean() float64 { return d.CappedMean(float64(d.limit)) }

func (d *lognormal) truncatedShare() float64 { return d.ShareAtLeast(float64(d.limit)) }

func (d *lognormal) String() string { return "--lengths " + d.spec }

// uniform draws whole lengths in [lo, hi].
type uniform struct {
	lo, hi int
	limit  int
	spec   string
}

func (d *uniform) draw(rng *rand.Rand) int {
	v := d.lo + rng.IntN(d.hi-d.lo+1)
	if d.limit > 0 {
		v = min(v, d.limit)
	}
	return v
}

func (d *uniform) mean() float64 {
	var sum float64
	n := d.hi - d.lo + 1
	if n > 100000 || d.limit <= 0 || d.limit >= d.hi {
		m := float64(d.lo+d.hi) / 2
		if d.limit > 0 {
			m = min(m, float64(d.limit))
		}
		return m
	}
	for v := d.lo; v <= d.hi; v++ {
		sum += float64(min(v, d.limit))
	}
	return sum / float64(n)
}

func (d *uniform) truncatedShare() float64 {
	if d.limit <= 0 || d.limit > d.hi {
		return 0
	}
	return float64(d.hi-max(d.limit, d.lo)+1) / float64(d.hi-d.lo+1)
}

func (d *uniform) String() string { return "--lengths " + d.spec }

// maxLength bounds every length of --lengths: no answer is a billion tokens.
const maxLength = lengthdist.MaxFigure

// parseLengths reads --lengths (lengthdist.Parse, which llm-sim's --lengths
// shares), checked as estimate needs it (checkLengths). limit is
// --max-tokens (0: none); a lognormal's MAX or max= caps too, and the
// smaller cap wins. Lengths are whole tokens: fixed:64.5 is fixed:64.
//
//	mean=800,p90=1800     a lognormal with that mean and 90th percentile
//	median=300,sigma=0.7  any two of mean, median (or p50), p90, p99, sigma
//	mean=800              one figure: sigma 0.6
//	...,max=4096          answers stop at 4,096 tokens (truncated)
//	lognormal:300,0.7,1500, fixed:N, uniform:MIN,MAX   llm-sim's forms
//	file:PATH             lengths one per line, drawn with replacement
func parseLengths(text string, limit int) (lengths, error) {
	s, err := lengthdist.Parse(text)
	if err == nil {
		err = checkLengths(s)
	}
	if err != nil {
		return nil, fmt.Errorf("--lengths %w", err)
	}
	switch s.Kind {
	case lengthdist.KindFile:
		return loadLengthFile(s.Path, limit)
	case lengthdist.KindFixed, lengthdist.KindUniform:
		return &uniform{lo: int(s.Min), hi: int(s.Max), limit: limit, spec: s.Text}, nil
	}
	if m := int(s.Cap); m > 0 && (limit == 0 || m < limit) {
		limit = m
	}
	return &lognormal{Lognormal: s.Log, limit: limit, spec: s.Text}, nil
}

// checkLengths refuses the specs lengthdist.Parse takes that estimate
// cannot size: a length past a billion tokens, a spread wider than
// lengthdist.MaxSigma (Parse bounds both for figures itself).
func checkLengths(s lengthdist.Spec) error {
	if s.Fitted {
		return nil
	}
	for _, v := range []float64{s.Min, s.Max, s.Median, s.Cap} {
		if v > maxLength {
			why := strconv.FormatFloat(v, 'f', -1, 64) + " is past a billion tokens"
			return &lengthdist.SpecError{Spec: s.Text, Why: why}
		}
	}
	if s.Log.Sigma > lengthdist.MaxSigma {
		why := fmt.Sprintf("sigma %g is wider than any answer lengths (at most %d)", s.Log.Sigma, lengthdist.MaxSigma)
		return &lengthdist.SpecError{Spec: s.Text, Why: why}
	}
	return nil
}

// loadLengthFile reads answer lengths, one whole number a line; blank lines
// and lines starting with # are skipped (lengthdist.ReadLengths: llm-sim reads the
// same files).
func loadLengthFile(path string, limit int) (lengths, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, exitcode.NoInputf("--lengths file:%s: %v", path, err)
	}
	defer f.Close()
	values, err := lengthdist.ReadLengths(f)
	var bad *lengthdist.BadLengthError
	switch {
	case errors.As(err, &bad):
		return nil, dataErrorf("%s:%d: %q is not a whole number of tokens", path, bad.Line, bad.Text)
	case errors.Is(err, lengthdist.ErrNoLengths):
		return nil, dataErrorf("%s holds no lengths", path)
	case err != nil:
		return nil, exitcode.NoInputf("--lengths file:%s: %v", path, err)
	}
	return &empirical{values: values, limit: limit, source: "--lengths file:" + path}, nil
}
