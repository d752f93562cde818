package backend

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// TestCallOnAnswer: a call sent by Start and awaited by OnAnswer (in the
// poller, where there is one) runs its function exactly once: when the
// answer begins, when the caller cancels it, when its timeout passes; and
// the server sees the connection close when the call ends early.
func TestCallOnAnswer(t *testing.T) {
	const answer = `{"text":"ok","output_ids":[7,8],"meta_info":{"finish_reason":{"type":"length"},"prompt_tokens":3,"completion_tokens":2}}`
	received := make(chan struct{}, 1)
	left := make(chan struct{}, 1)
	var conns atomic.Int32
	s := newRawServer(t, func(conn net.Conn, requests *bufio.Reader) {
		conns.Add(1)
		for {
			req, ok := readRequest(requests)
			if !ok {
				left <- struct{}{}
				return
			}
			if req.URL.Path == "/answer/generate" {
				io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(answer))+"\r\n\r\n"+answer)
				continue
			}
			received <- struct{}{}
		}
	})
	b := NewSGLang(Options{})
	// await waits for the call's function, however long it takes (go
	// test's timeout ends a wait that never ends); a second run closes ran
	// again, a panic that fails the test binary whenever it comes.
	await := func(call *Call) (*Result, error) {
		t.Helper()
		var res *Result
		var err error
		ran := make(chan struct{})
		call.OnAnswer(func() {
			res, err = call.Result()
			close(ran)
		})
		<-ran
		return res, err
	}

	t.Run("answered", func(t *testing.T) {
		// The second and third wait on the first's pooled connection,
		// which the poller re-arms.
		for range 3 {
			res, err := await(b.Start(context.Background(), s.url+"/answer", sglangReq()))
			if err != nil || len(res.OutputIDs) != 2 || res.OutputIDs[0] != 7 {
				t.Fatalf("got %+v, %v", res, err)
			}
		}
		if n := conns.Load(); n != 1 {
			t.Errorf("3 answers took %d connections, want 1", n)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		call := b.Start(ctx, s.url+"/hold", sglangReq())
		go func() {
			<-received
			cancel()
		}()
		_, err := await(call)
		asError(t, err, KindCanceled, false)
		<-left
	})
	t.Run("timed out", func(t *testing.T) {
		req := sglangReq()
		req.Timeout = 20 * time.Millisecond
		_, err := await(b.Start(context.Background(), s.url+"/hold", req))
		if e := asError(t, err, KindTimeout, true); !errors.Is(e, ErrRequestTimeout) {
			t.Fatalf("the timeout's cause is lost: %v", e)
		}
		<-received
		<-left
	})
	t.Run("sent again on a new connection", func(t *testing.T) {
		// Keep-alive promised, then each connection is closed idle: the
		// second call's pooled connection is dead, and its body, not
		// held while it was awaited, is made again for a new one.
		bodies := make(chan string, 2)
		s := newRawServer(t, func(conn net.Conn, requests *bufio.Reader) {
			req, err := http.ReadRequest(requests)
			if err != nil {
				return
			}
			body, _ := io.ReadAll(req.Body)
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(answer))+"\r\n\r\n"+answer)
			conn.Close()
			bodies <- string(body)
		})
		for i := range 2 {
			if _, err := await(b.Start(context.Background(), s.url, sglangReq())); err != nil {
				t.Fatalf("call %d: %v", i+1, err)
			}
		}
		if first, second := <-bodies, <-bodies; first != second || s.conns.Load() != 2 {
			t.Fatalf("%d connections, bodies %q and %q", s.conns.Load(), first, second)
		}
	})
	t.Run("cancelled before it waits", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		call := b.Start(ctx, s.url+"/hold", sglangReq())
		cancel()
		_, err := await(call)
		asError(t, err, KindCanceled, false)
		<-received
		<-left
	})
}
