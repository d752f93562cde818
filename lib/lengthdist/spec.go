package lengthdist

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Kind names the form of a length spec.
type Kind string

// The forms of a length spec.
const (
	KindFixed     Kind = "fixed"     // fixed:N
	KindUniform   Kind = "uniform"   // uniform:MIN,MAX
	KindLognormal Kind = "lognormal" // lognormal:MEDIAN,SIGMA[,MAX] or KEY=N figures
	KindFile      Kind = "file"      // file:PATH, a length file (ReadLengths)
)

// Syntax is the forms Parse takes, for errors and help.
const Syntax = "KEY=N pairs such as mean=800,p90=1800 (keys mean, median, p90, p99, sigma, max), " +
	"lognormal:MEDIAN,SIGMA[,MAX], fixed:N, uniform:MIN,MAX or file:PATH"

// MaxSigma bounds the spread that figures may make: at 3, the 99th
// percentile is a thousand times the median, wider than any real answer
// lengths.
const MaxSigma = 3

// DefaultSigma is the spread assumed when the figures give a single length:
// about what answer lengths of one dataset show (p90 2.2 times the median).
const DefaultSigma = 0.6

// P90Ratio is how many times its median a lognormal's 90th percentile is,
// for a spread sigma: DefaultSigma's is about 2.2.
func P90Ratio(sigma float64) float64 { return math.Exp(z90 * sigma) }

// MaxFigure bounds each KEY=N figure: no answer is a billion tokens.
const MaxFigure = 1e9

// z90 and z99 are the standard normal's 90th and 99th percentiles.
const (
	z90 = 1.2815515655446004
	z99 = 2.3263478740408408
)

// Spec is a parsed answer-length spec, the form llm-sim's and estimate's
// --lengths take. Its numbers are as written: non-negative and finite, not
// rounded; each tool checks them further its own way (whole numbers, a
// largest length, a narrower spread). Only the fields of its Kind are set.
type Spec struct {
	// Text is the spec as written, spaces around it trimmed.
	Text string
	Kind Kind
	// Min and Max bound KindUniform; KindFixed has Min == Max == N.
	Min, Max float64
	// Median is KindLognormal's median as written (exp(Log.Mu) when fitted
	// to figures); Log is its distribution.
	Median float64
	Log    Lognormal
	// Cap is where KindLognormal's answers stop (its MAX or max=); 0: no cap.
	Cap float64
	// Fitted: a KindLognormal fitted to KEY=N figures.
	Fitted bool
	// Path is KindFile's length file, as written (possibly empty).
	Path string
}

// SpecError is a spec Parse refuses.
type SpecError struct {
	Spec string // as written, trimmed
	Why  string // what is wrong; "" when the form is unknown
}

func (e *SpecError) Error() string {
	if e.Why == "" {
		return fmt.Sprintf("%q: want %s", e.Spec, Syntax)
	}
	return fmt.Sprintf("%q: %s; want %s", e.Spec, e.Why, Syntax)
}

// Parse reads an answer-length spec:
//
//	fixed:N, uniform:MIN,MAX      N, MIN, MAX non-negative numbers
//	lognormal:MEDIAN,SIGMA[,MAX]  MEDIAN positive; MAX 0: no cap
//	file:PATH                     a length file, not opened here
//	mean=800,p90=1800             a lognormal with that mean and 90th percentile:
//	                              any two of mean, median (or p50), p90, p99, sigma,
//	                              or one of them with sigma DefaultSigma;
//	                              max=N caps it
//
// A spec it refuses is a *SpecError.
func Parse(text string) (Spec, error) {
	text = strings.TrimSpace(text)
	if kind, args, ok := strings.Cut(text, ":"); ok && !strings.Contains(kind, "=") {
		return parseForm(text, Kind(kind), args)
	}
	return parseFigures(text)
}

// parseForm reads the KIND:ARGS forms.
func parseForm(text string, kind Kind, args string) (Spec, error) {
	s := Spec{Text: text, Kind: kind}
	if kind == KindFile {
		s.Path = args
		return s, nil
	}
	arity := map[Kind][]int{KindFixed: {1}, KindUniform: {2}, KindLognormal: {2, 3}}[kind]
	if arity == nil {
		return Spec{}, &SpecError{Spec: text}
	}
	fields := strings.Split(args, ",")
	if !slices.Contains(arity, len(fields)) {
		return Spec{}, &SpecError{Spec: text, Why: fmt.Sprintf("%s takes %s numbers", kind, joinInts(arity))}
	}
	v := make([]float64, 3)
	for i, f := range fields {
		n, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || n < 0 || math.IsInf(n, 0) || math.IsNaN(n) {
			return Spec{}, &SpecError{Spec: text, Why: fmt.Sprintf("%q is not a non-negative number", f)}
		}
		v[i] = n
	}
	switch kind {
	case KindFixed:
		s.Min, s.Max = v[0], v[0]
	case KindUniform:
		if v[1] < v[0] {
			return Spec{}, &SpecError{Spec: text, Why: "MIN is above MAX"}
		}
		s.Min, s.Max = v[0], v[1]
	case KindLognormal:
		if v[0] <= 0 {
			return Spec{}, &SpecError{Spec: text, Why: "the median must be positive"}
		}
		s.Median, s.Log, s.Cap = v[0], Lognormal{Mu: math.Log(v[0]), Sigma: v[1]}, v[2]
	}
	return s, nil
}

// parseFigures reads the KEY=N form and fits a lognormal to its figures.
func parseFigures(text string) (Spec, error) {
	bad := func(format string, a ...any) (Spec, error) {
		return Spec{}, &SpecError{Spec: text, Why: fmt.Sprintf(format, a...)}
	}
	figures := map[string]float64{}
	for _, pair := range strings.Split(text, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			return bad("%q is not KEY=N", pair)
		}
		k = strings.ToLower(strings.TrimSpace(k))
		if k == "p50" {
			k = "median"
		}
		switch k {
		case "mean", "median", "p90", "p99", "sigma", "max":
		default:
			return bad("unknown key %q", k)
		}
		if _, dup := figures[k]; dup {
			return bad("%s given twice", k)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || (f == 0 && k != "sigma") {
			return bad("%s=%s is not a positive number", k, v)
		}
		if f > MaxFigure {
			return bad("%s=%s is past a billion tokens", k, v)
		}
		figures[k] = f
	}
	limit := figures["max"]
	delete(figures, "max")
	mu, sigma, err := fitLognormal(figures)
	if err == nil && sigma > MaxSigma {
		err = fmt.Errorf("the figures make a spread (sigma %.1f) wider than any answer lengths: check them", sigma)
	}
	if err != nil {
		return bad("%v", err)
	}
	median, given := figures["median"]
	if !given {
		median = math.Exp(mu)
	}
	return Spec{Text: text, Kind: KindLognormal, Median: median, Log: Lognormal{Mu: mu, Sigma: sigma},
		Cap: limit, Fitted: true}, nil
}

// fitLognormal finds the lognormal with the given figures: one of them with
// DefaultSigma, or exactly two.
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
		f["sigma"] = DefaultSigma
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
			if has(k) {
				return fitMean(ln("mean"), ln(k), k, z)
			}
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

// fitMean fits a lognormal to the log of its mean and the log lnQ of its
// quantile k at z standard deviations.
func fitMean(lnMean, lnQ float64, k string, z float64) (mu, sigma float64, err error) {
	// ln mean - ln q = sigma^2/2 - z sigma: the smaller root.
	d := lnMean - lnQ
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
	return lnMean - sigma*sigma/2, sigma, nil
}

func joinInts(n []int) string {
	s := make([]string, len(n))
	for i, v := range n {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, " or ")
}
