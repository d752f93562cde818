package backend

import (
	"bufio"
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The wire fuzz target plays a server that answers each request with bytes
// the fuzzer chose, status line, headers and all, and sends a real request
// through the whole client: the plain-http transport, redirects, chunked
// framing, the event-stream reader, validation and the answer parsers.
// Whatever the bytes, the client must return exactly a result or a
// classified error, within a few seconds, without crashing.

var wireSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 134\r\n\r\n" +
		`{"text":" a</s>","output_ids":[5,2],"meta_info":{"finish_reason":{"type":"stop","matched":2},"prompt_tokens":3,"completion_tokens":2}}`,
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"70\r\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}],\"usage\":{\"completion_tokens\":1}}\n\n\r\n" +
		"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n",
	// Old Mac line ends only.
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\r\rdata: [DONE]\r\r",
	// Nesting far past any sane answer, whole and streamed.
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + strings.Repeat("[", 200<<10),
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: " + strings.Repeat("{\"a\":", 50<<10) + "\n\n",
	"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n\r\n" + strings.Repeat("[", 60<<10),
	// Redirects: off the origin, a downgrade, a POST turned into a GET,
	// a same-origin loop.
	"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/generate\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 307 Temporary Redirect\r\nLocation: /generate\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 301 Moved Permanently\r\nLocation: http://user:pass@[::1]:9/x\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 999999999\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n{",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n",
	"garbage",
	"",
}

// wireOps are what a fuzz input may ask of the client.
var wireOps = []struct {
	name string
	run  func(ctx context.Context, url string) (*Result, error)
}{
	{"sglang", func(ctx context.Context, url string) (*Result, error) {
		return NewSGLang(wireOptions(false)).Do(ctx, url, sglangReq())
	}},
	{"sglang stream", func(ctx context.Context, url string) (*Result, error) {
		return NewSGLang(wireOptions(true)).Do(ctx, url, sglangReq())
	}},
	{"openai", func(ctx context.Context, url string) (*Result, error) {
		return NewOpenAI(wireOptions(false)).Do(ctx, url, chatReq())
	}},
	{"openai stream", func(ctx context.Context, url string) (*Result, error) {
		return NewOpenAI(wireOptions(true)).Do(ctx, url, chatReq())
	}},
	{"server_info", func(ctx context.Context, url string) (*Result, error) {
		_, err := NewSGLang(wireOptions(false)).ServerInfo(ctx, url)
		return nil, err
	}},
}

func wireOptions(stream bool) Options {
	return Options{Stream: stream, APIKey: "sk-wire-fuzz", Timeout: 5 * time.Second, IdleTimeout: 2 * time.Second, MaxResponseBytes: 4 << 20}
}

func FuzzServerReply(f *testing.F) {
	var reply atomic.Pointer[[]byte]
	srv := newRawServer(f, func(conn net.Conn, requests *bufio.Reader) {
		if _, ok := readRequest(requests); ok {
			conn.Write(*reply.Load())
		}
	})
	for _, s := range wireSeeds {
		for op := range wireOps {
			f.Add([]byte(s), uint8(op))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte, op uint8) {
		o := wireOps[int(op)%len(wireOps)]
		reply.Store(&raw)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := o.run(ctx, srv.url)
		if ctx.Err() != nil {
			t.Fatalf("%s: the client's own timeouts did not end the request", o.name)
		}
		switch e := err.(type) {
		case nil:
			// A chat completion's finish_reason is taken as sent, whole
			// or streamed to [DONE]; SGLang answers and streams end only
			// with one.
			if !strings.HasPrefix(o.name, "openai") && o.name != "server_info" && (res == nil || res.FinishReason == "") {
				t.Fatalf("%s: a result without a finish reason: %+v", o.name, res)
			}
		case *Error:
			if e.Kind == "" || e.Message == "" {
				t.Fatalf("%s: unclassified error %+v", o.name, e)
			}
			if strings.Contains(e.Message, "sk-wire-fuzz") {
				t.Fatalf("%s: the API key is in the error: %q", o.name, e.Message)
			}
		default:
			t.Fatalf("%s: an error that is not a *Error: %T %v", o.name, err, err)
		}
	})
}

// TestWireSeedsAnswer: the first seeds are well-formed answers, so that
// the fuzz target starts from the path that succeeds, not only from
// failures.
func TestWireSeedsAnswer(t *testing.T) {
	for i, op := range []int{0, 3} {
		raw := []byte(wireSeeds[i])
		srv := newRawServer(t, func(conn net.Conn, requests *bufio.Reader) {
			if _, ok := readRequest(requests); ok {
				conn.Write(raw)
			}
		})
		if res, err := wireOps[op].run(ctxTimeout(t), srv.url); err != nil || res.FinishReason != "stop" {
			t.Errorf("seed %d (%s): %+v, %v", i, wireOps[op].name, res, err)
		}
	}
}
