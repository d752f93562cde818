package backend

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// transport sends plain-http requests (SGLang, a local vLLM) over its own
// pool of keep-alive connections and everything else (https, proxies) over
// net/http. net/http runs two goroutines per HTTP/1.1 connection and keeps
// a read and a write buffer on each for the connection's whole life; with
// ten thousand requests in flight that is most of the client's memory.
// Here a request is written and its answer read on the caller's goroutine,
// and a connection holds a read buffer only while an answer is being read.
type transport struct {
	fallback *http.Transport
	dialer   net.Dialer
	// idleTimeout retires pooled connections nobody used for that long:
	// servers close them about then anyway.
	idleTimeout    time.Duration
	maxIdlePerHost int

	mu   sync.Mutex
	idle map[string][]pooledConn // by host:port, the most recently used last
}

type pooledConn struct {
	conn  net.Conn
	fd    int // conn's descriptor for the poller (see connFD); -1: not known
	since time.Time
}

func newSharedTransport() *transport {
	return &transport{
		fallback:       newTransport(),
		dialer:         net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		idleTimeout:    90 * time.Second,
		maxIdlePerHost: 4096,
		idle:           map[string][]pooledConn{},
	}
}

// readBufferSize is the buffer an answer is read through; it goes back to
// readBuffers when the answer was read to its end. Lines longer than it
// (headers, chunk sizes) are assembled by the parsers above it.
const readBufferSize = 1 << 10

var readBuffers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferSize) }}

// maxPooledWriteBuffer bounds the request buffers kept for reuse, so that
// one huge prompt does not stay in memory for the rest of the run.
const maxPooledWriteBuffer = 64 << 10

// writeBuffers start empty and grow to the requests written through them:
// thousands of requests sent at once each take a buffer, and a large
// initial size would be paid thousands of times.
var writeBuffers = sync.Pool{New: func() any { return new([]byte) }}

// plain reports whether req goes over this transport's own connections
// rather than net/http's: plain http, not through a proxy, with a body of
// known length (chunked framing is never needed by this package).
func (t *transport) plain(req *http.Request) bool {
	if req.URL.Scheme != "http" || req.Method == http.MethodConnect {
		return false
	}
	if proxy, err := t.fallback.Proxy(req); err != nil || proxy != nil {
		return false
	}
	return req.Body == nil || req.Body == http.NoBody || req.ContentLength > 0
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.plain(req) {
		return t.fallback.RoundTrip(req)
	}
	s, err := t.send(req.Context(), req, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	return s.response()
}

// sent is a plain-http request on its connection whose answer is still to
// be read. While the answer is awaited it holds the connection and nothing
// else: the request's bytes went back to writeBuffers once written (a retry
// on a new connection renders the request again), and a read buffer is
// taken only when the answer's first bytes are there.
type sent struct {
	t   *transport
	ctx context.Context
	req *http.Request
	// body is the request's body when the caller gave it as bytes (req,
	// a head shared by many requests, has none), until it is written; of
	// makes it again for a retry. of nil: the body is req.Body.
	body []byte
	of   remade
	// x, when not nil, closes the connection when the request is
	// cancelled (exchange.watch); otherwise ctx's end does.
	x      *exchange
	conn   net.Conn
	fd     int       // conn's descriptor (see pooledConn)
	reused bool      // conn came from the pool
	stop   unwatcher // stops the closing of conn on cancellation
	err    error     // writing failed: no byte of an answer can come
	ready  bool      // wait saw the answer's first bytes (or the end)
	// poll is the wait for the answer in the poller (Call.OnAnswer), part
	// of the request rather than an allocation of its own.
	poll pollWait
}

// send writes req (with body as its body when of, which makes it again,
// is not nil) on a pooled or new connection; response reads its answer.
// Only a request that could not be rendered or whose connection could not
// be made fails here.
func (t *transport) send(ctx context.Context, req *http.Request, body []byte, x *exchange, of remade) (*sent, error) {
	s := &sent{t: t, ctx: ctx, req: req, body: body, x: x, of: of}
	wire, err := s.render(false)
	if err != nil {
		return nil, err
	}
	conn, fd, reused, err := t.get(ctx, canonicalAddr(req.URL.Host), x)
	if err != nil {
		releaseWriteBuffer(wire)
		return nil, err
	}
	s.conn, s.fd, s.reused = conn, fd, reused
	s.stop, s.err = s.write(conn, wire)
	return s, nil
}

// render renders the request into a buffer from writeBuffers; again: a
// second time, for a retry, which reads req.Body anew.
func (s *sent) render(again bool) (*[]byte, error) {
	if s.of != nil {
		body := s.body
		s.body = nil // not held while the answer is awaited
		if again {
			var err error
			if body, err = s.of.body(); err != nil {
				return nil, err
			}
		}
		return requestBytes(s.req, int64(len(body)), nil, body)
	}
	body := s.req.Body
	if body != nil && s.req.GetBody != nil && again {
		var err error
		if body, err = s.req.GetBody(); err != nil {
			return nil, err
		}
	}
	wire, err := requestBytes(s.req, s.req.ContentLength, body, nil)
	if body != nil {
		body.Close()
	}
	return wire, err
}

// wait returns once the answer has bytes to read, the connection ended or
// failed, or the request was cancelled (which closes the connection).
func (s *sent) wait() {
	if s.err == nil {
		s.err = waitReadable(s.conn)
		s.ready = s.err == nil
	}
}

// response reads the head of the answer. A pooled connection that the
// server had already closed fails before any answer: the request never
// reached the server, so it goes out again, once, on a new connection.
func (s *sent) response() (*http.Response, error) {
	resp, beforeAnswer, err := (*http.Response)(nil), true, s.err
	if err != nil {
		s.stop.unwatch()
		s.conn.Close()
	} else {
		resp, beforeAnswer, err = s.t.readHead(s.req, s.conn, s.fd, s.stop, s.ready)
	}
	if err == nil || !beforeAnswer || !s.reused || s.ctx.Err() != nil || (s.of == nil && s.req.Body != nil && s.req.GetBody == nil) {
		return resp, err
	}
	wire, err := s.render(true)
	if err != nil {
		return nil, err
	}
	conn, err := s.t.dial(s.ctx, canonicalAddr(s.req.URL.Host), s.x)
	if err != nil {
		releaseWriteBuffer(wire)
		return nil, err
	}
	stop, err := s.write(conn, wire)
	if err != nil {
		return nil, err
	}
	resp, _, err = s.t.readHead(s.req, conn, -1, stop, false)
	return resp, err
}

// write writes wire on conn, and has the request's cancellation close
// conn from then on (stop undoes that). A connection that failed is
// closed.
func (s *sent) write(conn net.Conn, wire *[]byte) (stop unwatcher, err error) {
	if s.x != nil {
		s.x.watch(conn)
		stop = s.x
	} else {
		stop = unwatchFunc(context.AfterFunc(s.ctx, func() { conn.Close() }))
	}
	_, err = conn.Write(*wire)
	releaseWriteBuffer(wire)
	if err != nil {
		stop.unwatch()
		conn.Close()
	}
	return stop, err
}

// unwatcher stops the closing of a connection when its request is
// cancelled: an exchange's watch, or a context's AfterFunc; false when
// the cancellation came first. An interface rather than a func: the
// method value x.unwatch would be one more allocation per request.
type unwatcher interface{ unwatch() bool }

// unwatchFunc is the stop function of context.AfterFunc.
type unwatchFunc func() bool

func (f unwatchFunc) unwatch() bool { return f() }

// readHead reads the head of the answer to req from conn, whose
// descriptor is fd (see pooledConn; ready: its first bytes are known to
// be there). The connection is closed when the context ends before the
// answer has been read. beforeAnswer reports a failure before any byte
// of the answer arrived.
func (t *transport) readHead(req *http.Request, conn net.Conn, fd int, stop unwatcher, ready bool) (resp *http.Response, beforeAnswer bool, err error) {
	var br *bufio.Reader
	defer func() {
		if err != nil {
			stop.unwatch()
			conn.Close()
			if br != nil {
				br.Reset(nil)
				readBuffers.Put(br)
			}
		}
	}()
	if !ready {
		if err = waitReadable(conn); err != nil {
			return nil, true, err
		}
	}
	br = readBuffers.Get().(*bufio.Reader)
	br.Reset(conn)
	if _, err = br.Peek(1); err != nil {
		return nil, true, err
	}
	a := new(answer)
	for {
		var frame bodyFrame
		resp, frame, err = readResponse(br, req, &a.resp, a.values[:])
		if err != nil {
			return nil, false, err
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue // an informational answer precedes the real one
		}
		a.body = connBody{frame: frame, t: t, addr: canonicalAddr(req.URL.Host), conn: conn, fd: fd, br: br, stop: stop, reusable: !resp.Close}
		resp.Body = &a.body
		return resp, false, nil
	}
}

// answer is what readHead allocates for an answer, together rather than
// each on its own: its head (unused when http.ReadResponse read it), its
// header's values (answers commonly have a handful of header lines) and
// the reader of its body.
type answer struct {
	resp   http.Response
	values [6]string
	body   connBody
}

// connBody is an answer's body. Read to its end, it returns the connection
// to the pool and the read buffer to readBuffers; closed before that, it
// closes the connection, which tells the server the client left.
type connBody struct {
	frame    bodyFrame
	t        *transport
	addr     string
	conn     net.Conn
	fd       int // conn's descriptor (see pooledConn)
	br       *bufio.Reader
	stop     unwatcher // stops the closing of conn on cancellation
	reusable bool
	done     bool
}

func (b *connBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.frame.Read(p)
	if errors.Is(err, io.EOF) {
		b.finish()
		return n, io.EOF
	}
	return n, err
}

// finish releases the connection after the whole answer was read.
func (b *connBody) finish() {
	b.done = true
	// The context must not close a connection another request now uses;
	// if it already fired, the connection is closed or about to be.
	if b.stop.unwatch() && b.reusable && b.br.Buffered() == 0 {
		b.t.put(b.addr, b.conn, b.fd)
	} else {
		b.conn.Close()
	}
	b.br.Reset(nil)
	readBuffers.Put(b.br)
	b.br = nil
}

func (b *connBody) Close() error {
	if !b.done {
		b.done = true
		b.stop.unwatch()
		b.conn.Close()
	}
	return nil
}

// get returns a pooled connection to addr, or a new one, with its
// descriptor (see pooledConn).
func (t *transport) get(ctx context.Context, addr string, x *exchange) (conn net.Conn, fd int, reused bool, err error) {
	t.mu.Lock()
	for conns := t.idle[addr]; len(conns) > 0; conns = t.idle[addr] {
		last := conns[len(conns)-1]
		t.idle[addr] = conns[:len(conns)-1]
		if time.Since(last.since) < t.idleTimeout {
			t.mu.Unlock()
			return last.conn, last.fd, true, nil
		}
		last.conn.Close()
	}
	t.mu.Unlock()
	if conn, err = t.dial(ctx, addr, x); err != nil {
		return nil, -1, false, err
	}
	// Asked once for the connection's life, rather than by each wait
	// for an answer on it (asking allocates).
	return conn, connFD(conn), false, nil
}

// dial connects to addr on a goroutine of its own, which ends with the
// dial: dialing goes much deeper than waiting for an answer, and the
// stack of the request's goroutine, grown to it, would stay that large
// for the whole wait (a stack shrinks only when it is mostly unused).
// The dial of an exchange x ends when x is cancelled (exchange.watch),
// not by a context registered under x.ctx, which would keep the map and
// the channel that registration gives it for the rest of the request.
func (t *transport) dial(ctx context.Context, addr string, x *exchange) (net.Conn, error) {
	if x != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		x.watch(closerFunc(cancel))
		defer x.unwatch()
	}
	type dialed struct {
		conn net.Conn
		err  error
	}
	done := make(chan dialed, 1)
	go func() {
		conn, err := t.dialer.DialContext(ctx, "tcp", addr)
		done <- dialed{conn, err}
	}()
	d := <-done
	return d.conn, d.err
}

// closerFunc closes by calling itself.
type closerFunc func()

func (f closerFunc) Close() error {
	f()
	return nil
}

func (t *transport) put(addr string, conn net.Conn, fd int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	conns := t.idle[addr]
	// get takes the most recent connections, so the oldest would sit at
	// the front for ever after a burst; retire them here.
	for len(conns) > 0 && time.Since(conns[0].since) >= t.idleTimeout {
		conns[0].conn.Close()
		conns = conns[1:]
	}
	if len(conns) >= t.maxIdlePerHost {
		conn.Close()
	} else {
		conns = append(conns, pooledConn{conn, fd, time.Now()})
	}
	t.idle[addr] = conns
}

// CloseIdleConnections closes the pooled connections of both transports
// (http.Client.CloseIdleConnections calls it).
func (t *transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[string][]pooledConn{}
	t.mu.Unlock()
	for _, conns := range idle {
		for _, c := range conns {
			c.conn.Close()
		}
	}
	t.fallback.CloseIdleConnections()
}

// canonicalAddr adds the default port to a host without one.
func canonicalAddr(host string) string {
	if _, port, err := net.SplitHostPort(host); err == nil && port != "" {
		return host
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), "80")
}

// requestBytes renders a request, head and body (raw, or contentLength
// bytes read from body), into one buffer from writeBuffers, so that it goes out in
// a single write.
func requestBytes(req *http.Request, contentLength int64, body io.Reader, raw []byte) (*[]byte, error) {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !validHeaderValue(host) {
		return nil, fmt.Errorf("invalid host %q", host)
	}
	wire := writeBuffers.Get().(*[]byte)
	b := append((*wire)[:0], req.Method...)
	b = append(b, ' ')
	b = append(b, req.URL.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	if req.Header.Get("User-Agent") == "" {
		// What net/http sends, so that servers see the same client
		// whichever transport carried the request.
		b = append(b, "User-Agent: Go-http-client/1.1\r\n"...)
	}
	for name, values := range req.Header {
		for _, v := range values {
			if !validHeaderValue(name) || !validHeaderValue(v) {
				*wire = b
				releaseWriteBuffer(wire)
				return nil, fmt.Errorf("invalid value for header %q", name)
			}
			b = append(b, name...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	if body != nil || raw != nil || req.Method == http.MethodPost || req.Method == http.MethodPut {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, contentLength, 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	b = append(b, raw...)
	if body != nil && contentLength > 0 {
		head := len(b)
		b = slices.Grow(b, int(contentLength))[:head+int(contentLength)]
		if _, err := io.ReadFull(body, b[head:]); err != nil {
			*wire = b
			releaseWriteBuffer(wire)
			return nil, fmt.Errorf("reading the request body: %w", err)
		}
	}
	*wire = b
	return wire, nil
}

func releaseWriteBuffer(wire *[]byte) {
	if cap(*wire) <= maxPooledWriteBuffer {
		writeBuffers.Put(wire)
	}
}

// validHeaderValue refuses what would break the request's framing: a
// header value (an API key pasted with its newline) must not start a new
// header line.
func validHeaderValue(v string) bool {
	return !strings.ContainsAny(v, "\r\n\x00")
}
