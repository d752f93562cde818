package sim

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

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

// ParseLengthDist parses a textual distribution, the form a command line
// flag takes:
//
//	fixed:N
//	uniform:MIN,MAX
//	lognormal:MEDIAN,SIGMA[,MAX]
//	file:PATH        (one non-negative integer a line; see LoadLengthFile)
func ParseLengthDist(spec string) (LengthDist, error) {
	kind, args, _ := strings.Cut(spec, ":")
	var fields []string
	if args != "" {
		fields = strings.Split(args, ",")
	}
	bad := func() (LengthDist, error) {
		return LengthDist{}, fmt.Errorf("sim: bad length distribution %q (want fixed:N, uniform:MIN,MAX, lognormal:MEDIAN,SIGMA[,MAX] or file:PATH)", spec)
	}
	var d LengthDist
	var err error
	switch LengthKind(kind) {
	case LengthFixed:
		if len(fields) != 1 {
			return bad()
		}
		d = LengthDist{Kind: LengthFixed}
		d.Fixed, err = strconv.Atoi(fields[0])
	case LengthUniform:
		if len(fields) != 2 {
			return bad()
		}
		d = LengthDist{Kind: LengthUniform}
		if d.Min, err = strconv.Atoi(fields[0]); err == nil {
			d.Max, err = strconv.Atoi(fields[1])
		}
	case LengthLognormal:
		if len(fields) != 2 && len(fields) != 3 {
			return bad()
		}
		d = LengthDist{Kind: LengthLognormal}
		if d.Median, err = strconv.ParseFloat(fields[0], 64); err == nil {
			d.Sigma, err = strconv.ParseFloat(fields[1], 64)
		}
		if err == nil && len(fields) == 3 {
			d.Max, err = strconv.Atoi(fields[2])
		}
	case LengthEmpirical:
		if args == "" {
			return bad()
		}
		d = LengthDist{Kind: LengthEmpirical}
		d.Values, err = LoadLengthFile(args)
		if err != nil {
			return LengthDist{}, err
		}
	default:
		return bad()
	}
	if err != nil {
		return bad()
	}
	return d, d.validate()
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
