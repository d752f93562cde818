// Package simtest starts the simulated inference server of lib/sim for a
// test: on a free loopback port, closed when the test ends. The tests of
// lib/backend, lib/engine, lib/estimate, lib/generate and the end-to-end
// tests share it; lib/sim's own tests cannot (a package's tests may not
// import what imports it) and keep a helper of their own.
package simtest

import (
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/sim"
)

// Server is a lib/sim server listening on a loopback port.
type Server struct {
	*sim.Server
	URL  string // base URL, e.g. http://127.0.0.1:41234
	Addr string // host:port, to start a replacement on the same port
}

// Start starts a server with cfg on a free loopback port; the test's cleanup
// closes it.
func Start(t testing.TB, cfg sim.Config) *Server {
	t.Helper()
	s, err := StartAt(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// StartAt starts a server with cfg on addr, which the caller closes. A
// server that was closed cannot start again, so a restart is a new server
// on the old address.
func StartAt(cfg sim.Config, addr string) (*Server, error) {
	srv, err := sim.New(cfg)
	if err != nil {
		return nil, err
	}
	url, err := srv.Start(addr)
	if err != nil {
		srv.Close()
		return nil, err
	}
	return &Server{Server: srv, URL: url, Addr: strings.TrimPrefix(url, "http://")}, nil
}
