package backend

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rawServer accepts connections on loopback and hands each, with a reader
// of its requests, to serve; it counts the connections it accepted.
type rawServer struct {
	url   string
	conns atomic.Int32
}

func newRawServer(t testing.TB, serve func(conn net.Conn, requests *bufio.Reader)) *rawServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{url: "http://" + l.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range open {
			c.Close() // ends the handlers waiting on pooled connections
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, conn)
			mu.Unlock()
			s.conns.Add(1)
			wg.Go(func() {
				defer conn.Close()
				serve(conn, bufio.NewReader(conn))
			})
		}
	})
	return s
}

// readRequest reads one request and its body; false when the client left.
func readRequest(requests *bufio.Reader) (*http.Request, bool) {
	req, err := http.ReadRequest(requests)
	if err != nil {
		return nil, false
	}
	io.Copy(io.Discard, req.Body)
	return req, true
}

func plainClient() *http.Client { return &http.Client{Transport: newSharedTransport()} }

// get sends a GET and returns the body read to its end.
func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctxTimeout(t), http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

func TestPlainHTTPFramingAndKeepAlive(t *testing.T) {
	answers := []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nwor\r\n2;ext=1\r\nld\r\n0\r\nTrailer: x\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 204 No Content\r\n\r\n",
	}
	want := []string{"hello", "world", "ok", ""}
	s := newRawServer(t, func(conn net.Conn, requests *bufio.Reader) {
		for i := 0; ; i++ {
			if _, ok := readRequest(requests); !ok {
				return
			}
			io.WriteString(conn, answers[i%len(answers)])
		}
	})
	c := plainClient()
	for round := range 2 {
		for i := range answers {
			if got := get(t, c, s.url); got != want[i] {
				t.Fatalf("round %d answer %d: got %q, want %q", round, i, got, want[i])
			}
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("%d requests opened %d connections, want 1", 2*len(answers), n)
	}
}

func TestPlainHTTPRequestOnTheWire(t *testing.T) {
	got := make(chan *http.Request, 1)
	bodies := make(chan string, 1)
	s := newRawServer(t, func(conn net.Conn, requests *bufio.Reader) {
		req, err := http.ReadRequest(requests)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		got <- req
		bodies <- string(body)
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	})
	req, _ := http.NewRequestWithContext(ctxTimeout(t), http.MethodPost, s.url+"/v1/chat/completions?x=1", strings.NewReader(`{"a":1}`))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := plainClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := <-got
	if r.Method != "POST" || r.URL.RequestURI() != "/v1/chat/completions?x=1" || r.Host != strings.TrimPrefix(s.url, "http://") ||
		r.Header.Get("Authorization") != "Bearer k" || r.ContentLength != 7 {
		t.Fatalf("server received %s %s host %q headers %v length %d", r.Method, r.URL, r.Host, r.Header, r.ContentLength)
	}
	if b := <-bodies; b != `{"a":1}` {
		t.Fatalf("body %q", b)
	}
}

func TestPlainHTTPRefusesHeaderInjection(t *testing.T) {
	s := newRawServer(t, func(conn net.Conn, requests *bufio.Reader) { readRequest(requests) })
	_, err := NewOpenAI(Options{APIKey: "key\r\nX-Evil: 1"}).Do(ctxTimeout(t), s.url, chatReq())
	if err == nil {
		t.Fatal("a key with a line break was sent")
	}
	if s.conns.Load() != 0 {
		t.Fatal("the request reached the server")
	}
}

// TestPlainHTTPRedialsDeadPooledConnection: a server that closes a
// keep-alive connection while it sits in the pool must not fail the next
// request; a reused connection that breaks after the answer began must.
func TestPlainHTTPRedialsDeadPooledConnection(t *testing.T) {
	var served atomic.Int32
	s := newRawServer(t, func(conn net.Conn, requests *bufio.Reader) {
		if _, ok := readRequest(requests); !ok {
			return
		}
		served.Add(1)
		// Keep-alive promised, then the connection is closed idle.
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	c := plainClient()
	for i := range 3 {
		if got := get(t, c, s.url); got != "ok" {
			t.Fatalf("request %d: %q", i, got)
		}
		time.Sleep(20 * time.Millisecond) // the server's close arrives
	}
	if n, m := s.conns.Load(), served.Load(); n != 3 || m != 3 {
		t.Fatalf("%d connections served %d requests, want 3 and 3", n, m)
	}

	t.Run("broken after the answer began", func(t *testing.T) {
		first := true
		var mu sync.Mutex
		s := newRawServer(t, func(conn net.Conn, requests *bufio.Reader) {
			for {
				if _, ok := readRequest(requests); !ok {
					return
				}
				mu.Lock()
				wasFirst := first
				first = false
				mu.Unlock()
				if !wasFirst {
					io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\npart")
					return
				}
				io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
		})
		c := plainClient()
		get(t, c, s.url)
		req, _ := http.NewRequestWithContext(ctxTimeout(t), http.MethodGet, s.url, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if _, err := io.ReadAll(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("got %v, want an unexpected EOF", err)
		}
		if n := s.conns.Load(); n != 1 {
			t.Fatalf("the broken answer was retried on a new connection (%d connections)", n)
		}
	})
}

func TestPlainHTTPDoesNotPoolUnfinishedOrClosingConnections(t *testing.T) {
	s := newRawServer(t, func(conn net.Conn, requests *bufio.Reader) {
		req, ok := readRequest(requests)
		if !ok {
			return
		}
		switch req.URL.Path {
		case "/close":
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
		case "/long":
			io.WriteString(conn, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 100000\r\n\r\n"+strings.Repeat("x", 100000))
		}
		io.Copy(io.Discard, conn) // until the client closes
	})
	c := plainClient()
	get(t, c, s.url+"/close")
	req, _ := http.NewRequestWithContext(ctxTimeout(t), http.MethodGet, s.url+"/long", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadFull(resp.Body, make([]byte, 10)) // not to the end
	resp.Body.Close()
	get(t, c, s.url+"/close")
	if n := s.conns.Load(); n != 3 {
		t.Fatalf("3 requests used %d connections, want 3", n)
	}
}

// TestPlainHTTPCancelClosesConnection: the server must see the client
// leave (SGLang aborts the generation then), both while waiting for the
// head and while a stream is being read.
func TestPlainHTTPCancelClosesConnection(t *testing.T) {
	left := make(chan struct{}, 2)
	s := newRawServer(t, func(conn net.Conn, requests *bufio.Reader) {
		req, ok := readRequest(requests)
		if !ok {
			return
		}
		if req.URL.Path == "/stream" {
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n: x\n\n\r\n")
		}
		io.Copy(io.Discard, conn)
		left <- struct{}{}
	})
	c := plainClient()
	for _, path := range []string{"/head", "/stream"} {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
		time.AfterFunc(30*time.Millisecond, cancel)
		resp, err := c.Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if err == nil {
			t.Fatalf("%s: canceled request succeeded", path)
		}
		select {
		case <-left:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the server did not see the connection close", path)
		}
	}
}

func TestPlainHTTPCloseIdleConnections(t *testing.T) {
	closed := make(chan struct{}, 1)
	s := newRawServer(t, func(conn net.Conn, requests *bufio.Reader) {
		for {
			if _, ok := readRequest(requests); !ok {
				closed <- struct{}{}
				return
			}
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	c := plainClient()
	get(t, c, s.url)
	c.CloseIdleConnections()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the pooled connection stayed open")
	}
}
