package engine

import "testing"

func TestContextFitLimit(t *testing.T) {
	cases := []struct {
		name              string
		fit               contextFit
		prompt, max, want int
		wantOK            bool
	}{
		{"unknown context: as asked", contextFit{}, 100000, 64, 64, true},
		{"fits", contextFit{length: 100, minRoom: 1}, 10, 64, 64, true},
		{"capped at the room", contextFit{length: 100, minRoom: 1}, 60, 64, 40, true},
		{"one token left", contextFit{length: 100, minRoom: 1}, 99, 64, 1, true},
		{"as long as the context", contextFit{length: 100, minRoom: 1}, 100, 64, 0, false},
		{"longer than the context", contextFit{length: 100, minRoom: 1}, 150, 64, 0, false},
		{"less than --min-room", contextFit{length: 100, minRoom: 8}, 95, 64, 0, false},
		{"exactly --min-room", contextFit{length: 100, minRoom: 8}, 92, 64, 8, true},
		{"the provider's completion cap", contextFit{length: 1000, maxCompletion: 16, minRoom: 1}, 10, 64, 16, true},
		{"completion cap without a context", contextFit{maxCompletion: 16}, 10, 64, 16, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.fit.limit(tc.prompt, tc.max)
			if ok != tc.wantOK || ok && got != tc.want {
				t.Fatalf("limit(%d, %d) = %d, %v; want %d, %v", tc.prompt, tc.max, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestContextFitFromServers(t *testing.T) {
	servers := []*server{{contextLength: 4096}, {}, {contextLength: 2048, maxCompletion: 512}}
	f := newContextFit(&Config{MinRoom: 1}, servers)
	if f.length != 2048 || f.maxCompletion != 512 {
		t.Fatalf("from the servers: %+v, want the smallest context 2048 and completion cap 512", f)
	}
	if f := newContextFit(&Config{ContextLength: 8192, MinRoom: 1}, servers); f.length != 8192 {
		t.Fatalf("--context-length 8192: %+v", f)
	}
}
