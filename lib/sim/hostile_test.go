package sim

import (
	"net/http"
	"strings"
	"testing"
)

// TestDeepRequestBodyRefused: a client's twelve megabytes of "[" once
// overflowed the stack in gjson's validation and crashed llm-sim; now it is
// a 400 like any other body that is not JSON.
func TestDeepRequestBodyRefused(t *testing.T) {
	_, url := startSim(t, Default())
	for _, path := range []string{"/generate", "/v1/chat/completions"} {
		resp, err := http.Post(url+path, "application/json", strings.NewReader(strings.Repeat("[", 12<<20)))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", path, resp.StatusCode)
		}
	}
}
