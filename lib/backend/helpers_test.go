package backend

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// stub is a loopback server whose answers a test scripts; it records the
// requests it received.
type stub struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   [][]byte
	headers  []http.Header
	paths    []string
	handlers map[string]http.HandlerFunc // by path; "" answers any other
}

func newStub(t testing.TB, handler http.HandlerFunc) *stub {
	return newStubPaths(t, map[string]http.HandlerFunc{"": handler})
}

func newStubPaths(t testing.TB, handlers map[string]http.HandlerFunc) *stub {
	s := &stub{handlers: handlers}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, body)
		s.headers = append(s.headers, r.Header.Clone())
		s.paths = append(s.paths, r.URL.Path)
		s.mu.Unlock()
		h, ok := s.handlers[r.URL.Path]
		if !ok {
			h = s.handlers[""]
		}
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *stub) lastBody(t testing.TB) []byte {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bodies) == 0 {
		t.Fatal("the server received no request")
	}
	return s.bodies[len(s.bodies)-1]
}

func (s *stub) lastHeader(t testing.TB) http.Header {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headers[len(s.headers)-1]
}

// answerJSON answers status with a JSON body.
func answerJSON(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// answerSSE answers 200 with a prepared event stream, flushing each line so
// that the client reads it in pieces.
func answerSSE(stream string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, line := range strings.SplitAfter(stream, "\n") {
			io.WriteString(w, line)
			w.(http.Flusher).Flush()
		}
	}
}

// sseOf renders events as a stream: each a data line, a blank line after.
func sseOf(events ...string) string {
	var b strings.Builder
	for _, ev := range events {
		b.WriteString("data: ")
		b.WriteString(ev)
		b.WriteString("\n\n")
	}
	return b.String()
}

// hijackAndReset writes a response head promising more body than it
// sends, then drops the connection.
func hijackAndReset(head, partial string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		buf.WriteString(head)
		buf.WriteString(partial)
		buf.Flush()
		conn.Close()
	}
}

// assertJSONEqual compares two JSON texts as values.
func assertJSONEqual(t testing.TB, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("sent body is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expectation: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("sent body\n%s\nwant\n%s", got, want)
	}
}

// asError asserts err is a *Error of kind with the given retryability.
func asError(t testing.TB, err error, kind string, retryable bool) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want *Error of kind %s, got %T %v", kind, err, err)
	}
	if e.Kind != kind || e.Retryable != retryable {
		t.Fatalf("got kind %q retryable %v (%q), want kind %q retryable %v", e.Kind, e.Retryable, e.Message, kind, retryable)
	}
	return e
}

func ctxTimeout(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func ptr[T any](v T) *T { return &v }

// sglangRequest returns a small /generate request.
func sglangReq() *Request {
	return &Request{ID: "rec-1", Attempt: 1, InputIDs: []int{1, 2, 3}, Params: Params{MaxTokens: 16}}
}

func chatReq() *Request {
	return &Request{ID: "rec-1", Attempt: 1, Messages: json.RawMessage(`[{"role":"user","content":"hi"}]`), Params: Params{MaxTokens: 16}}
}
