package jsonl

import (
	"strconv"
	"testing"
)

func TestAppendIntArray(t *testing.T) {
	for _, tc := range []struct {
		name string
		dst  string
		ids  []int
		want string
	}{
		{"empty", "", nil, "[]"},
		{"one", "", []int{7}, "[7]"},
		{"several", "", []int{151644, 0, -1}, "[151644,0,-1]"},
		{"appends", `{"ids":`, []int{1, 2}, `{"ids":[1,2]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(AppendIntArray([]byte(tc.dst), tc.ids)); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestAppendIntArrayDigits checks every length of id, the edges between
// them and ids past the fast path against strconv.
func TestAppendIntArrayDigits(t *testing.T) {
	ids := []int{0, -1, -100, 1<<31 - 1, 1 << 40, -(1 << 40)}
	for p := 1; p <= 1e12; p *= 10 {
		ids = append(ids, p-1, p, p+1, 3*p+7, -p)
	}
	for i := range 100_000 {
		ids = append(ids, i*7919%1_000_000)
	}
	want := []byte{'['}
	for i, id := range ids {
		if i > 0 {
			want = append(want, ',')
		}
		want = strconv.AppendInt(want, int64(id), 10)
	}
	want = append(want, ']')
	if got := AppendIntArray([]byte("x"), ids); string(got) != "x"+string(want) {
		t.Fatalf("AppendIntArray differs from strconv.AppendInt")
	}
}
