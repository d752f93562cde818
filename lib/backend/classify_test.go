package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// backends returns both backends with opts, for tests that must hold for
// each.
func backends(opts Options) map[string]struct {
	b   Backend
	req *Request
} {
	return map[string]struct {
		b   Backend
		req *Request
	}{
		"sglang": {NewSGLang(opts), sglangReq()},
		"openai": {NewOpenAI(opts), chatReq()},
	}
}

func TestStatusClassification(t *testing.T) {
	openRouter := func(code int, msg string) string {
		return fmt.Sprintf(`{"error":{"code":%d,"message":%q}}`, code, msg)
	}
	for _, tc := range []struct {
		status     int
		body       string
		header     map[string]string
		kind       string
		retryable  bool
		fatal      bool
		retryAfter time.Duration
		message    string
	}{
		{status: 400, body: `{"object":"error","message":"This model's maximum context length is 32768 tokens","type":"BadRequestError","code":400}`,
			kind: KindContextOverflow, message: "This model's maximum context length is 32768 tokens"},
		{status: 401, body: openRouter(401, "User not found."), kind: KindAuth, fatal: true, message: "User not found."},
		{status: 402, body: openRouter(402, "Insufficient credits"), kind: KindCredits, fatal: true},
		{status: 403, body: openRouter(403, "Key disabled"), kind: KindAuth, fatal: true},
		{status: 403, body: `{"error":{"code":403,"message":"flagged","metadata":{"reasons":["violence"],"flagged_input":"..."}}}`, kind: KindRequest},
		{status: 404, body: openRouter(404, "No endpoints found for x/y"), kind: KindRequest},
		{status: 408, body: openRouter(408, "timed out"), kind: KindHTTP, retryable: true},
		{status: 409, body: "conflict", kind: KindHTTP, retryable: true},
		{status: 413, body: "too large", kind: KindRequest},
		{status: 422, body: `{"detail":[{"loc":["body","messages"],"msg":"field required"}]}`, kind: KindRequest},
		{status: 425, body: "", kind: KindHTTP, retryable: true, message: "HTTP 425 Too Early with an empty body"},
		{status: 429, body: openRouter(429, "Rate limit exceeded"), header: map[string]string{"Retry-After": "7"}, kind: KindRate, retryable: true, retryAfter: 7 * time.Second},
		{status: 429, body: openRouter(429, "slow down"), header: map[string]string{"Retry-After": "1.5"}, kind: KindRate, retryable: true, retryAfter: 1500 * time.Millisecond},
		{status: 429, body: openRouter(429, "slow down"), header: map[string]string{"Retry-After-Ms": "250"}, kind: KindRate, retryable: true, retryAfter: 250 * time.Millisecond},
		{status: 429, body: openRouter(429, "slow down"), header: map[string]string{"Retry-After": "soon"}, kind: KindRate, retryable: true},
		{status: 500, body: "Internal Server Error", kind: KindHTTP, retryable: true, message: "Internal Server Error"},
		{status: 502, body: "<html>\r\n<head><title>502 Bad Gateway</title></head><body>nginx</body></html>", header: map[string]string{"Content-Type": "text/html"},
			kind: KindHTTP, retryable: true, message: "HTML page: 502 Bad Gateway"},
		{status: 503, body: openRouter(503, "No available providers"), header: map[string]string{"Retry-After": "30"}, kind: KindHTTP, retryable: true, retryAfter: 30 * time.Second},
		{status: 504, body: "gateway timeout", kind: KindHTTP, retryable: true},
	} {
		name := fmt.Sprintf("%d %s", tc.status, tc.body)
		t.Run(name[:min(len(name), 40)], func(t *testing.T) {
			s := newStub(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			for name, bk := range backends(Options{Stream: tc.status%2 == 0}) {
				_, err := bk.b.Do(ctxTimeout(t), s.URL, bk.req)
				e := asError(t, err, tc.kind, tc.retryable)
				if e.Status != tc.status || e.Fatal != tc.fatal || e.RetryAfter != tc.retryAfter {
					t.Fatalf("%s: got %+v", name, e)
				}
				if tc.message != "" && e.Message != tc.message {
					t.Fatalf("%s: message %q, want %q", name, e.Message, tc.message)
				}
			}
		})
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	now := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	h := http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}
	if got := retryAfter(h, now); got != 90*time.Second {
		t.Fatalf("got %v", got)
	}
	h = http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}
	if got := retryAfter(h, now); got != 0 {
		t.Fatalf("past date: got %v", got)
	}
}

func TestTransportFailures(t *testing.T) {
	resetWhole := hijackAndReset("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n", `{"text": " the model was`)
	resetStream := hijackAndReset("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n", `data: {"text": " the mo`)
	resetHead := hijackAndReset("HTTP/1.1 200 O", "")
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		stream  bool
	}{
		{"reset mid-body", resetWhole, false},
		{"reset mid-stream", resetStream, true},
		{"reset in the head", resetHead, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStub(t, tc.handler)
			for name, bk := range backends(Options{Stream: tc.stream}) {
				_, err := bk.b.Do(ctxTimeout(t), s.URL, bk.req)
				if e := asError(t, err, KindConnect, true); e.Message == "" {
					t.Fatalf("%s: empty message", name)
				}
			}
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		for _, bk := range backends(Options{}) {
			_, err := bk.b.Do(ctxTimeout(t), "http://"+addr, bk.req)
			e := asError(t, err, KindConnect, true)
			if strings.Contains(e.Message, "http://") {
				t.Fatalf("message repeats the URL: %q", e.Message)
			}
		}
	})
}

func TestTimeouts(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hang := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	slowStream := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, ": OPENROUTER PROCESSING\n\n")
		w.(http.Flusher).Flush()
		hang(w, r)
	}
	t.Run("whole request", func(t *testing.T) {
		s := newStub(t, hang)
		for _, bk := range backends(Options{Timeout: 50 * time.Millisecond}) {
			start := time.Now()
			_, err := bk.b.Do(context.Background(), s.URL, bk.req)
			asError(t, err, KindTimeout, true)
			if time.Since(start) > 5*time.Second {
				t.Fatal("the timeout did not stop the request")
			}
		}
	})
	t.Run("idle stream", func(t *testing.T) {
		s := newStub(t, slowStream)
		for _, bk := range backends(Options{Stream: true, IdleTimeout: 50 * time.Millisecond}) {
			_, err := bk.b.Do(context.Background(), s.URL, bk.req)
			e := asError(t, err, KindTimeout, true)
			if !strings.Contains(e.Message, "idle") {
				t.Fatalf("message %q", e.Message)
			}
		}
	})
	t.Run("activity keeps a stream alive", func(t *testing.T) {
		s := newStub(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for range 25 {
				io.WriteString(w, ": OPENROUTER PROCESSING\n\n")
				w.(http.Flusher).Flush()
				time.Sleep(100 * time.Millisecond)
			}
			io.WriteString(w, sseOf(`{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}`, "[DONE]"))
		})
		// Twenty-five silences of 100 ms outlast 2 s in total, not one at a
		// time: each leaves 1.9 s for a loaded machine to be late.
		_, err := NewOpenAI(Options{Stream: true, IdleTimeout: 2 * time.Second}).Do(context.Background(), s.URL, chatReq())
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("caller cancels", func(t *testing.T) {
		s := newStub(t, hang)
		for _, bk := range backends(Options{}) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(30*time.Millisecond, cancel)
			_, err := bk.b.Do(ctx, s.URL, bk.req)
			asError(t, err, KindCanceled, false)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("errors.Is(%v, context.Canceled) is false", err)
			}
		}
	})
}

// TestAPIKeyNeverInErrors has servers echo the request headers (the
// Authorization header with the key) in every place an error message is
// taken from.
func TestAPIKeyNeverInErrors(t *testing.T) {
	const key = "sk-or-v1-0123456789abcdef-very-secret"
	echo := func(r *http.Request) string {
		var b strings.Builder
		r.Header.Write(&b)
		return b.String()
	}
	for _, tc := range []struct {
		name    string
		stream  bool
		handler http.HandlerFunc
	}{
		{"JSON error", false, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":{"code":400,"message":%q}}`, echo(r))
		}},
		{"text error", false, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(500)
			io.WriteString(w, echo(r))
		}},
		{"long text error", false, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(500)
			io.WriteString(w, strings.Repeat("x", maxMessageBytes-30)+echo(r))
		}},
		{"garbage 200", false, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "not json "+echo(r))
		}},
		{"error body 200", false, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"error":{"message":"bad","metadata":{"raw":%q}}}`, echo(r))
		}},
		{"stream error chunk", true, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"error\":{\"message\":%q}}\n\n", echo(r))
		}},
		{"stream garbage", true, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\n\n", strings.ReplaceAll(echo(r), "\r\n", " "))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStub(t, tc.handler)
			for name, bk := range backends(Options{APIKey: key, Stream: tc.stream}) {
				_, err := bk.b.Do(ctxTimeout(t), s.URL, bk.req)
				if err == nil {
					t.Fatalf("%s: no error", name)
				}
				if strings.Contains(err.Error(), key) || strings.Contains(fmt.Sprintf("%+v", err), key) {
					t.Fatalf("%s: the key leaked: %v", name, err)
				}
				if h := s.lastHeader(t).Get("Authorization"); h != "Bearer "+key {
					t.Fatalf("%s: sent %q", name, h)
				}
			}
		})
	}
}

// TestConnectionsAreReused checks that answers, streamed or not, leave
// their connection in the pool: a new TCP connection per request would
// cost a handshake each and exhaust ports at thousands of requests.
func TestConnectionsAreReused(t *testing.T) {
	var mu sync.Mutex
	conns := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if strings.Contains(r.Header.Get("Accept"), "event-stream") {
			answerSSE(sseOf(`{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}`, "[DONE]"))(w, r)
			// The end of the chunked body comes in a packet of its own.
			time.Sleep(10 * time.Millisecond)
			return
		}
		answerJSON(200, chatAnswerOK)(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.Start()
	defer srv.Close()
	client := &http.Client{Transport: newSharedTransport()}
	for _, stream := range []bool{false, true} {
		b := NewOpenAI(Options{Stream: stream, Client: client})
		for range 5 {
			if _, err := b.Do(ctxTimeout(t), srv.URL, chatReq()); err != nil {
				t.Fatal(err)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if conns != 1 {
		t.Fatalf("10 sequential requests opened %d connections", conns)
	}
}
