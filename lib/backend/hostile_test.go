package backend

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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

// origin is a server that records whether any request reached it, and
// with which Authorization header.
type origin struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string
}

func newOrigin(t *testing.T, tls bool, handler http.HandlerFunc) *origin {
	o := &origin{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.auth = append(o.auth, r.Header.Get("Authorization"))
		o.mu.Unlock()
		handler(w, r)
	})
	if tls {
		o.Server = httptest.NewTLSServer(h)
	} else {
		o.Server = httptest.NewServer(h)
	}
	t.Cleanup(o.Close)
	return o
}

func (o *origin) seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.auth)
}

func redirectTo(status int, location string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Location", location)
		w.WriteHeader(status)
	}
}

// TestRedirects: the API key followed redirects to plain http and to
// another port, and a 301 or 302 turned the POST into a GET. Now no
// credential leaves the origin it was given for, a redirect of a POST
// is an error that names the Location unless it is a same-origin 307 or
// 308, and both transports (ours for http, net/http for https) do the same.
func TestRedirects(t *testing.T) {
	const key = "sk-redirect-secret"
	sglangOK := answerJSON(200, `{"text":"a","output_ids":[2],"meta_info":{"finish_reason":{"type":"stop","matched":2},"prompt_tokens":3,"completion_tokens":1}}`)
	elsewhere := newOrigin(t, false, sglangOK) // another port of the same host
	for _, tc := range []struct {
		name     string
		tls      bool
		status   int
		location func(self string) string
		followed bool
	}{
		{"302 to another port", false, 302, func(string) string { return elsewhere.URL + "/generate" }, false},
		{"307 to another port", false, 307, func(string) string { return elsewhere.URL + "/generate" }, false},
		{"https to http", true, 307, func(string) string { return elsewhere.URL + "/generate" }, false},
		{"301 within the origin", false, 301, func(self string) string { return self + "/v2/generate" }, false},
		{"303 within the origin", true, 303, func(self string) string { return self + "/v2/generate" }, false},
		{"307 within the origin", false, 307, func(self string) string { return self + "/v2/generate" }, true},
		{"308 within the origin", true, 308, func(self string) string { return self + "/v2/generate" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var self *origin
			self = newOrigin(t, tc.tls, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v2/generate" {
					sglangOK(w, r)
					return
				}
				redirectTo(tc.status, tc.location(self.URL))(w, r)
			})
			before := len(elsewhere.seen())
			opts := Options{APIKey: key}
			if tc.tls {
				opts.Client = self.Client()
			}
			res, err := NewSGLang(opts).Do(ctxTimeout(t), self.URL, sglangReq())
			if got := elsewhere.seen()[before:]; len(got) > 0 {
				t.Fatalf("the request went on to another origin, Authorization %q", got)
			}
			if tc.followed {
				if err != nil || res.Text != "a" {
					t.Fatalf("same-origin %d not followed: %v", tc.status, err)
				}
				if auth := self.seen(); len(auth) != 2 || auth[1] != "Bearer "+key {
					t.Fatalf("Authorization on the two requests: %q", auth)
				}
				return
			}
			e := asError(t, err, KindRequest, false)
			if !e.Fatal || e.Status != tc.status || !strings.Contains(e.Message, "redirected to "+tc.location(self.URL)) {
				t.Fatalf("got %+v: want a fatal error naming the Location", e)
			}
		})
	}
	t.Run("server_info within the origin", func(t *testing.T) {
		self := newOrigin(t, false, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/server_info" {
				redirectTo(302, "/v2/server_info")(w, r)
				return
			}
			answerJSON(200, `{"max_total_num_tokens":1000}`)(w, r)
		})
		info, err := NewSGLang(Options{APIKey: key}).ServerInfo(ctxTimeout(t), self.URL)
		if err != nil || info.MaxTotalTokens != 1000 {
			t.Fatalf("got %+v, %v", info, err)
		}
	})
	t.Run("server_info elsewhere", func(t *testing.T) {
		before := len(elsewhere.seen())
		self := newOrigin(t, false, redirectTo(302, elsewhere.URL+"/server_info"))
		if _, err := NewSGLang(Options{APIKey: key}).ServerInfo(ctxTimeout(t), self.URL); err == nil {
			t.Fatal("a redirect to another origin was followed")
		}
		if got := elsewhere.seen()[before:]; len(got) > 0 {
			t.Fatalf("the request went on to another origin, Authorization %q", got)
		}
	})
}

// TestURLCredentials: a base URL's user and password go out as Basic
// authentication, never in the request line, and never into an error,
// even when the server echoes the request back; an API key takes their
// place.
func TestURLCredentials(t *testing.T) {
	const user, pass = "alice", "url-secret-3141"
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	var mu sync.Mutex
	var auths, targets []string
	s := newStub(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		targets = append(targets, r.RequestURI)
		mu.Unlock()
		dump, _ := httputil.DumpRequest(r, false)
		answerJSON(500, `{"error":{"message":`+strconv.Quote("you sent "+string(dump)+" from "+r.URL.String())+`}}`)(w, r)
	})
	base := strings.Replace(s.URL, "http://", "http://"+user+":"+pass+"@", 1)
	_, err := NewSGLang(Options{}).Do(ctxTimeout(t), base, sglangReq())
	e := asError(t, err, KindHTTP, true)
	if strings.Contains(e.Message, pass) || strings.Contains(e.Message, basic[len("Basic "):]) {
		t.Errorf("the credentials are in the error: %q", e.Message)
	}
	_, err = NewSGLang(Options{APIKey: "sk-instead"}).Do(ctxTimeout(t), base, sglangReq())
	asError(t, err, KindHTTP, true)
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(auths, []string{basic, "Bearer sk-instead"}) {
		t.Errorf("Authorization headers %q, want Basic, then the API key", auths)
	}
	for _, target := range targets {
		if strings.Contains(target, pass) {
			t.Errorf("the password is in the request line %q", target)
		}
	}
	for _, tc := range [][2]string{
		{"http://alice:secret@gpu1:30000/v1", "http://gpu1:30000/v1"},
		{"https://tok@host", "https://host"},
		{"http://gpu1:30000", "http://gpu1:30000"},
		{"http://a:b@host:bad port/x", "http://host:bad port/x"},
	} {
		if got := WithoutUserinfo(tc[0]); got != tc[1] {
			t.Errorf("WithoutUserinfo(%q) = %q, want %q", tc[0], got, tc[1])
		}
	}
}

// TestSGLangAnswerToAnotherRequest: an answer whose meta_info.id is not
// the rid sent (a proxy that mixes up connections) is never taken as this
// request's answer, whole or streamed.
func TestSGLangAnswerToAnotherRequest(t *testing.T) {
	other := `{"text":"x","output_ids":[9,2],"meta_info":{"id":"someone-else#1.00000000","finish_reason":{"type":"stop","matched":2},"prompt_tokens":3,"completion_tokens":2}}`
	for _, tc := range []struct {
		name    string
		stream  bool
		handler http.HandlerFunc
	}{
		{"whole", false, answerJSON(200, other)},
		{"stream", true, answerSSE(sseOf(other, "[DONE]"))},
	} {
		s := newStub(t, tc.handler)
		_, err := NewSGLang(Options{Stream: tc.stream}).Do(ctxTimeout(t), s.URL, sglangReq())
		e := asError(t, err, KindProtocol, true)
		if !strings.Contains(e.Message, "answer to another request") || !strings.Contains(e.Message, RID("rec-1", 1)) {
			t.Errorf("%s: %q", tc.name, e.Message)
		}
	}
	// The rid an --extra sets is the one compared.
	s := newStub(t, answerJSON(200, strings.Replace(other, "someone-else#1.00000000", "mine", 1)))
	req := sglangReq()
	req.Params.Extra = []byte(`{"rid":"mine"}`)
	if _, err := NewSGLang(Options{}).Do(ctxTimeout(t), s.URL, req); err != nil {
		t.Errorf("the answer to the rid set by --extra was refused: %v", err)
	}
}

// TestAnswersInFlightShareAMemoryBound: the cap on one answer was per
// request, so many huge answers at once took gigabytes. Here a first answer,
// whole or streamed, is being received and stays in flight; a second huge
// one fails (retryably) instead of adding to it, the first completes, and
// the memory comes back when both have ended.
func TestAnswersInFlightShareAMemoryBound(t *testing.T) {
	whole := func(size int) string {
		return `{"text":"` + strings.Repeat("x", size) + `","output_ids":[2],"meta_info":{"finish_reason":{"type":"stop","matched":2},"prompt_tokens":3,"completion_tokens":1}}`
	}
	event := func(size int) string {
		return `{"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", size) + `"},"finish_reason":null}]}`
	}
	last := `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	// answer writes all but the end of an answer, then the end once
	// release is closed.
	answerWhole := func(size int) func(w http.ResponseWriter, release <-chan struct{}) {
		body := whole(size)
		return func(w http.ResponseWriter, release <-chan struct{}) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			io.WriteString(w, body[:len(body)-100])
			w.(http.Flusher).Flush()
			<-release
			io.WriteString(w, body[len(body)-100:])
		}
	}
	answerStream := func(size int) func(w http.ResponseWriter, release <-chan struct{}) {
		ev := event(size)
		return func(w http.ResponseWriter, release <-chan struct{}) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: "+ev[:len(ev)-100])
			w.(http.Flusher).Flush()
			<-release
			io.WriteString(w, ev[len(ev)-100:]+"\n\n"+sseOf(last, "[DONE]"))
		}
	}
	for _, tc := range []struct {
		name          string
		kind          *Kind
		stream        bool
		bound         int64
		first, second func(w http.ResponseWriter, release <-chan struct{})
		req           *Request
	}{
		{"whole", SGLang, false, 1 << 20, answerWhole(700 << 10), answerWhole(700 << 10), sglangReq()},
		// A stream's event is held in its line, its data and the parser's
		// text: three copies at the end.
		{"stream", OpenAI, true, 2 << 20, answerStream(400 << 10), answerStream(1500 << 10), chatReq()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			var calls sync.Mutex
			n := 0
			s := newStub(t, func(w http.ResponseWriter, r *http.Request) {
				calls.Lock()
				n++
				first := n == 1
				calls.Unlock()
				if first {
					tc.first(w, release)
					return
				}
				tc.second(w, r.Context().Done()) // never finished: the client gives up first
			})
			b := tc.kind.New(Options{Stream: tc.stream, MaxInFlightBytes: tc.bound})
			mem := memOf(b)
			done := make(chan error, 1)
			go func() {
				_, err := b.Do(ctxTimeout(t), s.URL, tc.req)
				done <- err
			}()
			for mem.used.Load() < 300<<10 { // the first answer is being received
				select {
				case err := <-done:
					t.Fatalf("the first answer ended early: %v", err)
				case <-time.After(time.Millisecond):
				}
			}
			_, err := b.Do(ctxTimeout(t), s.URL, tc.req)
			e := asError(t, err, KindProtocol, true)
			if !strings.Contains(e.Message, "would hold more than "+byteSize(tc.bound)+" together") {
				t.Fatalf("message %q", e.Message)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatalf("the first answer failed: %v", err)
			}
			if used := mem.used.Load(); used != 0 {
				t.Fatalf("%d bytes still held after both answers ended", used)
			}
		})
	}
}

// memOf is the memory budget a backend's exchanges share.
func memOf(b Backend) *memBudget {
	switch b := b.(type) {
	case *sglang:
		return b.mem
	case *openAI:
		return b.mem
	}
	panic("unknown backend")
}
