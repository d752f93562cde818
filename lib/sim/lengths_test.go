package sim

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
)

func TestParseLengthDist(t *testing.T) {
	for _, spec := range []string{"fixed:200", "uniform:50,500", "lognormal:300,0.6", "lognormal:300,0.6,4096"} {
		d, err := ParseLengthDist(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if d.String() != spec {
			t.Errorf("%s round-trips as %s", spec, d.String())
		}
	}
	for _, bad := range []string{"", "fixed", "fixed:-1", "uniform:5", "uniform:9,3", "lognormal:0,1", "poisson:3", "file:"} {
		if _, err := ParseLengthDist(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	path := filepath.Join(t.TempDir(), "lengths.txt")
	os.WriteFile(path, []byte("# measured\n10\n\n20\n30\n"), 0o644)
	d, err := ParseLengthDist("file:" + path)
	if err != nil || !slices.Equal(d.Values, []int{10, 20, 30}) {
		t.Fatalf("file: %v %v", d, err)
	}
	os.WriteFile(path, []byte("10\nabc\n"), 0o644)
	if _, err := LoadLengthFile(path); err == nil {
		t.Fatal("bad length file loaded")
	}
}

func TestLengthSampling(t *testing.T) {
	logn := LengthDist{Kind: LengthLognormal, Median: 300, Sigma: 0.5, Max: 1000}
	uni := LengthDist{Kind: LengthUniform, Min: 10, Max: 20}
	emp := LengthDist{Kind: LengthEmpirical, Values: []int{7, 8}}
	var ls []int
	for i := range 4001 {
		r := newRNG(1, uint64(i))
		n := logn.sample(r)
		if n < 0 || n > 1000 {
			t.Fatalf("lognormal draw %d outside [0, 1000]", n)
		}
		ls = append(ls, n)
		if u := uni.sample(r); u < 10 || u > 20 {
			t.Fatalf("uniform draw %d", u)
		}
		if e := emp.sample(r); e != 7 && e != 8 {
			t.Fatalf("empirical draw %d", e)
		}
	}
	sort.Ints(ls)
	if med := ls[len(ls)/2]; med < 280 || med > 320 {
		t.Fatalf("lognormal median %d, want about 300", med)
	}
	if ls[len(ls)-1] != 1000 {
		t.Fatalf("lognormal tail never reached the cap: max %d", ls[len(ls)-1])
	}
	a, b := logn.sample(newRNG(5, 9)), logn.sample(newRNG(5, 9))
	if a != b {
		t.Fatal("sampling is not deterministic")
	}
}
