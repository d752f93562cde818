package backend

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/tidwall/gjson"
)

// How failures are classified, the same for both backends:
//
//	401, 403                       KindAuth, Fatal (the key is bad or refused)
//	403 with moderation metadata   KindRequest (one flagged input; the run goes on)
//	402                            KindCredits, Fatal
//	429                            KindRate, retryable, RetryAfter from Retry-After(-Ms)
//	408 409 425 5xx                KindHTTP, retryable (503 with RetryAfter)
//	400, 413 saying the prompt     KindContextOverflow (SGLang's, vLLM's, OpenAI's
//	  exceeds the context length     and OpenRouter's wordings)
//	other 4xx                      KindRequest (unknown model, bad parameter, ...)
//	200 with garbage or HTML       KindProtocol, retryable (a proxy's transient page)
//	error body or chunk after 200  by its error.code as that status (402 fatal,
//	                               400 a failed record, 429 and 5xx retried);
//	                               without a code KindStream, retryable (also
//	                               finish_reason "error"); its usage.cost kept
//	stream without [DONE]          KindConnect, retryable
//	chat stream to [DONE] without  an answer with no finish reason, as a whole
//	  a finish reason              completion with a null one is
//	SGLang abort                   KindAbort, retryable unless its status_code is 4xx
//	refused, reset, EOF mid-body   KindConnect, retryable
//	certificate not verified       KindConnect, Fatal
//	Timeout or IdleTimeout         KindTimeout, retryable
//	caller's context canceled      KindCanceled

// KindCanceled marks a request abandoned because the caller's context ended
// (shutdown, a closed stdout). It is neither retryable nor a failure of the
// record: errors.Is(err, context.Canceled) holds for it.
const KindCanceled = "canceled"

// Unwrap returns the underlying cause (a transport error, or the caller's
// context error for KindCanceled), or nil.
func (e *Error) Unwrap() error { return e.cause }

// maxMessageBytes bounds the server text kept in an Error: enough for any
// real diagnostic, small enough for an errors file of millions of lines.
const maxMessageBytes = 600

// statusError classifies an HTTP answer with a status other than 200 from
// its status, headers and (the start of) its body. Both backends use it, so
// a status means the same whatever the server. The message is the server's
// alone: the status is in Error.Status, for the caller to print.
func statusError(status int, header http.Header, body []byte) *Error {
	msg := serverMessage(body, header.Get("Content-Type"))
	if msg == "" {
		msg = fmt.Sprintf("HTTP %d %s with an empty body", status, http.StatusText(status))
	}
	e := &Error{Status: status, Message: msg}
	classifyStatus(e, status, header, body)
	return e
}

// classifyStatus sets the kind, Retryable, Fatal and RetryAfter of e from
// an HTTP status, or the error.code of an error reported with status 200.
func classifyStatus(e *Error, status int, header http.Header, body []byte) {
	switch {
	case status == http.StatusUnauthorized:
		e.Kind, e.Fatal = KindAuth, true
	case status == http.StatusForbidden && isModerationFlag(body):
		// OpenRouter refuses one flagged input with 403; the key is fine
		// and the other records can go on.
		e.Kind = KindRequest
	case status == http.StatusForbidden:
		e.Kind, e.Fatal = KindAuth, true
	case status == http.StatusPaymentRequired:
		e.Kind, e.Fatal = KindCredits, true
	case status == http.StatusTooManyRequests:
		e.Kind, e.Retryable = KindRate, true
		e.RetryAfter = retryAfter(header, time.Now())
	case retryableStatus(status):
		e.Kind, e.Retryable = KindHTTP, true
		if status == http.StatusServiceUnavailable {
			e.RetryAfter = retryAfter(header, time.Now())
		}
	case (status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge) && isContextOverflow(e.Message):
		e.Kind = KindContextOverflow
	case status >= 400 && status < 500:
		e.Kind = KindRequest
	default:
		e.Kind = KindHTTP
	}
}

// contextOverflowPhrases are how servers say that a prompt and its answer
// do not fit the context: SGLang's two ValueErrors ("The input (N tokens)
// is longer than the model's context length (M tokens)." and "Requested
// token count exceeds the model's maximum context length of M tokens. ..."),
// vLLM's and OpenAI's ("This model's maximum context length is M tokens")
// and OpenRouter's ("This endpoint's maximum context length is ...").
var contextOverflowPhrases = []string{
	"longer than the model's context length",
	"maximum context length",
	"context_length_exceeded",
}

// isContextOverflow reports whether a server's message refuses a request
// for its length.
func isContextOverflow(msg string) bool {
	lower := strings.ToLower(msg)
	for _, p := range contextOverflowPhrases {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}

// retryableStatus reports whether a status (HTTP, or the status_code of an
// SGLang abort) says that the same request may succeed later.
func retryableStatus(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return status >= 500 && status <= 599
}

// isModerationFlag reports whether a 403 body is OpenRouter's moderation
// refusal, whose metadata names the flagged reasons.
func isModerationFlag(body []byte) bool {
	md := gjson.GetBytes(body, "error.metadata")
	return md.IsObject() && (md.Get("reasons").Exists() || md.Get("flagged_input").Exists())
}

// retryAfter reads Retry-After (delay-seconds or an HTTP date) and the
// millisecond variant some OpenAI-compatible servers send; 0 when absent or
// in the past.
func retryAfter(header http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(header.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(header.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || secs > 1e9 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// serverMessage extracts the human-readable part of an error body: the
// message of the JSON error shapes in use (OpenRouter and OpenAI
// {error: {message, metadata}}, SGLang and vLLM {object: "error", message},
// FastAPI {detail}), the title of an HTML page, or the text itself; empty
// for an empty body.
func serverMessage(body []byte, contentType string) string {
	body = trimBOM(body)
	if jsonl.Valid(body) {
		doc := gjson.ParseBytes(body)
		if msg := jsonErrorMessage(doc); msg != "" {
			return msg
		}
	}
	text := strings.TrimSpace(string(body))
	if text == "" {
		return ""
	}
	if looksLikeHTML(text, contentType) {
		if title := htmlTitle(text); title != "" {
			return "HTML page: " + title
		}
		return "HTML page"
	}
	return text
}

// jsonErrorMessage finds the message in the error shapes the servers use,
// adding OpenRouter's upstream details (metadata.provider_name and raw)
// because "Provider returned error" alone explains nothing.
func jsonErrorMessage(doc gjson.Result) string {
	if !doc.IsObject() {
		return ""
	}
	if e := doc.Get("error"); e.Exists() && e.Type != gjson.Null {
		if e.Type == gjson.String {
			return e.Str
		}
		msg := e.Get("message").String()
		if msg == "" {
			msg = e.Raw
		}
		md := e.Get("metadata")
		if p := md.Get("provider_name").String(); p != "" {
			msg += " (provider " + p + ")"
		}
		if raw := md.Get("raw"); raw.Exists() && raw.String() != "" && raw.String() != msg {
			msg += ": " + raw.String()
		}
		return msg
	}
	if msg := doc.Get("message").String(); msg != "" {
		return msg
	}
	if d := doc.Get("detail"); d.Exists() {
		if d.Type == gjson.String {
			return d.Str
		}
		return d.Raw
	}
	return ""
}

func looksLikeHTML(text, contentType string) bool {
	if strings.Contains(strings.ToLower(contentType), "html") {
		return true
	}
	head := strings.ToLower(text[:min(len(text), 64)])
	return strings.HasPrefix(head, "<!doctype html") || strings.HasPrefix(head, "<html")
}

func htmlTitle(page string) string {
	lower := strings.ToLower(page)
	start := strings.Index(lower, "<title>")
	if start < 0 {
		return ""
	}
	start += len("<title>")
	end := strings.Index(lower[start:], "</title>")
	if end < 0 {
		return ""
	}
	return strings.TrimSpace(page[start : start+end])
}

func trimBOM(b []byte) []byte {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		return b[3:]
	}
	return b
}

// Causes recorded on a request's context so that a timeout set by this
// package is told apart from the caller's cancellation.
var (
	errRequestTimeout = ErrRequestTimeout
	errIdleTimeout    = ErrIdleTimeout
	errDrainTimeout   = errors.New("stream went on after [DONE]")
)

// ErrRequestTimeout is the cause of a KindTimeout error (errors.Is finds
// it) of a request that passed its timeout (Options.Timeout,
// Request.Timeout), so that a caller can name its own setting.
var ErrRequestTimeout = errors.New("no complete answer within the request timeout")

// ErrIdleTimeout is the cause of a KindTimeout error (errors.Is finds it)
// when a stream was silent for longer than Options.IdleTimeout, so that a
// caller can name its own setting in what it prints.
var ErrIdleTimeout = errors.New("stream idle for longer than the idle timeout")

// transportError classifies a failure to send a request or to read its
// answer. parent is the caller's context, reqCtx the request's own (which
// carries this package's timeouts as causes).
func transportError(parent, reqCtx context.Context, err error) *Error {
	cause := context.Cause(reqCtx)
	switch {
	case errors.Is(cause, errRequestTimeout), errors.Is(cause, errIdleTimeout):
		return &Error{Kind: KindTimeout, Message: cause.Error(), Retryable: true, cause: cause}
	case parent.Err() != nil:
		if errors.Is(parent.Err(), context.DeadlineExceeded) {
			// The caller's own cause (context.WithTimeoutCause) says which
			// of its limits this was, in its words.
			cause := context.Cause(parent)
			msg := cause.Error()
			if cause == context.DeadlineExceeded {
				msg = "no complete answer before the caller's deadline"
			}
			return &Error{Kind: KindTimeout, Message: msg, Retryable: true, cause: cause}
		}
		return &Error{Kind: KindCanceled, Message: "request canceled", cause: context.Cause(parent)}
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		// The URL is the caller's to print; keep only what went wrong.
		err = uerr.Err
	}
	var rerr *redirectError
	if errors.As(err, &rerr) {
		// Every request to that base URL would be redirected alike.
		return &Error{Kind: KindRequest, Status: rerr.status, Message: rerr.Error(), Fatal: true, cause: err}
	}
	var certErr *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostnameErr x509.HostnameError
	if errors.As(err, &certErr) || errors.As(err, &unknownAuthority) || errors.As(err, &hostnameErr) {
		// A certificate that does not verify will not verify on the next
		// attempt either, and must never be worked around.
		return &Error{Kind: KindConnect, Message: err.Error(), Fatal: true, cause: err}
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		return &Error{Kind: KindTimeout, Message: err.Error(), Retryable: true, cause: err}
	}
	return &Error{Kind: KindConnect, Message: err.Error(), Retryable: true, cause: err}
}

// protocolError is an answer that is not what the API promises: garbage or
// an HTML page with status 200, a stream without its end. Proxies produce
// these transiently, so another attempt is worth it (the caller bounds
// attempts).
func protocolError(format string, args ...any) *Error {
	return &Error{Kind: KindProtocol, Message: fmt.Sprintf(format, args...), Retryable: true}
}

// streamError is a failure the server reported after it began answering
// (an error chunk, finish_reason "error", an error body with status 200).
// OpenRouter answers 200 once a request is under way and puts the status
// in error.code: a code of 400 to 599 is classified as that status would
// be (402 stops the run, 400 fails the record, 429 and 5xx are retried);
// another code, or none, is a retryable failure of the stream. What the
// attempt was charged (usage.cost) is kept.
func streamError(doc gjson.Result) *Error {
	e := &Error{Kind: KindStream, Retryable: true, Message: jsonErrorMessage(doc)}
	if e.Message == "" {
		e.Message = "server reported an error"
	}
	if code, ok := errorCode(doc.Get("error.code")); ok {
		e.Status = code
		if code >= 400 && code <= 599 {
			e.Retryable = false
			classifyStatus(e, code, http.Header{}, []byte(doc.Raw))
			if e.Retryable && e.Kind == KindHTTP {
				e.Kind = KindStream // a 5xx reported in the stream
			}
		}
	}
	e.Cost = reportedCost(doc.Get("usage"))
	return e
}

// errorCode reads error.code, a number or a string of digits (OpenRouter
// sends numbers; some providers behind it send "502"); ok is false for a
// name such as "server_error".
func errorCode(v gjson.Result) (int, bool) {
	s := strings.TrimSpace(v.String())
	if (v.Type != gjson.Number && v.Type != gjson.String) || s == "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 100 || n > 999 {
		return 0, false
	}
	return n, true
}

// reportedCost is usage.cost, USD, when the server sent one as a number or
// a numeric string; nil otherwise. Whether it is a plausible amount is the
// caller's to judge.
func reportedCost(usage gjson.Result) *float64 {
	c := usage.Get("cost")
	if c.Type != gjson.Number && (c.Type != gjson.String || c.Str == "") {
		return nil
	}
	cost := c.Float()
	return &cost
}

// snippet returns the start of a body that failed to parse, for the error
// message.
func snippet(b []byte) string {
	b = b[:min(len(b), 120)]
	return strconv.Quote(string(b))
}

// cleanMessage makes server text safe to store and print: the API key is
// removed wherever the server echoed it (before truncation, so no fragment
// survives), invalid UTF-8 and control characters are replaced, and the
// length is bounded.
func cleanMessage(msg string, secrets ...string) string {
	for _, secret := range secrets {
		if secret != "" {
			msg = strings.ReplaceAll(msg, secret, "[redacted]")
		}
	}
	var b strings.Builder
	for _, r := range msg {
		if b.Len() >= maxMessageBytes {
			b.WriteString(" [truncated]")
			break
		}
		switch {
		case r == utf8.RuneError:
			b.WriteRune('\uFFFD')
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f:
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
