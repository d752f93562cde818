package sim

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"

	"github.com/synthpipe/synthpipe/lib/lengthdist"
)

// LengthKind names a distribution of answer lengths.
type LengthKind string

// The supported answer length distributions.
const (
	// LengthFixed answers every prompt with LengthDist.Fixed tokens.
	LengthFixed LengthKind = "fixed"
	// LengthUniform draws uniformly from [LengthDist.Min, LengthDist.Max].
	LengthUniform LengthKind = "uniform"
	// LengthLognormal draws exp(N(ln Median, Sigma)), rounded and capped at
	// LengthDist.Max (when positive); real answer lengths are roughly
	// lognormal with a long tail.
	LengthLognormal LengthKind = "lognormal"
	// LengthEmpirical draws uniformly from LengthDist.Values, for example
	// lengths measured on a real run (see LoadLengthFile).
	LengthEmpirical LengthKind = "file"
)

// LengthDist is the distribution of natural answer lengths in content tokens
// (not counting the EOS token). Only the fields of its Kind are used.
type LengthDist struct {
	// Kind selects the distribution.
	Kind LengthKind
	// Fixed is the length of LengthFixed.
	Fixed int
	// Min and Max bound LengthUniform; Max also caps LengthLognormal
	// (0 means no cap there).
	Min int
	Max int
	// Median and Sigma are LengthLognormal's median length in tokens and
	// the standard deviation of the log length.
	Median float64
	Sigma  float64
	// Values are LengthEmpirical's lengths, drawn uniformly.
	Values []int
}

// ParseLengthDist parses a textual distribution, the form llm-sim's
// --lengths takes: lengthdist.Parse's forms, read as llm-sim needs them
// (lengthsOf).
//
//	fixed:N
//	uniform:MIN,MAX
//	lognormal:MEDIAN,SIGMA[,MAX]
//	file:PATH        (one non-negative integer a line; see LoadLengthFile)
//	mean=800,p90=1800,max=4096   (figures a lognormal is fitted to)
func ParseLengthDist(spec string) (LengthDist, error) {
	s, err := lengthdist.Parse(spec)
	if err != nil {
		return LengthDist{}, fmt.Errorf("sim: bad length distribution %w", err)
	}
	d, err := lengthsOf(s)
	if err != nil {
		return LengthDist{}, err
	}
	return d, d.validate()
}

// lengthsOf is the distribution of a parsed spec. Lengths, bounds and caps
// are whole numbers of tokens here (fixed:5.5 is refused, fixed:1e3 is
// fixed:1000); a length file's path must be given.
func lengthsOf(s lengthdist.Spec) (LengthDist, error) {
	var n [3]int
	for i, v := range []float64{s.Min, s.Max, s.Cap} {
		if v != math.Trunc(v) || v >= math.MaxInt64 {
			why := strconv.FormatFloat(v, 'f', -1, 64) + " is not a whole number of tokens"
			return LengthDist{}, fmt.Errorf("sim: bad length distribution %w", &lengthdist.SpecError{Spec: s.Text, Why: why})
		}
		n[i] = int(v)
	}
	switch s.Kind {
	case lengthdist.KindFixed:
		return LengthDist{Kind: LengthFixed, Fixed: n[0]}, nil
	case lengthdist.KindUniform:
		return LengthDist{Kind: LengthUniform, Min: n[0], Max: n[1]}, nil
	case lengthdist.KindLognormal:
		return LengthDist{Kind: LengthLognormal, Median: s.Median, Sigma: s.Log.Sigma, Max: n[2]}, nil
	}
	if s.Path == "" {
		return LengthDist{}, fmt.Errorf("sim: bad length distribution %w", &lengthdist.SpecError{Spec: s.Text, Why: "file: takes a PATH"})
	}
	values, err := LoadLengthFile(s.Path)
	return LengthDist{Kind: LengthEmpirical, Values: values}, err
}

// String returns the distribution in ParseLengthDist's form; an empirical
// distribution, whose file name is not kept, prints as "file:<N values>".
func (d LengthDist) String() string {
	switch d.Kind {
	case LengthFixed:
		return fmt.Sprintf("fixed:%d", d.Fixed)
	case LengthUniform:
		return fmt.Sprintf("uniform:%d,%d", d.Min, d.Max)
	case LengthLognormal:
		s := fmt.Sprintf("lognormal:%s,%s", strconv.FormatFloat(d.Median, 'g', -1, 64), strconv.FormatFloat(d.Sigma, 'g', -1, 64))
		if d.Max > 0 {
			s += fmt.Sprintf(",%d", d.Max)
		}
		return s
	case LengthEmpirical:
		return fmt.Sprintf("file:<%d values>", len(d.Values))
	}
	return string(d.Kind)
}

// LoadLengthFile reads answer lengths, one non-negative integer a line.
// Blank lines and lines starting with # are skipped.
func LoadLengthFile(path string) ([]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sim: length file: %w", err)
	}
	defer f.Close()
	values, err := lengthdist.ReadLengths(f)
	var bad *lengthdist.BadLengthError
	switch {
	case errors.As(err, &bad):
		return nil, fmt.Errorf("sim: length file %s:%d: %q is not a non-negative integer", path, bad.Line, bad.Text)
	case errors.Is(err, lengthdist.ErrNoLengths):
		return nil, fmt.Errorf("sim: length file %s holds no lengths", path)
	case err != nil:
		return nil, fmt.Errorf("sim: length file: %w", err)
	}
	return values, nil
}

func (d *LengthDist) validate() error {
	switch d.Kind {
	case LengthFixed:
		if d.Fixed < 0 {
			return errors.New("sim: fixed length must not be negative")
		}
	case LengthUniform:
		if d.Min < 0 || d.Max < d.Min {
			return errors.New("sim: uniform lengths need 0 <= Min <= Max")
		}
	case LengthLognormal:
		if d.Median <= 0 || d.Sigma < 0 || d.Max < 0 {
			return errors.New("sim: lognormal lengths need Median > 0, Sigma >= 0, Max >= 0")
		}
	case LengthEmpirical:
		if len(d.Values) == 0 {
			return errors.New("sim: empirical lengths need at least one value")
		}
		for _, v := range d.Values {
			if v < 0 {
				return errors.New("sim: empirical lengths must not be negative")
			}
		}
	default:
		return fmt.Errorf("sim: unknown length distribution %q", d.Kind)
	}
	return nil
}

// sample draws one answer length from the distribution.
func (d *LengthDist) sample(r *rng) int {
	switch d.Kind {
	case LengthUniform:
		return d.Min + int(r.next()%uint64(d.Max-d.Min+1))
	case LengthLognormal:
		// Box-Muller turns two uniforms into one standard normal draw.
		u1, u2 := r.float(), r.float()
		z := math.Sqrt(-2*math.Log(1-u1)) * math.Cos(2*math.Pi*u2)
		n := int(math.Round(d.Median * math.Exp(d.Sigma*z)))
		if d.Max > 0 && n > d.Max {
			n = d.Max
		}
		return n
	case LengthEmpirical:
		return d.Values[r.next()%uint64(len(d.Values))]
	default:
		return d.Fixed
	}
}
