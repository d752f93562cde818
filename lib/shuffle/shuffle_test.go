package shuffle

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// order runs ids through a Sorter of the given memory limit.
func order(t *testing.T, ids []string, limit int64) ([]string, int64) {
	t.Helper()
	s := New(limit, t.TempDir())
	for _, id := range ids {
		if err := s.Add(Key("7", id), []byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	if err := s.Each(func(b []byte) error { out = append(out, string(b)); return nil }); err != nil {
		t.Fatal(err)
	}
	return out, s.Spilled
}

// TestOrderIsTheKeysWhateverTheInputOrderAndMemory: the same ids come out in
// the same order from any input order, held in memory or spilled to many
// files, and that order is the keys'.
func TestOrderIsTheKeysWhateverTheInputOrderAndMemory(t *testing.T) {
	var ids []string
	for i := range 5000 {
		ids = append(ids, fmt.Sprintf("topic%d-%d", i/1000, i))
	}
	want := slices.Clone(ids)
	slices.SortFunc(want, func(a, b string) int {
		ka, kb := Key("7", a), Key("7", b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	inMemory, spilled := order(t, ids, 1<<30)
	if spilled != 0 || !slices.Equal(inMemory, want) {
		t.Fatalf("in memory: spilled %d; order differs from the keys'", spilled)
	}
	shuffled := slices.Clone(ids)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	onDisk, spilled := order(t, shuffled, 4096) // about 50 records a run: 100 runs
	if spilled == 0 || !slices.Equal(onDisk, want) {
		t.Fatalf("spilled %d bytes; order differs from the keys'", spilled)
	}
	// The first fifth holds every topic, about equally.
	per := map[byte]int{}
	for _, id := range want[:1000] {
		per[id[5]]++
	}
	for topic, n := range per {
		if n < 150 || n > 250 {
			t.Errorf("topic %c: %d of the first 1000, want about 200", topic, n)
		}
	}
}

// TestRepeatedIDsKeepInputOrder: equal keys come out in input order.
func TestRepeatedIDsKeepInputOrder(t *testing.T) {
	s := New(100, t.TempDir())
	for _, l := range []string{"a1", "b", "a2", "a3"} {
		if err := s.Add(Key("", l[:1]), []byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	var as []string
	s.Each(func(b []byte) error {
		if b[0] == 'a' {
			as = append(as, string(b))
		}
		return nil
	})
	if !slices.Equal(as, []string{"a1", "a2", "a3"}) {
		t.Fatalf("got %v", as)
	}
}
