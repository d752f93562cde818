package simtest

import (
	"net/http"
	"testing"

	"github.com/synthpipe/synthpipe/lib/sim"
)

func TestStartServesAndRestartsOnItsAddress(t *testing.T) {
	s := Start(t, sim.Default())
	resp, err := http.Get(s.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || "http://"+s.Addr != s.URL {
		t.Fatalf("GET /health: %d; URL %s, Addr %s", resp.StatusCode, s.URL, s.Addr)
	}
	s.Close()
	again, err := StartAt(sim.Default(), s.Addr)
	if err != nil {
		t.Fatalf("restart on %s: %v", s.Addr, err)
	}
	defer again.Close()
	if again.URL != s.URL {
		t.Fatalf("restarted at %s, want %s", again.URL, s.URL)
	}
}
