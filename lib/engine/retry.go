package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
)

// backoffDelay is how long to wait before attempt+1: exponential from base
// with full jitter in its upper half (so that requests failing together do
// not retry together), at least the server's Retry-After, at most longest
// (--max-retry-wait).
func backoffDelay(attempt int, base, retryAfter, longest time.Duration) time.Duration {
	d := min(base<<min(attempt-1, 16), maxBackoff)
	d = d/2 + rand.N(d/2+1)
	return min(max(d, retryAfter), longest)
}

// classify turns what Do returned into a *backend.Error. Errors the backend
// did not classify are taken as connection failures when our own attempt
// timed out or the run was cancelled, and as protocol failures otherwise.
func classify(err error, attemptCtx context.Context) *backend.Error {
	var be *backend.Error
	if errors.As(err, &be) {
		return be
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(attemptCtx.Err(), context.DeadlineExceeded) {
		return &backend.Error{Kind: backend.KindTimeout, Message: "no answer within --timeout", Retryable: true}
	}
	if errors.Is(err, context.Canceled) {
		return &backend.Error{Kind: backend.KindConnect, Message: "cancelled", Retryable: false}
	}
	return &backend.Error{Kind: backend.KindConnect, Message: err.Error(), Retryable: true}
}

// poolOutcome says what a failed attempt tells the pool about its server.
// Only a failure to connect counts against the server's health: a
// connection that broke mid-answer reached a server that is up.
func poolOutcome(e *backend.Error) outcomeKind {
	var op *net.OpError
	switch {
	case e.Kind == backend.KindConnect && errors.As(e, &op) && op.Op == "dial":
		return attemptUnreachable
	case e.Kind == backend.KindRate || e.Status == 429:
		return attemptRateLimited
	}
	return attemptFailed
}

// shortCause is what an attempt's failure says, without the transport's
// wrapping: "connection refused" rather than "dial tcp 10.0.0.1:30000:
// connect: connection refused", since the URL is named beside it.
func shortCause(e *backend.Error) string {
	if e.Kind != backend.KindConnect {
		return e.Message
	}
	if i := strings.LastIndex(e.Message, ": "); i >= 0 {
		return e.Message[i+2:]
	}
	return e.Message
}

// maxBackoff caps the exponential retry delay.
const maxBackoff = 30 * time.Second
