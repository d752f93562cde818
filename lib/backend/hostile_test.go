package backend

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestDeepNestingRefused: twelve megabytes of "[" as a body, as one event of
// a stream, and from /server_info once overflowed the stack in gjson's
// validation and crashed generate with everything in flight. Each must be
// a protocol error, like any other garbage.
func TestDeepNestingRefused(t *testing.T) {
	deep := strings.Repeat("[", 12<<20)
	body := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, deep)
	}
	event := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: "+deep+"\n\n")
	}
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		stream  bool
	}{
		{"body", body, false},
		{"event", event, true},
	} {
		s := newStub(t, tc.handler)
		for name, bk := range backends(Options{Stream: tc.stream}) {
			_, err := bk.b.Do(ctxTimeout(t), s.URL, bk.req)
			e := asError(t, err, KindProtocol, true)
			if !strings.Contains(e.Message, "not JSON") {
				t.Errorf("%s %s: %q", tc.name, name, e.Message)
			}
		}
	}
	s := newStub(t, body)
	if _, err := NewSGLang(Options{}).ServerInfo(ctxTimeout(t), s.URL); err == nil {
		t.Error("server_info: a body of brackets was taken as capacity information")
	}
	// An error body is read for its message: the same bound applies.
	s = newStub(t, answerJSON(http.StatusInternalServerError, strings.Repeat("[", 60<<10)))
	_, err := NewOpenAI(Options{}).Do(ctxTimeout(t), s.URL, chatReq())
	asError(t, err, KindHTTP, true)
}
