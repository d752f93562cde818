// Package lengthdist is the one lognormal distribution of answer lengths
// that synthpipe's tools share: estimate's --lengths (its lognormal forms),
// generate's length model (capacity.LengthModel fits one to the answers
// and the requests in flight) and the normal distribution they are built
// on. Answer lengths are close to lognormal: most are near the median, a
// few are many times longer. It also parses the answer-length specs of
// llm-sim's and estimate's --lengths (Parse: one parser, each tool checks
// the result its own way; lengthdisttest holds the table of what each
// accepts) and reads length files (ReadLengths), which their file:PATH
// forms take alike.
package lengthdist

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Lognormal is the distribution of answer lengths L with ln L ~ N(Mu, Sigma).
type Lognormal struct{ Mu, Sigma float64 }

// Draw draws one length (not rounded, not capped).
func (d Lognormal) Draw(rng *rand.Rand) float64 {
	return math.Exp(d.Mu + d.Sigma*rng.NormFloat64())
}

// CappedMean is E[min(L, limit)], from the partial moment of the lognormal
// below the limit; limit <= 0: no limit.
func (d Lognormal) CappedMean(limit float64) float64 {
	full := math.Exp(d.Mu + d.Sigma*d.Sigma/2)
	if limit <= 0 || d.Sigma == 0 {
		if limit > 0 {
			return min(full, limit)
		}
		return full
	}
	b := (math.Log(limit) - d.Mu) / d.Sigma
	below := full * NormalCDF(b-d.Sigma)
	return below + limit*(1-NormalCDF(b))
}

// ShareAtLeast is P(L >= limit), the share of answers a limit stops;
// limit <= 0: no limit, none.
func (d Lognormal) ShareAtLeast(limit float64) float64 {
	if limit <= 0 {
		return 0
	}
	if d.Sigma == 0 {
		if math.Exp(d.Mu) >= limit {
			return 1
		}
		return 0
	}
	return 1 - NormalCDF((math.Log(limit)-d.Mu)/d.Sigma)
}

// Beyond is E[min(L, cap) | L > low] and E[min(L, cap)^2 | L > low].
func (d Lognormal) Beyond(low, cap float64) (float64, float64) {
	if low >= cap {
		return cap, cap * cap
	}
	a := math.Log(math.Max(low, 1))
	b := math.Log(cap)
	s := d.Sigma
	pAbove := 1 - NormalCDF((a-d.Mu)/s)
	if pAbove < 1e-12 {
		return low, low * low
	}
	pCap := 1 - NormalCDF((b-d.Mu)/s)
	// Partial moments of a lognormal between low and cap.
	m1 := math.Exp(d.Mu+s*s/2) * (NormalCDF((b-d.Mu-s*s)/s) - NormalCDF((a-d.Mu-s*s)/s))
	m2 := math.Exp(2*d.Mu+2*s*s) * (NormalCDF((b-d.Mu-2*s*s)/s) - NormalCDF((a-d.Mu-2*s*s)/s))
	mean := (m1 + cap*pCap) / pAbove
	sq := (m2 + cap*cap*pCap) / pAbove
	return max(mean, low), max(sq, low*low)
}

// DrawBeyond draws min(L, cap) given L > low.
func (d Lognormal) DrawBeyond(rng *rand.Rand, low, cap float64) float64 {
	if low >= cap {
		return cap
	}
	p := NormalCDF((math.Log(math.Max(low, 1)) - d.Mu) / d.Sigma)
	u := p + (1-p)*rng.Float64()
	return min(math.Max(math.Exp(d.Mu+d.Sigma*normalQuantile(u)), low), cap)
}

// NormalCDF is the standard normal distribution function.
func NormalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

func normalQuantile(p float64) float64 {
	p = min(max(p, 1e-9), 1-1e-9)
	return math.Sqrt2 * math.Erfinv(2*p-1)
}

// ReadLengths reads a length file's answer lengths from r: one
// non-negative integer a line, blank lines and lines starting with #
// skipped. llm-sim and estimate read the same files through it, so that a
// file one takes the other takes too. A line that is not a length is a
// *BadLengthError, a file without one ErrNoLengths; the callers word both.
func ReadLengths(r io.Reader) ([]int, error) {
	var values []int
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		n, err := strconv.Atoi(text)
		if err != nil || n < 0 {
			return nil, &BadLengthError{Line: line, Text: text}
		}
		values = append(values, n)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(values) == 0 {
		return nil, ErrNoLengths
	}
	return values, nil
}

// BadLengthError is a line of a length file that is not a length.
type BadLengthError struct {
	Line int    // from 1
	Text string // the line, trimmed
}

func (e *BadLengthError) Error() string {
	return fmt.Sprintf("line %d: %q is not a non-negative integer", e.Line, e.Text)
}

// ErrNoLengths is a length file that holds no lengths.
var ErrNoLengths = errors.New("no lengths")
