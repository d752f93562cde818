package sim

import (
	"context"
	"net/http"
	"time"
)

// sseWriter writes server-sent events and flushes each one so clients see
// tokens as they are generated. The first write error sticks.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	s.flush()
	return s
}

// data sends one "data: <json>" event.
func (s *sseWriter) data(v any) error {
	if s.err != nil {
		return s.err
	}
	body, err := marshal(v)
	if err != nil {
		s.err = err
		return err
	}
	buf := make([]byte, 0, len(body)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, body...)
	buf = append(buf, "\n\n"...)
	return s.raw(buf)
}

// raw sends prepared event bytes, e.g. a ": comment\n\n" or "data: [DONE]\n\n".
func (s *sseWriter) raw(b []byte) error {
	if s.err != nil {
		return s.err
	}
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return err
	}
	s.flush()
	return s.err
}

func (s *sseWriter) flush() {
	if err := s.rc.Flush(); err != nil && s.err == nil {
		s.err = err
	}
}

var sseDone = []byte("data: [DONE]\n\n")

// follow drives a stream: it calls onProgress with the number of generated
// tokens whenever the engine made progress, onIdle every idleEvery while
// nothing happens (if both are set), and returns true once r finished. It
// returns false, after aborting r, when the client went away, a write
// failed or the server is closing.
func (s *Server) follow(ctx context.Context, r *request, idleEvery time.Duration, onIdle func() error, onProgress func(n int) error) bool {
	var idle <-chan time.Time
	if idleEvery > 0 && onIdle != nil {
		t := time.NewTicker(idleEvery)
		defer t.Stop()
		idle = t.C
	}
	sent := 0
	for {
		select {
		case <-r.done:
			return true
		case <-ctx.Done():
			s.engine.abort(r, "client disconnected")
			return false
		case <-idle:
			if sent == 0 && onIdle() != nil {
				s.engine.abort(r, "client disconnected")
				return false
			}
		case <-r.notify:
			n := int(r.progress.Load())
			if n <= sent {
				continue
			}
			if err := onProgress(n); err != nil {
				s.engine.abort(r, "client disconnected")
				return false
			}
			sent = n
		}
	}
}
