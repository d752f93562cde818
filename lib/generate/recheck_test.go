package generate

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/sim"
)

// A server that is down when generate starts (connections refused) and
// comes up later is sized from its KV cache as one up at the start is: its
// /server_info is read before any request is sent to it (SGLang never
// answers 429, so an adaptive limit would grow without bound).
func TestServerDownAtStartIsSizedWhenBack(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // connections are refused until the server below starts

	var stderr syncBuffer
	var stdout syncBuffer
	done := make(chan int)
	go func() {
		done <- mainWith(testOptions, []string{"generate", "--url", "http://" + addr, "--max-tokens", "32", "--retries", "30"},
			strings.NewReader(sglangRequests(40, 10)), &stdout, &stderr)
	}()
	waitFor(t, &stderr, "no capacity information")

	s, err := sim.New(func() sim.Config {
		c := sim.Default()
		c.MaxTotalTokens = 1000
		c.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: 20}
		c.StepTime = time.Millisecond
		return c
	}())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mu sync.Mutex
	var first string // of /server_info and /generate, the first asked
	inner := s.Handler()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if first == "" && (r.URL.Path == "/server_info" || r.URL.Path == "/generate") {
			first = r.URL.Path
		}
		mu.Unlock()
		inner.ServeHTTP(w, r)
	})}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the port was taken meanwhile: %v", err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	defer backend.SharedClient().CloseIdleConnections()

	var code int
	select {
	case code = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("generate did not end:\n%s", stderr.String())
	}
	if code != 0 || strings.Count(stdout.String(), "\n") != 40 {
		t.Fatalf("exit %d, %d lines:\n%s", code, strings.Count(stdout.String(), "\n"), stderr.String())
	}
	if first != "/server_info" {
		t.Errorf("the server's first request was %s, want /server_info before any request:\n%s", first, stderr.String())
	}
	if !strings.Contains(stderr.String(), "back: concurrency") || !strings.Contains(stderr.String(), "KV 1,000 tokens") {
		t.Errorf("the server back is not sized from its KV cache:\n%s", stderr.String())
	}
}

// waitFor waits until buf holds want: an event generate writes, with a
// generous bound in case it never does.
func waitFor(t *testing.T, buf *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(buf.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within a minute:\n%s", want, buf.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
