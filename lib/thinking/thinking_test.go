package thinking

import (
	"fmt"
	"math"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec  string
		share float64
		bad   bool
	}{
		{"", 0, false}, {"on", 1, false}, {"off", 0, false}, {"mix:0.3", 0.3, false}, {"mix:30%", 0.3, false},
		{"effort:low=1,high=3", 1, false}, {"effort:low", 1, false},
		{"mix:1.5", 0, true}, {"mix:x", 0, true}, {"mix:-1", 0, true}, {"on:1", 0, true}, {"maybe", 0, true},
		{"effort:low=-1", 0, true}, {"effort:low=0", 0, true}, {"effort:=1", 0, true},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			m, err := Parse(tc.spec, "0")
			if (err != nil) != tc.bad {
				t.Fatalf("Parse(%q) error %v, want error %v", tc.spec, err, tc.bad)
			}
			if err == nil && math.Abs(m.Share()-tc.share) > 1e-12 {
				t.Fatalf("Parse(%q) share %v, want %v", tc.spec, m.Share(), tc.share)
			}
		})
	}
}

// The share of records chosen to think is the one asked for, within what a
// fair coin allows, and the choice is the same on every call; another seed
// makes another split.
func TestChooseShare(t *testing.T) {
	m, _ := Parse("mix:0.3", "0")
	other, _ := Parse("mix:0.3", "1")
	const n = 20000
	on, differ := 0, 0
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("rec-%d", i)
		c := m.Choose(id)
		if c != m.Choose(id) {
			t.Fatalf("%s: two calls chose differently", id)
		}
		if c.Thinking {
			on++
		}
		if c != other.Choose(id) {
			differ++
		}
	}
	got := float64(on) / n
	if sd := math.Sqrt(0.3 * 0.7 / n); math.Abs(got-0.3) > 5*sd {
		t.Fatalf("share with thinking %.4f, want 0.3 within %.4f", got, 5*sd)
	}
	if differ == 0 {
		t.Fatal("another seed made the same choice for every record")
	}
}

func TestChooseEffortWeights(t *testing.T) {
	m, _ := Parse("effort:low=1,medium=2,high=1", "0")
	const n = 20000
	counts := map[string]int{}
	for i := 0; i < n; i++ {
		c := m.Choose(fmt.Sprintf("%d", i))
		if !c.Thinking {
			t.Fatal("an effort level without thinking")
		}
		counts[c.Effort]++
	}
	for name, want := range map[string]float64{"low": 0.25, "medium": 0.5, "high": 0.25} {
		got := float64(counts[name]) / n
		if math.Abs(got-want) > 5*math.Sqrt(want*(1-want)/n) {
			t.Errorf("%s: share %.4f, want %.2f", name, got, want)
		}
	}
}

func TestFromRecord(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Choice
		ok   bool
		bad  bool
	}{
		{`{"id":"a"}`, Choice{}, false, false},
		{`{"thinking":true}`, Choice{Thinking: true}, true, false},
		{`{"thinking":false}`, Choice{}, true, false},
		{`{"thinking":true,"reasoning_effort":"high"}`, Choice{Thinking: true, Effort: "high"}, true, false},
		{`{"reasoning_effort":"low"}`, Choice{Thinking: true, Effort: "low"}, true, false},
		{`{"thinking":"yes"}`, Choice{}, false, true},
		{`{"thinking":null}`, Choice{}, false, true},
	} {
		c, ok, err := FromRecord([]byte(tc.line))
		if (err != nil) != tc.bad || ok != tc.ok || c != tc.want {
			t.Errorf("%s: got %+v %v %v", tc.line, c, ok, err)
		}
	}
}

func TestAppendFieldsRoundTrip(t *testing.T) {
	for _, c := range []Choice{{Thinking: true}, {}, {Thinking: true, Effort: "medium"}} {
		line := append(c.AppendFields([]byte(`{"id":"x"`)), '}')
		got, ok, err := FromRecord(line)
		if err != nil || !ok || got != c {
			t.Errorf("%s read back as %+v %v %v", line, got, ok, err)
		}
	}
}
