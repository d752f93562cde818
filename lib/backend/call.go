package backend

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Call is a generation request that was sent (Backend.Start) and whose
// answer is still to come. Thousands of requests wait for their answers at
// once, and a goroutine blocked in Do keeps its whole call stack (4 KiB,
// the caller's frames and this package's) for the wait: a Call keeps its
// exchange and its connection, and OnAnswer has the poller wait for it,
// on no goroutine of its own (or, where there is no poller, a goroutine
// whose stack holds the wait alone, the smallest, 2 KiB).
type Call struct {
	c    *client
	url  string
	of   remade
	x    *exchange
	head *http.Request // see client.head
	// body is the request's body when http.Client sends it, in Result;
	// one the transport sent is not held while the answer is awaited.
	body []byte
	// sent is the request on the wire through this package's transport;
	// nil when http.Client sends it (https, a proxy), in Result.
	sent *sent
	err  error // the request failed before it was sent
	// fix is the kind's own reading of a failure (nil: none).
	fix func(*Error)
}

// remade is what a Call makes again when it needs it rather than hold it
// while the answer is awaited: the request's body (sent again on a new
// connection, or through a redirect) and the parser of the answer.
type remade interface {
	body() ([]byte, error)
	parser() answerParser
}

// start sends a generation request whose body is body (timeout 0:
// Options.Timeout); of makes it again, and the parser of its answer.
func (c *client) start(ctx context.Context, url string, body []byte, timeout time.Duration, of remade) *Call {
	call := &Call{c: c, url: url, of: of}
	if timeout <= 0 {
		timeout = c.opts.Timeout
	}
	x, head, err := c.prepare(ctx, http.MethodPost, url, true, c.opts.Stream, timeout)
	if err != nil {
		call.err = c.cleanAt(url, err)
		return call
	}
	call.x, call.head = x, head
	// The transport sends the head and body as they are: no request of
	// their own for the wait, nor a context registered under x.ctx.
	if t := c.plain(head); t != nil {
		if call.sent, err = t.send(x.ctx, head, body, x, of); err != nil {
			call.err = c.cleanAt(url, x.received(nil, err))
		}
	} else {
		call.body = body
	}
	return call
}

// failedCall is a request that could not be sent (a body that cannot be
// built): its Result is err.
func failedCall(err error) *Call { return &Call{err: err} }

// OnAnswer runs then on a goroutine of its own once the answer's first
// bytes are there, or the request failed or was cancelled; then calls
// Result, which reads the answer without waiting for it to begin. A
// request sent by this package's transport waits in the poller, on no
// goroutine; the exchange's cancellation closes its connection through
// the wait, which then runs then.
func (call *Call) OnAnswer(then func()) {
	s := call.sent
	if p := sharedPoller(); p != nil && s != nil && s.err == nil {
		if w := &s.poll; p.newWait(w, s.conn, s.fd, &s.ready, then) {
			call.x.watch(w)
			w.start()
			return
		}
	}
	go call.await(then)
}

func (call *Call) await(then func()) {
	if call.sent != nil {
		call.sent.wait()
	}
	then()
}

// Result reads and parses the answer, waiting for it when it has not
// begun. Every error it returns is a *Error with the API key scrubbed from
// its message.
func (call *Call) Result() (*Result, error) {
	res, err := call.result()
	var e *Error
	if err != nil && call.fix != nil && errors.As(err, &e) {
		call.fix(e)
	}
	return res, err
}

func (call *Call) result() (*Result, error) {
	if call.err != nil {
		return nil, call.err
	}
	c, x := call.c, call.x
	var resp *http.Response
	var err error
	if call.sent != nil {
		resp, err = call.sent.response()
		if err == nil && isRedirect(resp.StatusCode) {
			resp, err = call.redirected(resp)
		}
	} else {
		resp, err = c.roundTrip(x.request(call.head, call.body))
	}
	if err := x.received(resp, err); err != nil {
		return nil, c.cleanAt(call.url, err)
	}
	defer x.close()
	res, e := c.answer(x, call.of.parser())
	if e != nil {
		return nil, c.cleanAt(call.url, e)
	}
	res.Latency = time.Since(x.start)
	return res, nil
}

// redirected hands the redirect resp to the client (see
// client.redirected), with the request's body made again.
func (call *Call) redirected(resp *http.Response) (*http.Response, error) {
	body, err := call.of.body()
	if err != nil {
		resp.Body.Close()
		return nil, err
	}
	return call.c.redirected(call.sent.t, call.x.request(call.head, body), resp, nil)
}
