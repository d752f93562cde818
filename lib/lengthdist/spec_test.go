package lengthdist

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		text string
		want Spec
	}{
		{" fixed:64 ", Spec{Text: "fixed:64", Kind: KindFixed, Min: 64, Max: 64}},
		{"uniform:1.5, 9", Spec{Text: "uniform:1.5, 9", Kind: KindUniform, Min: 1.5, Max: 9}},
		{"lognormal:300,0.7,1500", Spec{Text: "lognormal:300,0.7,1500", Kind: KindLognormal, Median: 300,
			Log: Lognormal{Mu: math.Log(300), Sigma: 0.7}, Cap: 1500}},
		{"median=300,sigma=0.7,max=1500", Spec{Text: "median=300,sigma=0.7,max=1500", Kind: KindLognormal, Median: 300,
			Log: Lognormal{Mu: math.Log(300), Sigma: 0.7}, Cap: 1500, Fitted: true}},
		{"file:a=b.txt", Spec{Text: "file:a=b.txt", Kind: KindFile, Path: "a=b.txt"}},
	} {
		t.Run(tc.text, func(t *testing.T) {
			got, err := Parse(tc.text)
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	for _, tc := range []struct{ text, why string }{
		{"gamma:1,2", ""},
		{"fixed:nan", `"nan" is not a non-negative number`},
		{"lognormal:300", "lognormal takes 2 or 3 numbers"},
		{"mean=800,p90=1800,sigma=1", "give one or two of mean, median, p90, p99, sigma"},
	} {
		t.Run(tc.text, func(t *testing.T) {
			_, err := Parse(tc.text)
			var se *SpecError
			if !errors.As(err, &se) || se.Why != tc.why || !strings.HasSuffix(err.Error(), "want "+Syntax) {
				t.Fatalf("error %v, want one saying %q", err, tc.why)
			}
		})
	}
}

// Whatever a user writes, Parse refuses it or gives finite non-negative
// figures; a lognormal has a positive median.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"mean=800,p90=3000", "median=300,sigma=0.7,max=1500", "p90=1,p99=1e300",
		"lognormal:300,0.7,1500", "fixed:0", "uniform:0,0", "mean=1e308,sigma=30", "file:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(text)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %v is not a *SpecError", text, err)
			}
			return
		}
		for _, v := range []float64{s.Min, s.Max, s.Median, s.Log.Sigma, s.Cap} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%q: %+v", text, s)
			}
		}
		if s.Kind == KindLognormal && (s.Median <= 0 || math.IsInf(s.Log.Mu, 0)) {
			t.Fatalf("%q: lognormal %+v", text, s)
		}
	})
}
