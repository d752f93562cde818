package capacity

import "testing"

func TestSize(t *testing.T) {
	for _, tc := range []struct {
		name         string
		kv           KV
		prompt, held float64
		want         int
	}{
		{"KV bound", KV{Tokens: 22000}, 150, 50, 122},              // 110 fit x 1.1 rounds up past 121 in floating point
		{"capped", KV{Tokens: 22000, MaxRunning: 45}, 150, 50, 50}, // 45 +10%, rounded up
		{"huge requests", KV{Tokens: 1000}, 5000, 5000, 1},
		{"nothing held", KV{Tokens: 100}, 0, 0, 111},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.kv.Size(tc.prompt, tc.held).N; got != tc.want {
				t.Fatalf("Size(%g, %g) = %d, want %d", tc.prompt, tc.held, got, tc.want)
			}
		})
	}
}

func TestPriorAndHeld(t *testing.T) {
	if mean, held := Prior(3000); mean != 1500 || held != 1000 {
		t.Fatalf("Prior(3000) = %g, %g; want 1500, 1000 (uniform on [0, 3000])", mean, held)
	}
	// Answers of 100 and 300: E[L^2]/(2E[L]) = 50000/400 = 125.
	if got := Held(400, 100*100+300*300); got != 125 {
		t.Fatalf("Held = %g, want 125", got)
	}
	if got := Held(0, 0); got != 0 {
		t.Fatalf("Held with no answers = %g, want 0", got)
	}
}
