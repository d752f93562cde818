package jsonl

import "testing"

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
