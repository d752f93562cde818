package estimate

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"

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

// z90 and z99 are the standard normal's 90th and 99th percentiles.
const (
	z90 = 1.2815515655446004
	z99 = 2.3263478740408408
)

// maxLength bounds every figure of --lengths: no answer is a billion tokens.
const maxLength = 1e9

// maxSigma bounds the spread: at 3, the 99th percentile is a thousand times
// the median, wider than any real answer lengths.
const maxSigma = 3

// defaultSigma is the spread assumed when --lengths gives a single figure:
// about what answer lengths of one dataset show (p90 2.2 times the median).
const defaultSigma = 0.6

// lengthsSyntax is the --lengths help, for errors.
const lengthsSyntax = "want KEY=N pairs such as mean=800,p90=1800 (keys mean, median, p90, p99, sigma, max), " +
	"lognormal:MEDIAN,SIGMA[,MAX], fixed:N, uniform:MIN,MAX or file:PATH"

// parseLengths reads --lengths. limit is --max-tokens (0: none); a max=
// in the spec caps too, and the smaller cap wins.
//
//	mean=800,p90=1800     a lognormal with that mean and 90th percentile
//	median=300,sigma=0.7  any two of mean, median (or p50), p90, p99, sigma
//	mean=800              one figure: sigma 0.6
//	...,max=4096          answers stop at 4,096 tokens (truncated)
//	lognormal:300,0.7,1500, fixed:N, uniform:MIN,MAX   llm-sim's forms
//	file:PATH             lengths one per line, drawn with replacement
func parseLengths(spec string, limit int) (lengths, error) {
	spec = strings.TrimSpace(spec)
	bad := func(why string) error {
		if why != "" {
			why += "; "
		}
		return fmt.Errorf("--lengths %q: %s%s", spec, why, lengthsSyntax)
	}
	capAt := func(m int) int {
		if m > 0 && (limit == 0 || m < limit) {
			return m
		}
		return limit
	}
	if kind, args, ok := strings.Cut(spec, ":"); ok && !strings.Contains(kind, "=") {
		nums := func(n ...int) ([]float64, error) {
			fields := strings.Split(args, ",")
			if !slices.Contains(n, len(fields)) {
				return nil, bad(fmt.Sprintf("%s takes %s numbers", kind, joinInts(n)))
			}
			out := make([]float64, len(fields))
			for i, f := range fields {
				v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
				if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
					return nil, bad(fmt.Sprintf("%q is not a non-negative number", f))
				}
				if v > maxLength {
					return nil, bad(fmt.Sprintf("%q is past a billion tokens", f))
				}
				out[i] = v
			}
			return out, nil
		}
		switch kind {
		case "file":
			return loadLengthFile(args, limit)
		case "fixed":
			v, err := nums(1)
			if err != nil {
				return nil, err
			}
			return &uniform{lo: int(v[0]), hi: int(v[0]), limit: limit, spec: spec}, nil
		case "uniform":
			v, err := nums(2)
			if err != nil {
				return nil, err
			}
			if v[1] < v[0] {
				return nil, bad("MIN is above MAX")
			}
			return &uniform{lo: int(v[0]), hi: int(v[1]), limit: limit, spec: spec}, nil
		case "lognormal":
			v, err := nums(2, 3)
			if err != nil {
				return nil, err
			}
			if v[0] <= 0 {
				return nil, bad("the median must be positive")
			}
			if v[1] > maxSigma {
				return nil, bad(fmt.Sprintf("sigma %g is wider than any answer lengths (at most %d)", v[1], maxSigma))
			}
			m := 0
			if len(v) == 3 {
				m = int(v[2])
			}
			return &lognormal{Lognormal: lengthdist.Lognormal{Mu: math.Log(v[0]), Sigma: v[1]}, limit: capAt(m), spec: spec}, nil
		}
		return nil, bad("")
	}
	figures := map[string]float64{}
	for _, pair := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			return nil, bad(fmt.Sprintf("%q is not KEY=N", pair))
		}
		k = strings.ToLower(strings.TrimSpace(k))
		if k == "p50" {
			k = "median"
		}
		switch k {
		case "mean", "median", "p90", "p99", "sigma", "max":
		default:
			return nil, bad(fmt.Sprintf("unknown key %q", k))
		}
		if _, dup := figures[k]; dup {
			return nil, bad(fmt.Sprintf("%s given twice", k))
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || (f == 0 && k != "sigma") {
			return nil, bad(fmt.Sprintf("%s=%s is not a positive number", k, v))
		}
		if f > maxLength {
			return nil, bad(fmt.Sprintf("%s=%s is past a billion tokens", k, v))
		}
		figures[k] = f
	}
	m := int(figures["max"])
	delete(figures, "max")
	mu, sigma, err := fitLognormal(figures)
	if err == nil && sigma > maxSigma {
		err = fmt.Errorf("the figures make a spread (sigma %.1f) wider than any answer lengths: check them", sigma)
	}
	if err != nil {
		return nil, bad(err.Error())
	}
	return &lognormal{Lognormal: lengthdist.Lognormal{Mu: mu, Sigma: sigma}, limit: capAt(m), spec: spec}, nil
}

// fitLognormal finds the lognormal with the given figures: one of them with
// defaultSigma, or exactly two.
func fitLognormal(f map[string]float64) (mu, sigma float64, err error) {
	has := func(k string) bool { _, ok := f[k]; return ok }
	ln := func(k string) float64 { return math.Log(f[k]) }
	quantile := map[string]float64{"median": 0, "p90": z90, "p99": z99}
	switch len(f) {
	case 0:
		return 0, 0, fmt.Errorf("no figure given")
	case 1:
		if has("sigma") {
			return 0, 0, fmt.Errorf("sigma alone says nothing of the length")
		}
		f["sigma"] = defaultSigma
	case 2:
	default:
		return 0, 0, fmt.Errorf("give one or two of mean, median, p90, p99, sigma")
	}
	if has("sigma") {
		sigma = f["sigma"]
		for k, z := range quantile {
			if has(k) {
				return ln(k) - z*sigma, sigma, nil
			}
		}
		return ln("mean") - sigma*sigma/2, sigma, nil
	}
	if has("mean") {
		for k, z := range quantile {
			if !has(k) {
				continue
			}
			// ln mean - ln q = sigma^2/2 - z sigma: the smaller root.
			d := ln("mean") - ln(k)
			if z == 0 {
				if d < 0 {
					return 0, 0, fmt.Errorf("the mean of answer lengths is never below their median")
				}
				sigma = math.Sqrt(2 * d)
			} else {
				disc := z*z + 2*d
				if disc < 0 {
					return 0, 0, fmt.Errorf("%s is too far above the mean for a lognormal (at most %.1f times)", k, math.Exp(z*z/2))
				}
				sigma = z - math.Sqrt(disc)
				if sigma < 0 {
					return 0, 0, fmt.Errorf("%s must be above the mean", k)
				}
			}
			return ln("mean") - sigma*sigma/2, sigma, nil
		}
	}
	// Two quantiles.
	var ks []string
	for k := range quantile {
		if has(k) {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(a, b string) int { return cmp.Compare(quantile[a], quantile[b]) })
	lo, hi := ks[0], ks[1]
	sigma = (ln(hi) - ln(lo)) / (quantile[hi] - quantile[lo])
	if sigma < 0 {
		return 0, 0, fmt.Errorf("%s must not be below %s", hi, lo)
	}
	return ln(lo) - quantile[lo]*sigma, sigma, nil
}

func joinInts(n []int) string {
	s := make([]string, len(n))
	for i, v := range n {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, " or ")
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
