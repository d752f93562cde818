package deduperesume

import (
	"fmt"
	"testing"
)

func TestFNV1a64(t *testing.T) {
	// Published FNV-1a test vectors: shard membership must never drift.
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"", 0xcbf29ce484222325},
		{"a", 0xaf63dc4c8601ec8c},
		{"foobar", 0x85944171f73967e8},
	} {
		if got := fnv1a64(tc.in); got != tc.want {
			t.Errorf("fnv1a64(%q) = %#x, want %#x", tc.in, got, tc.want)
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    shard
		wantErr bool
	}{
		{"", shard{}, false},
		{"0/1", shard{0, 1}, false},
		{"3/4", shard{3, 4}, false},
		{"3/2", shard{}, true},
		{"2/2", shard{}, true},
		{"0/0", shard{}, true},
		{"1", shard{}, true},
		{"-1/4", shard{}, true},
		{"a/b", shard{}, true},
		{"1/4/8", shard{}, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseShard(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseShard(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestShardsPartition(t *testing.T) {
	const n = 5
	counts := make([]int, n)
	for i := 0; i < 10000; i++ {
		id := fmt.Sprintf("prompt-%d", i)
		owners := 0
		for k := uint64(0); k < n; k++ {
			if (shard{k, n}).keeps(id) {
				owners++
				counts[k]++
			}
		}
		if owners != 1 {
			t.Fatalf("%s is in %d shards of %d", id, owners, n)
		}
	}
	for k, c := range counts {
		if c < 1800 || c > 2200 { // 2000 expected: the split is even
			t.Errorf("shard %d/%d holds %d of 10000 ids", k, n, c)
		}
	}
	if !(shard{}).keeps("anything") {
		t.Error("no --shard must keep everything")
	}
}

func TestSummary(t *testing.T) {
	for _, tc := range []struct {
		name  string
		t     tally
		shard shard
		want  string
	}{
		{"plain", tally{toDo: 3, done: 2, repeated: 1, torn: 1}, shard{},
			"3 to do, 2 already done, 1 repeated in stream, 1 torn line ignored"},
		{"shard and invalid lines", tally{toDo: 1, otherShards: 7, invalid: 2}, shard{1, 4},
			"1 to do, 0 already done, 0 repeated in stream, 7 skipped as other shards' (shard 1/4), 0 torn lines ignored, 2 invalid lines skipped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.t.summary(tc.shard); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
