package tokstat

import (
	"slices"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/record"
)

func TestDistribution(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lengths []uint32
		want    distribution
	}{
		{"empty", nil, distribution{}},
		{"one", []uint32{7}, distribution{count: 1, mean: 7, p50: 7, p90: 7, p99: 7, max: 7}},
		{"two", []uint32{10, 0}, distribution{count: 2, mean: 5, p50: 0, p90: 10, p99: 10, max: 10}},
		{"1 to 100", seq(1, 100), distribution{count: 100, mean: 50.5, p50: 50, p90: 90, p99: 99, max: 100}},
		{"1 to 1000", seq(1, 1000), distribution{count: 1000, mean: 500.5, p50: 500, p90: 900, p99: 990, max: 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStats("g")
			s.lengths = tc.lengths
			if got := s.distribution(); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func seq(from, to uint32) []uint32 {
	var v []uint32
	for i := to; i >= from; i-- { // reversed: distribution must sort
		v = append(v, i)
	}
	return v
}

func TestAdd(t *testing.T) {
	s := newStats("g")
	s.add(record.Info{ID: "a", HasID: true, PromptTokens: 10, CompletionTokens: 5, FinishReason: "stop"}, false)
	s.add(record.Info{ID: "b", HasID: true, PromptTokens: 10, CompletionTokens: 9, FinishReason: "length"}, false)
	s.add(record.Info{ID: "a", HasID: true, PromptTokens: 10, CompletionTokens: 5, FinishReason: "stop"}, true)
	s.add(record.Info{ID: "c", HasID: true, PromptTokens: 10, HasError: true}, false)
	s.add(record.Info{PromptTokens: 1}, false)
	got := []int64{s.records, s.promptTokens, s.completionTokens, s.errors, s.truncated, s.duplicates, s.missingIDs}
	// records, prompt, completion, errors, truncated, duplicates, missing ids
	if want := []int64{5, 31, 19, 1, 1, 1, 1}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if r := s.finishReasons; r["stop"] != 2 || r["length"] != 1 || r[noFinishReason] != 2 {
		t.Errorf("finish reasons %v", r)
	}
	if !slices.Equal(s.lengths, []uint32{5, 9, 5, 0}) {
		t.Errorf("lengths %v: errors have no answer to measure", s.lengths)
	}
	if got := reasonsByCount(s); !slices.Equal(got, []string{"none", "stop", "length"}) {
		t.Errorf("reasons by count: %v", got)
	}
}

func TestBucketEdges(t *testing.T) {
	for _, tc := range []struct{ lo, hi uint32 }{{1, 1}, {1, 100000}, {2000, 4000}, {5, 6}, {1 << 30, 1<<31 + 5}} {
		edges := bucketEdges(tc.lo, tc.hi)
		if edges[0] > tc.lo || edges[len(edges)-1] > tc.hi {
			t.Errorf("%d..%d: edges %v do not cover the range", tc.lo, tc.hi, edges)
		}
		if !slices.IsSorted(edges) || len(slices.Compact(slices.Clone(edges))) != len(edges) {
			t.Errorf("%d..%d: edges %v not strictly increasing", tc.lo, tc.hi, edges)
		}
		if len(edges) > 2*histRows {
			t.Errorf("%d..%d: %d buckets", tc.lo, tc.hi, len(edges))
		}
	}
}

func TestBar(t *testing.T) {
	for _, tc := range []struct {
		width float64
		plain bool
		want  string
	}{
		{0, true, ""},
		{0.1, true, "#"},
		{3.4, true, "###"},
		{2.5, false, "██▌"},
		{0.01, false, "▏"},
	} {
		if got := bar(tc.width, tc.plain); got != tc.want {
			t.Errorf("bar(%v, %v) = %q, want %q", tc.width, tc.plain, got, tc.want)
		}
	}
}

func TestHistogramZeros(t *testing.T) {
	var b strings.Builder
	if err := writeHistogram(&b, []uint32{0, 0, 3}, true); err != nil {
		t.Fatal(err)
	}
	want := "\ncompletion tokens (3 answers)\n  0  2   66.7%  ########################################\n  3  1   33.3%  ####################\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
