package backend

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// Options configure a backend. The zero value works: the shared client, no
// timeouts, whole (not streamed) answers, no key.
type Options struct {
	// Client sends the requests; nil means SharedClient(). Tests may pass
	// their own.
	Client *http.Client
	// Timeout bounds a whole request, from sending to the last byte of the
	// answer; 0 means no limit.
	Timeout time.Duration
	// IdleTimeout bounds, when streaming, the silence between two reads of
	// the answer, counted from when the request is sent. SGLang sends
	// nothing while a request waits in its queue, so this must exceed the
	// longest queueing delay; OpenRouter's keep-alive comments count as
	// activity. 0 means no limit.
	IdleTimeout time.Duration
	// Stream asks for server-sent events instead of one JSON answer. The
	// result is the same; streaming adds the idle timeout, FirstToken and
	// early detection of dead connections.
	Stream bool
	// APIKey is sent as the kind's Auth says (Bearer for every kind
	// today). It is never logged and is removed from any server text kept
	// in an Error. Without it, the user and password of a base URL
	// (http://user:pass@host) are sent as Basic authentication; they are
	// never sent in the URL itself nor kept in an Error. Neither follows a
	// redirect off the base URL's origin (see checkRedirect).
	APIKey string
	// Referer and Title are OpenRouter's optional app attribution headers
	// (HTTP-Referer, X-Title), sent by the kinds whose Auth is
	// BearerAttributed.
	Referer string
	Title   string
	// Model is the model name sent to OpenAI-compatible servers.
	Model string
	// SGLangStreamMode says how SGLang /generate streams carry their text
	// and output_ids; the default detects it per stream.
	SGLangStreamMode StreamMode
	// MaxResponseBytes bounds one answer (or one stream event); 0 means
	// DefaultMaxResponseBytes. It protects memory from a runaway body.
	MaxResponseBytes int64
	// MaxInFlightBytes bounds the memory of all the answers this backend
	// is receiving at once (see memBudget); 0 means
	// DefaultMaxInFlightBytes.
	MaxInFlightBytes int64
}

// DefaultMaxResponseBytes bounds an answer when Options.MaxResponseBytes is
// 0: far above a 128k-token answer with logprobs, far below trouble.
const DefaultMaxResponseBytes = 256 << 20

// maxErrorBodyBytes is how much of an error answer is read for its
// message.
const maxErrorBodyBytes = 64 << 10

// sharedClient serves every backend that was given no client, so that all
// of them share one connection pool. It is built on first use: a tool that
// links this package but sends no request (tokstat, budget-cut) never
// builds its transports.
var sharedClient = sync.OnceValue(func() *http.Client {
	return &http.Client{Transport: newSharedTransport(), CheckRedirect: checkRedirect}
})

// SharedClient returns the HTTP client backends use by default: pools of
// keep-alive HTTP/1.1 connections sized for thousands of concurrent
// requests per host, with TLS verification always on. Plain-http requests
// go through this package's own lean connection pool (see transport).
func SharedClient() *http.Client { return sharedClient() }

// newTransport builds the net/http transport behind SharedClient, which
// carries https and proxied requests. HTTP/1.1 gives a
// request its own connection, so a slow stream never holds up others the
// way one HTTP/2 connection's flow control can; keeping up to 4096 idle
// connections per host lets thousands of in-flight requests reuse
// connections instead of redialing after each answer.
func newTransport() *http.Transport {
	t := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          0, // no global cap: the per-host cap governs
		MaxIdleConnsPerHost:   4096,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
		// Small per-connection buffers: with 10,000 connections every
		// kilobyte here is ten megabytes. Reads and writes larger than a
		// buffer bypass it, so large bodies lose nothing.
		ReadBufferSize:  2 << 10,
		WriteBufferSize: 1 << 10,
	}
	t.Protocols = new(http.Protocols)
	t.Protocols.SetHTTP1(true)
	return t
}

// client is what every backend shares: options, the HTTP client, the
// kind's authentication and status classification, and the plumbing of one
// exchange.
type client struct {
	opts Options
	http *http.Client
	kind *Kind
	mem  *memBudget // the answers in flight, together
	// heads holds the request heads by headKey (see head).
	heads *sync.Map
}

func newClient(opts Options, kind *Kind) client {
	c := client{opts: opts, http: sharedClient(), kind: kind, heads: new(sync.Map)}
	if opts.Client != nil {
		// A client of the caller's own follows the same redirect policy.
		hc := *opts.Client
		hc.CheckRedirect = checkRedirect
		c.http = &hc
	}
	if c.opts.MaxInFlightBytes <= 0 {
		c.opts.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if c.opts.MaxResponseBytes <= 0 {
		c.opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	c.opts.MaxResponseBytes = min(c.opts.MaxResponseBytes, c.opts.MaxInFlightBytes)
	c.mem = &memBudget{limit: c.opts.MaxInFlightBytes}
	return c
}

// exchange is one HTTP request and its answer, with the deadlines that
// apply to it.
type exchange struct {
	parent context.Context
	// ctx is the request's own context, which its timers and close cancel
	// with their causes, and the caller's context's end through
	// stopParent. It is not a child of parent: a child would be given a
	// map of its own children and a channel by the first context
	// registered under it, the closing of the connection (see watch).
	ctx        context.Context
	cancelCtx  context.CancelCauseFunc
	stopParent func() bool
	deadline   *time.Timer // the whole-request timeout; nil without one
	idle       *time.Timer // nil without an idle timeout
	// idleAfter is the idle timeout, which each read of the answer
	// pushes back.
	idleAfter time.Duration
	resp      *http.Response
	start     time.Time
	mem       *memBudget // shared by the backend's exchanges; nil: no bound
	held      int64      // what this answer holds of mem

	// classify says what a status other than 200 means: the kind's.
	classify func(status int, header http.Header, body []byte) *Error

	mu      sync.Mutex
	watched io.Closer // closed when the exchange is cancelled (see watch)
	aborted bool
}

// send starts a request and reads the head of its answer. body may be nil
// (GET). stream selects the event-stream Accept header and arms the idle
// timeout.
func (c *client) send(ctx context.Context, method, url string, body []byte, stream bool) (*exchange, error) {
	x, head, err := c.prepare(ctx, method, url, body != nil, stream, c.opts.Timeout)
	if err != nil {
		return nil, err
	}
	resp, err := c.roundTrip(x.request(head, body))
	return x, x.received(resp, err)
}

// prepare makes the exchange of a request, armed with its timers (timeout
// 0: none), and returns the head of the request (see head). Nothing is
// sent yet.
func (c *client) prepare(ctx context.Context, method, url string, body, stream bool, timeout time.Duration) (*exchange, *http.Request, error) {
	x := &exchange{parent: ctx, start: time.Now(), classify: c.kind.Classify, mem: c.mem}
	x.ctx, x.cancelCtx = context.WithCancelCause(context.WithoutCancel(ctx))
	x.stopParent = context.AfterFunc(ctx, func() { x.cancel(context.Cause(ctx)) })
	if timeout > 0 {
		// A timer that cancels x.ctx, not a context of its own: one
		// context fewer for every request in flight.
		x.deadline = time.AfterFunc(timeout, func() { x.cancel(errRequestTimeout) })
	}
	head, err := c.head(method, url, body, stream)
	if err != nil {
		x.close()
		// A base URL that does not parse fails every request alike.
		return nil, nil, &Error{Kind: KindRequest, Message: err.Error(), Fatal: true, cause: err}
	}
	if stream && c.opts.IdleTimeout > 0 {
		x.idle = time.AfterFunc(c.opts.IdleTimeout, func() { x.cancel(errIdleTimeout) })
		x.idleAfter = c.opts.IdleTimeout
	}
	return x, head, nil
}

// request is the request of head and body (nil: none) for http.Client and
// RoundTrippers: a copy of the head, which shares its URL and headers
// (neither is parsed nor built again for each request), with the
// exchange's context.
func (x *exchange) request(head *http.Request, body []byte) *http.Request {
	hreq := head.WithContext(x.ctx)
	if body != nil {
		// As http.NewRequest sets them for a bytes.Reader.
		hreq.ContentLength, hreq.GetBody = int64(len(body)), noBody
		if len(body) > 0 {
			hreq.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
		hreq.Body, _ = hreq.GetBody()
	}
	return hreq
}

// cancel ends the exchange early with cause: its context, and the
// connection it watches.
func (x *exchange) cancel(cause error) {
	x.cancelCtx(cause)
	x.mu.Lock()
	watched := x.watched
	x.watched, x.aborted = nil, true
	x.mu.Unlock()
	if watched != nil {
		watched.Close()
	}
}

// watch has c (a connection, a dial's cancellation) closed when the
// exchange is cancelled, from now until unwatch (at once when it was
// already): how the transport's requests are cancelled and timed out,
// without a context registered per request.
func (x *exchange) watch(c io.Closer) {
	x.mu.Lock()
	aborted := x.aborted
	if !aborted {
		x.watched = c
	}
	x.mu.Unlock()
	if aborted {
		c.Close()
	}
}

// unwatch stops watch; false when the exchange was cancelled first (what
// it watched is closed, or about to be).
func (x *exchange) unwatch() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.watched = nil
	return !x.aborted
}

// received takes the head of the answer, or the error that came instead
// (which closes the exchange).
func (x *exchange) received(resp *http.Response, err error) error {
	if err != nil {
		x.close()
		return transportError(x.parent, x.ctx, err)
	}
	x.resp = resp
	if x.idle != nil { // without an idle timeout there is nothing to push back
		x.resp.Body = &activityReader{r: x.resp.Body, x: x}
	}
	return nil
}

func noBody() (io.ReadCloser, error) { return http.NoBody, nil }

// headKey names one request head: the same method, URL, body or not,
// and stream or not give the same head.
type headKey struct {
	method, url  string
	body, stream bool
}

// head returns the request, without its context and body, that every
// request of its key copies: its URL parsed once, without the user and
// password, which are sent as Basic authentication unless the kind's
// Auth puts the API key in their place, and its headers. Nothing that
// sends a request changes its URL or headers (http.Client copies them to
// follow a redirect).
func (c *client) head(method, url string, body, stream bool) (*http.Request, error) {
	key := headKey{method, url, body, stream}
	if h, ok := c.heads.Load(key); ok {
		return h.(*http.Request), nil
	}
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return nil, err
	}
	h := req.Header
	if body {
		h.Set("Content-Type", "application/json")
	}
	if stream {
		h.Set("Accept", "text/event-stream")
		// A compressed stream would hold a 32 KiB inflate window per
		// request for its whole life, and compression delays events.
		h.Set("Accept-Encoding", "identity")
	} else {
		h.Set("Accept", "application/json")
	}
	if user := req.URL.User; user != nil {
		req.URL.User = nil
		pass, _ := user.Password()
		req.SetBasicAuth(user.Username(), pass)
	}
	c.kind.Auth(h, &c.opts)
	c.heads.Store(key, req)
	return req, nil
}

// roundTrip sends req and returns the head of its answer. A plain-http
// request through this package's transport goes to it directly: the
// frames of http.Client.Do would sit on the stack of every request waiting
// for its answer, and it copies the request's headers, for the sake of
// redirects, which an answer rarely is.
func (c *client) roundTrip(req *http.Request) (*http.Response, error) {
	t := c.plain(req)
	if t == nil {
		return c.http.Do(req)
	}
	resp, err := t.RoundTrip(req)
	return c.redirected(t, req, resp, err)
}

// plain returns this package's transport when it carries req itself (see
// transport.plain), nil when http.Client must send it.
func (c *client) plain(req *http.Request) *transport {
	t, ok := c.http.Transport.(*transport)
	if !ok || c.http.Jar != nil || c.http.Timeout != 0 || !t.plain(req) {
		return nil
	}
	return t
}

// redirected hands a redirect that t answered req with to the client,
// which follows it, or not, by checkRedirect, as if it had sent req
// itself.
func (c *client) redirected(t *transport, req *http.Request, resp *http.Response, err error) (*http.Response, error) {
	if err != nil || !isRedirect(resp.StatusCode) {
		return resp, err
	}
	hc := *c.http
	hc.Transport = &answered{resp: resp, next: t}
	return hc.Do(req)
}

// isRedirect reports the statuses http.Client follows.
func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// answered gives http.Client the answer its first request already got,
// and sends the next ones (redirects it follows) through next.
type answered struct {
	resp *http.Response
	next http.RoundTripper
}

func (a *answered) RoundTrip(req *http.Request) (*http.Response, error) {
	if resp := a.resp; resp != nil {
		a.resp = nil
		return resp, nil
	}
	return a.next.RoundTrip(req)
}

// close releases the connection and the timers. Closing the body before
// reading it to the end makes the server see the client leave, which
// aborts the generation on SGLang and OpenRouter.
func (x *exchange) close() {
	if x.resp != nil {
		x.resp.Body.Close()
	}
	if x.idle != nil {
		x.idle.Stop()
	}
	if x.deadline != nil {
		x.deadline.Stop()
	}
	x.stopParent()
	x.cancel(context.Canceled)
	x.release()
}

// fail classifies an error met while reading the answer.
func (x *exchange) fail(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return transportError(x.parent, x.ctx, err)
}

// statusError reads the start of a non-200 answer and classifies it.
func (x *exchange) statusError() *Error {
	body, err := io.ReadAll(io.LimitReader(x.resp.Body, maxErrorBodyBytes))
	if err != nil && len(body) == 0 && x.ctx.Err() != nil {
		return x.fail(err)
	}
	return x.classify(x.resp.StatusCode, x.resp.Header, body)
}

// readAll reads a whole answer, bounded by limit.
func (x *exchange) readAll(limit int64) ([]byte, error) {
	// A length given is read into a buffer one byte longer, where the
	// read that finds the end has room and the buffer need not grow;
	// without one the buffer starts at bytes.MinRead.
	want := int64(bytes.MinRead)
	if size := x.resp.ContentLength; size >= 0 && size <= limit {
		want = size + 1
	}
	// The buffer grows here rather than in bytes.Buffer, so that each
	// larger one is charged to the memory bound before it is allocated,
	// and never past limit+1 (doubling would take 512 MiB to find that an
	// answer passes 256 MiB).
	buf, err := x.grow(nil, want, limit+1)
	if err != nil {
		return nil, err
	}
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return nil, protocolError("answer larger than %d bytes", limit)
			}
			if buf, err = x.grow(buf, 2*int64(cap(buf)), limit+1); err != nil {
				return nil, err
			}
		}
		n, err := x.resp.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, x.fail(err)
		}
	}
	if int64(len(buf)) > limit {
		return nil, protocolError("answer larger than %d bytes", limit)
	}
	return buf, nil
}

// drain reads what is left of a finished stream (the end of the chunked
// encoding after [DONE]) so that its connection goes back to the pool
// instead of being closed. A server that keeps the stream open after
// [DONE] gets a second; then the connection is closed.
func (x *exchange) drain() {
	t := time.AfterFunc(time.Second, func() { x.cancel(errDrainTimeout) })
	defer t.Stop()
	io.CopyN(io.Discard, x.resp.Body, maxErrorBodyBytes)
}

// isEventStream reports whether the answer is server-sent events. A server
// that was asked to stream may still answer with one JSON body (an error,
// or an endpoint that ignores "stream"); callers then parse it whole.
func (x *exchange) isEventStream() bool {
	mt, _, err := mime.ParseMediaType(x.resp.Header.Get("Content-Type"))
	return err == nil && strings.EqualFold(mt, "text/event-stream")
}

// activityReader pushes the idle deadline back whenever bytes arrive.
type activityReader struct {
	r io.ReadCloser
	x *exchange
}

func (a *activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.x.idle.Reset(a.x.idleAfter)
	}
	return n, err
}

func (a *activityReader) Close() error { return a.r.Close() }

// joinURL appends an endpoint path to a base URL given by the user, with
// or without a trailing slash.
func joinURL(base, path string) string {
	return strings.TrimRight(base, "/") + path
}

// answerParser turns one API's answers into a Result. A parser serves one
// request: it accumulates a stream's events.
type answerParser interface {
	// whole parses a complete JSON answer (not streamed, or a server that
	// answered a stream request with one JSON body).
	whole(doc gjson.Result) (*Result, *Error)
	// event takes one event of a stream and reports whether it carried
	// generated output (for FirstToken).
	event(doc gjson.Result) (output bool, err *Error)
	// end builds the result once the stream said [DONE].
	end() (*Result, *Error)
}

// chargeReporter is implemented by parsers of streams whose usage may
// arrive before a failure: charged is the cost it reported, or nil.
type chargeReporter interface {
	charged() *float64
}

// snapshotSkipper is implemented by parsers of streams whose events can
// be superseded by later ones (SGLang's cumulative snapshots): superseded
// reports, from a cheap look at an event, that parsing it can be skipped.
type snapshotSkipper interface {
	superseded(data []byte) bool
}

func (c *client) answer(x *exchange, p answerParser) (*Result, *Error) {
	if x.resp.StatusCode < 200 || x.resp.StatusCode > 299 {
		return nil, x.statusError()
	}
	if c.opts.Stream && x.isEventStream() {
		var first time.Duration
		skip := func([]byte) bool { return false }
		if s, ok := p.(snapshotSkipper); ok {
			skip = s.superseded
		}
		parserHeld := func() int64 { return 0 }
		if h, ok := p.(heldBytes); ok {
			parserHeld = h.heldBytes
		}
		e := x.readEvents(c.opts.MaxResponseBytes, skip, parserHeld, func(doc gjson.Result) *Error {
			output, e := p.event(doc)
			if output && first == 0 {
				first = max(time.Since(x.start), time.Nanosecond)
			}
			return e
		})
		if e == nil {
			var res *Result
			if res, e = p.end(); e == nil {
				res.FirstToken = first
				x.drain()
				return res, nil
			}
		}
		if c, ok := p.(chargeReporter); ok && e.Cost == nil {
			// The usage came in an earlier event than the failure.
			e.Cost = c.charged()
		}
		return nil, e
	}
	body, err := x.readAll(c.opts.MaxResponseBytes)
	if err != nil {
		return nil, x.fail(err)
	}
	doc, e := parseAnswer(body)
	if e != nil {
		return nil, e
	}
	return p.whole(doc)
}

// readEvents feeds each JSON event of a stream to handle until "[DONE]".
// A stream that ends before [DONE] failed: the connection broke or the
// server gave up, and the answer may be incomplete.
func (x *exchange) readEvents(maxLine int64, skip func([]byte) bool, parserHeld func() int64, handle func(gjson.Result) *Error) *Error {
	events := newSSEReader(x.resp.Body, int(min(maxLine, int64(^uint(0)>>1))))
	// What the stream holds: the reader's line buffers and what the
	// parser accumulated, charged whenever either grows.
	charge := func() *Error { return x.hold(events.held() + parserHeld()) }
	events.grew = func() error {
		if e := charge(); e != nil {
			return e
		}
		return nil
	}
	for {
		data, err := events.Next()
		switch {
		case errors.Is(err, io.EOF):
			return &Error{Kind: KindConnect, Message: "stream ended without [DONE]", Retryable: true}
		case errors.Is(err, errLineTooLong):
			return protocolError("%v", err)
		case err != nil:
			return x.fail(err)
		}
		data = bytes.TrimSpace(data)
		if len(data) == 0 {
			continue
		}
		if string(data) == "[DONE]" {
			return nil
		}
		if skip(data) {
			continue
		}
		doc, e := parseAnswer(data)
		if e != nil {
			return e
		}
		if e := handle(doc); e != nil {
			return e
		}
		if e := charge(); e != nil {
			return e
		}
	}
}

// parseAnswer checks that an answer or event is one JSON object and not an
// error report. gjson does not validate, and a proxy's garbage must be
// refused, not misread.
func parseAnswer(data []byte) (gjson.Result, *Error) {
	data = trimBOM(data)
	if !jsonl.Valid(data) {
		return gjson.Result{}, protocolError("answer is not JSON: %s", snippet(data))
	}
	doc := gjson.ParseBytes(data)
	if !doc.IsObject() {
		return gjson.Result{}, protocolError("answer is not a JSON object: %s", snippet(data))
	}
	if e := doc.Get("error"); (e.Exists() && e.Type != gjson.Null) || doc.Get("object").String() == "error" {
		return gjson.Result{}, streamError(doc)
	}
	return doc, nil
}

// clean scrubs the API key from an error's message.
func (c *client) clean(err error) error { return c.cleanAt("", err) }

// cleanAt scrubs the API key and the credentials of rawURL (its password,
// and the Basic authentication header made of it, which a server may echo)
// from an error's message.
func (c *client) cleanAt(rawURL string, err error) error {
	secrets := []string{c.opts.APIKey}
	if u, perr := url.Parse(rawURL); perr == nil && u.User != nil {
		if pass, ok := u.User.Password(); ok && pass != "" {
			secrets = append(secrets, pass, base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass)))
		}
	}
	var e *Error
	if errors.As(err, &e) {
		e.Message = cleanMessage(e.Message, secrets...)
		return e
	}
	return errors.New(cleanMessage(err.Error(), secrets...))
}

// getJSON fetches a JSON document (server info, model lists).
func (c *client) getJSON(ctx context.Context, url string) (gjson.Result, error) {
	x, err := c.send(ctx, http.MethodGet, url, nil, false)
	if err != nil {
		return gjson.Result{}, c.cleanAt(url, err)
	}
	defer x.close()
	if x.resp.StatusCode != http.StatusOK {
		return gjson.Result{}, c.cleanAt(url, x.statusError())
	}
	body, err := x.readAll(c.opts.MaxResponseBytes)
	if err != nil {
		return gjson.Result{}, c.cleanAt(url, err)
	}
	doc, e := parseAnswer(body)
	if e != nil {
		return gjson.Result{}, c.cleanAt(url, e)
	}
	return doc, nil
}
