package tests

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/synthpipe/synthpipe/lib/sim"
)

// heldSim is the simulator startLLMSim starts, run in the test process
// behind a gate on its answers: past the first few, every /generate request
// waits at the gate until the test releases it. A test that must signal a
// run while it has answers in flight, or start a second run while the first
// still holds its lock, then waits for events only: however slow the
// machine, no run can end before the test lets it.
type heldSim struct {
	URL  string
	mu   sync.Mutex
	free int           // requests still let through the closed gate
	open chan struct{} // closed by release
	once sync.Once
}

// startHeldSim starts a heldSim that answers the first free /generate
// requests at once and holds the others until release. The test's cleanup
// releases them and stops the server.
func startHeldSim(t *testing.T, free int) *heldSim {
	t.Helper()
	vocab, err := bundledVocabSize()
	if err != nil {
		t.Fatalf("the bundled tokenizer: %v", err)
	}
	cfg := sim.Default()
	cfg.Lengths = sim.LengthDist{Kind: sim.LengthUniform, Min: 1, Max: 24}
	cfg.VocabSize = vocab
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &heldSim{free: free, open: make(chan struct{})}
	answers := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/generate" && !h.letThrough() {
			select {
			case <-h.open:
			case <-r.Context().Done():
				return
			}
		}
		answers.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		h.release()
		hs.Close()
		srv.Close()
	})
	h.URL = hs.URL
	return h
}

// letThrough reports whether a request may pass the closed gate, counting
// it against free.
func (h *heldSim) letThrough() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.free > 0 {
		h.free--
		return true
	}
	return false
}

// release opens the gate: the requests held are answered, and those that
// come later are answered at once.
func (h *heldSim) release() { h.once.Do(func() { close(h.open) }) }
