package lengthdist

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// CappedMean and ShareAtLeast agree with draws; Beyond with draws past low.
func TestLognormalMoments(t *testing.T) {
	d := Lognormal{Mu: math.Log(300), Sigma: 0.7}
	rng := rand.New(rand.NewPCG(1, 2))
	const n, limit, low = 200000, 600.0, 400.0
	var sum, at, bsum, bn, dsum float64
	for range n {
		l := d.Draw(rng)
		sum += min(l, limit)
		if l >= limit {
			at++
		}
		if l > low {
			bsum += min(l, limit)
			bn++
		}
		dsum += d.DrawBeyond(rng, low, limit)
	}
	mean, _ := d.Beyond(low, limit)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"CappedMean", d.CappedMean(limit), sum / n},
		{"ShareAtLeast", d.ShareAtLeast(limit), at / n},
		{"Beyond", mean, bsum / bn},
		{"DrawBeyond", dsum / n, bsum / bn},
	} {
		if math.Abs(c.got-c.want) > 0.01*max(c.want, 1) {
			t.Errorf("%s = %g, draws say %g", c.name, c.got, c.want)
		}
	}
	if d.ShareAtLeast(0) != 0 || d.CappedMean(0) != math.Exp(d.Mu+d.Sigma*d.Sigma/2) {
		t.Errorf("without a limit: share %g, mean %g", d.ShareAtLeast(0), d.CappedMean(0))
	}
}

func TestReadLengths(t *testing.T) {
	got, err := ReadLengths(strings.NewReader("# lengths\n12\n\n 7 \n"))
	if err != nil || len(got) != 2 || got[0] != 12 || got[1] != 7 {
		t.Fatalf("got %v, %v", got, err)
	}
	var bad *BadLengthError
	if _, err := ReadLengths(strings.NewReader("1\n-3\n")); !errors.As(err, &bad) || bad.Line != 2 || bad.Text != "-3" {
		t.Fatalf("a negative length: %v", err)
	}
	if _, err := ReadLengths(strings.NewReader("# none\n")); !errors.Is(err, ErrNoLengths) {
		t.Fatalf("no lengths: %v", err)
	}
}
