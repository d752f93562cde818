package estimate

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/lengthdist"
)

// sampleOf draws n lengths from d.
func sampleOf(d lengths, n int) []int {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]int, n)
	for i := range out {
		out[i] = d.draw(rng)
	}
	slices.Sort(out)
	return out
}

func meanOf(v []int) float64 {
	var s float64
	for _, x := range v {
		s += float64(x)
	}
	return s / float64(len(v))
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

// The figures a user gives come back from the fitted distribution, both in
// its closed-form mean and in what it draws.
func TestParseLengthsFitsTheFigures(t *testing.T) {
	for _, tc := range []struct {
		spec                 string
		mean, median, p90    float64 // 0: not checked
		truncated            float64 // share, -1: not checked
		limit                int
		wantSigma, wantLimit float64
	}{
		{spec: "mean=800,p90=1500", mean: 800, p90: 1500, truncated: 0},
		{spec: "median=300,sigma=0.7", median: 300, wantSigma: 0.7, truncated: 0},
		{spec: "p50=300,p90=700", median: 300, p90: 700, truncated: 0},
		{spec: "mean=800,median=600", mean: 800, median: 600, truncated: 0},
		{spec: "p90=1000,p99=2000", p90: 1000, truncated: 0},
		{spec: "mean=500", mean: 500, wantSigma: lengthdist.DefaultSigma, truncated: 0},
		{spec: "median=1000,sigma=0.5,max=1000", median: 1000, truncated: 0.5, wantLimit: 1000},
		{spec: "lognormal:300,0.7,1500", median: 300, wantSigma: 0.7, truncated: -1, wantLimit: 1500},
		{spec: "lognormal:300,0.7", median: 300, truncated: 0.5, limit: 300, wantLimit: 300},
		{spec: "fixed:64", mean: 64, median: 64, truncated: 0},
		{spec: "uniform:100,300", mean: 200, median: 200, truncated: 0},
		{spec: "uniform:100,300", mean: 193.66, truncated: 51.0 / 201, limit: 250},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			d, err := parseLengths(tc.spec, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			s := sampleOf(d, 200000)
			if tc.mean > 0 && (!near(d.mean(), tc.mean, 0.01) || !near(meanOf(s), tc.mean, 0.02)) {
				t.Errorf("mean %.1f, drawn %.1f, want %.0f", d.mean(), meanOf(s), tc.mean)
			}
			if tc.median > 0 && !near(float64(s[len(s)/2]), tc.median, 0.02) {
				t.Errorf("median drawn %d, want %.0f", s[len(s)/2], tc.median)
			}
			if tc.p90 > 0 && !near(float64(s[len(s)*9/10]), tc.p90, 0.02) {
				t.Errorf("p90 drawn %d, want %.0f", s[len(s)*9/10], tc.p90)
			}
			if tc.truncated >= 0 && math.Abs(d.truncatedShare()-tc.truncated) > 0.01 {
				t.Errorf("truncated share %.3f, want %.2f", d.truncatedShare(), tc.truncated)
			}
			if ln, ok := d.(*lognormal); ok {
				if tc.wantSigma > 0 && math.Abs(ln.Sigma-tc.wantSigma) > 1e-9 {
					t.Errorf("sigma %g, want %g", ln.Sigma, tc.wantSigma)
				}
				if tc.wantLimit > 0 && float64(ln.limit) != tc.wantLimit {
					t.Errorf("limit %d, want %g", ln.limit, tc.wantLimit)
				}
				// The closed-form capped mean agrees with the draws.
				if !near(d.mean(), meanOf(s), 0.02) {
					t.Errorf("closed-form mean %.1f, drawn %.1f", d.mean(), meanOf(s))
				}
			}
		})
	}
}

func TestParseLengthsRefusesNonsense(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"", "is not KEY=N"},
		{"800", "is not KEY=N"},
		{"mean=800,mean=900", "mean given twice"},
		{"avg=800", `unknown key "avg"`},
		{"mean=-1", "is not a positive number"},
		{"mean=0", "is not a positive number"},
		{"sigma=0.5", "sigma alone"},
		{"mean=100,p90=10000", "too far above the mean"},
		{"mean=100,median=200", "never below their median"},
		{"median=300,p90=200", "p90 must not be below median"},
		{"mean=1,median=1,p90=2", "give one or two"},
		{"lognormal:300", "lognormal takes 2 or 3 numbers"},
		{"lognormal:0,0.5", "median must be positive"},
		{"uniform:300,100", "MIN is above MAX"},
		{"gamma:1,2", "want KEY=N pairs"},
		{"fixed:x", `"x" is not a non-negative number`},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			_, err := parseLengths(tc.spec, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to say %q", err, tc.want)
			}
		})
	}
}

func TestLengthFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lengths.txt")
	os.WriteFile(path, []byte("# measured\n100\n\n300\n500\n"), 0o644)
	d, err := parseLengths("file:"+path, 400)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.mean(); got != (100.0+300+400)/3 {
		t.Errorf("mean %g, want the capped mean 266.7", got)
	}
	if got := d.truncatedShare(); !near(got, 1.0/3, 1e-9) {
		t.Errorf("truncated %g, want 1/3", got)
	}
	os.WriteFile(path, []byte("100\nlots\n"), 0o644)
	if _, err := parseLengths("file:"+path, 0); err == nil || !strings.Contains(err.Error(), "lengths.txt:2") {
		t.Errorf("error %v, want FILE:LINE", err)
	}
	os.WriteFile(path, []byte("# none measured yet\n\n"), 0o644)
	if _, err := parseLengths("file:"+path, 0); err == nil || !strings.HasSuffix(err.Error(), "lengths.txt holds no lengths") {
		t.Errorf("error %v, want FILE holds no lengths", err)
	}
}

// Whatever a user writes, --lengths either refuses it or gives a
// distribution with a finite mean and no negative lengths.
func FuzzParseLengths(f *testing.F) {
	for _, s := range []string{"mean=800,p90=3000", "median=300,sigma=0.7,max=1500", "p90=1,p99=1e300",
		"lognormal:300,0.7,1500", "fixed:0", "uniform:0,0", "mean=1e308,sigma=30", "sigma=0,median=5"} {
		f.Add(s, 0)
	}
	f.Fuzz(func(t *testing.T, spec string, limit int) {
		if strings.HasPrefix(spec, "file:") || limit < 0 {
			return
		}
		d, err := parseLengths(spec, limit)
		if err != nil {
			return
		}
		m := d.mean()
		if math.IsNaN(m) || math.IsInf(m, 0) || m < 0 {
			t.Fatalf("%q: mean %g", spec, m)
		}
		rng := rand.New(rand.NewPCG(1, 1))
		for range 100 {
			if v := d.draw(rng); v < 0 {
				t.Fatalf("%q: drew %d", spec, v)
			}
		}
	})
}
