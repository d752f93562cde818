package idset

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		hash func([]byte) uint64
	}{
		{"default hash", defaultHash},
		{"every id collides", func([]byte) uint64 { return 42 }},
		{"same tag, few buckets", func(b []byte) uint64 { return uint64(len(b)) & 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newWithHash(0, tc.hash)
			ids := []string{"", "a", "b", "ab", "ba", strings.Repeat("x", 300), strings.Repeat("x", 301)}
			for _, id := range ids {
				if s.Contains([]byte(id)) {
					t.Fatalf("empty set contains %q", id)
				}
				if !s.AddString(id) {
					t.Fatalf("Add(%q) said not new", id)
				}
			}
			for _, id := range ids {
				if !s.ContainsString(id) {
					t.Errorf("missing %q", id)
				}
				if s.AddString(id) {
					t.Errorf("Add(%q) twice said new", id)
				}
			}
			for _, id := range []string{"c", "aa", strings.Repeat("x", 299), "\x00"} {
				if s.ContainsString(id) {
					t.Errorf("has %q, never added", id)
				}
			}
			if s.Len() != len(ids) {
				t.Errorf("Len = %d, want %d", s.Len(), len(ids))
			}
		})
	}
}

func TestGrowth(t *testing.T) {
	s := New(0)
	const n = 200_000
	for i := 0; i < n; i++ {
		if !s.AddString(fmt.Sprintf("id-%d", i)) {
			t.Fatalf("id-%d not new", i)
		}
	}
	if s.Len() != n {
		t.Fatalf("Len = %d", s.Len())
	}
	if len(s.slots) < n*4/3 {
		t.Errorf("table of %d slots for %d ids: over 3/4 full", len(s.slots), n)
	}
	for i := 0; i < n; i++ {
		if !s.ContainsString(fmt.Sprintf("id-%d", i)) {
			t.Fatalf("lost id-%d after growth", i)
		}
		if s.ContainsString(fmt.Sprintf("id-%d!", i)) {
			t.Fatalf("false positive for id-%d!", i)
		}
	}
}

func TestLongIDs(t *testing.T) {
	s := newWithHash(0, func([]byte) uint64 { return 7 })
	big := strings.Repeat("y", chunkSize+10) // longer than a chunk
	s.AddString("before")
	s.AddString(big)
	s.AddString("after")
	s.AddString(big[:chunkSize-1]) // fits a chunk with its length only when alone
	for _, id := range []string{"before", big, "after", big[:chunkSize-1]} {
		if !s.ContainsString(id) {
			t.Errorf("missing id of %d bytes", len(id))
		}
	}
	if s.ContainsString(big[:chunkSize+9]) {
		t.Error("a prefix of a long id matched")
	}
	for i := 0; i < 2000; i++ { // force growth across the odd chunks
		s.AddString(fmt.Sprint(i))
	}
	if !s.ContainsString(big) || !s.ContainsString("after") || !s.ContainsString("1999") {
		t.Error("lost ids after growth")
	}
}

// BenchmarkAdd measures loading done ids of 30 bytes: the resume path.
func BenchmarkAdd(b *testing.B) {
	ids := make([][]byte, 1<<20)
	for i := range ids {
		ids[i] = []byte(fmt.Sprintf("dataset-%010d-0123456789ab", i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	var s *Set
	for b.Loop() {
		s = New(0)
		for _, id := range ids {
			s.Add(id)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/id")
	b.ReportMetric(float64(s.Bytes())/float64(len(ids)), "B/id")
}

// BenchmarkContains measures lookups, half of them misses.
func BenchmarkContains(b *testing.B) {
	s := New(0)
	ids := make([][]byte, 1<<20)
	for i := range ids {
		ids[i] = []byte(fmt.Sprintf("dataset-%010d-0123456789ab", i))
		if i%2 == 0 {
			s.Add(ids[i])
		}
	}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		s.Contains(ids[i&(len(ids)-1)])
		i++
	}
}

// FuzzSet checks the set against a map, with a hash so poor that most ids
// share a slot and a tag: answers must stay exact.
func FuzzSet(f *testing.F) {
	f.Add([]byte("a\x00b\x00a\x00\x00ab\x00b"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := newWithHash(0, func(b []byte) uint64 {
			if len(b) == 0 {
				return 0
			}
			return uint64(b[0]&3) << 62 // 4 tags, all in slot 0
		})
		want := map[string]bool{}
		for _, id := range bytes.Split(data, []byte{0}) {
			if s.Contains(id) != want[string(id)] {
				t.Fatalf("Contains(%q) = %v before Add", id, !want[string(id)])
			}
			if s.Add(id) == want[string(id)] {
				t.Fatalf("Add(%q) disagrees with the map", id)
			}
			want[string(id)] = true
		}
		if s.Len() != len(want) {
			t.Fatalf("Len = %d, want %d", s.Len(), len(want))
		}
	})
}

// TestIDOverhead: the memory an id costs beside its bytes, over the table's
// doublings, ranges from just before a doubling (the table fullest) to just
// after it (emptiest); IDOverhead, which the help states, must lie in the
// upper half of that range: "about", and not below what a set mostly costs.
func TestIDOverhead(t *testing.T) {
	s := New(0)
	idBytes, lo, hi := 0, 1e9, 0.0
	for i := 0; i < 1<<18; i++ {
		id := fmt.Sprintf("id-%07d", i)
		s.AddString(id)
		idBytes += len(id)
		if s.n < 1<<12 {
			continue
		}
		arena := 0
		for _, c := range s.chunks {
			arena += len(c)
		}
		per := float64(len(s.slots)*8+arena-idBytes) / float64(s.n)
		lo, hi = min(lo, per), max(hi, per)
	}
	if mid := (lo + hi) / 2; IDOverhead < mid || IDOverhead > hi {
		t.Errorf("IDOverhead is %d; an id costs %.1f to %.1f bytes beside its own: want %.1f to %.1f", IDOverhead, lo, hi, mid, hi)
	}
}
