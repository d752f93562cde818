package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// FaultKind names an injectable fault. Its string form is what the
// X-Sim-Fault request header and Stats.Faults use.
type FaultKind uint8

// The injectable faults, in the order the probability draw walks them.
const (
	// FaultNone is a clean answer; the X-Sim-Fault value "none" forces it.
	FaultNone FaultKind = iota
	// FaultHTTP500 answers 500 at once: text/plain "Internal Server Error"
	// for SGLang endpoints (what uvicorn sends for an unhandled exception),
	// an OpenRouter error object for chat.
	FaultHTTP500
	// FaultRateLimit answers 429 with Retry-After in whole seconds.
	FaultRateLimit
	// FaultReset sends the response head and the start of a body, then
	// resets the TCP connection (SO_LINGER 0).
	FaultReset
	// FaultHang never answers; the handler returns when the client cancels
	// or the server closes.
	FaultHang
	// FaultSlowFirstToken holds the response back for SlowFirstTokenDelay
	// after the request entered the engine; streams send their headers (and
	// chat streams a processing comment) first.
	FaultSlowFirstToken
	// FaultMidStreamError fails the generation after half its tokens.
	// /generate streams get data: {"error": {"message"}} then data: [DONE];
	// chat streams get OpenRouter's error chunk with finish_reason "error";
	// non-streaming /generate answers 500, non-streaming chat answers 200
	// with an error object (OpenRouter reports errors after processing
	// started in the body).
	FaultMidStreamError
	// FaultGarbage answers 200 application/json with a body that is not JSON.
	FaultGarbage
	// FaultHTML answers 502 text/html, a reverse proxy's error page.
	FaultHTML
	// FaultAbort ends a /generate request after half its tokens with
	// finish_reason {type: abort, message, status_code: AbortStatusCode}
	// and the HTTP behaviour SGLang has for that status code. Chat requests
	// treat it as FaultMidStreamError.
	FaultAbort
	// FaultNoCredits answers 402 with OpenRouter's insufficient credits error.
	FaultNoCredits
	// FaultModeration answers 403 with OpenRouter's moderation error and
	// its metadata (reasons, flagged_input, provider_name, model_slug).
	FaultModeration
	// FaultRepetition makes the answer degenerate: after its first 8
	// tokens the next 4 repeat until max_new_tokens (finish_reason length),
	// whatever the answer's natural length: a loop to max_tokens.
	FaultRepetition
	// FaultMarkerLeak writes "<think>" into the answer's text after half
	// its tokens: a reasoning marker leaking into the content.
	FaultMarkerLeak
	numFaultKinds
)

var faultNames = [numFaultKinds]string{
	"none", "http500", "rate_limit", "reset", "hang", "slow_first_token",
	"mid_stream_error", "garbage", "html", "abort", "no_credits", "moderation",
	"repetition", "marker_leak",
}

// String returns the fault's name, e.g. "rate_limit".
func (k FaultKind) String() string {
	if k < numFaultKinds {
		return faultNames[k]
	}
	return "fault(" + strconv.Itoa(int(k)) + ")"
}

// MarshalText makes FaultKind readable as a JSON map key.
func (k FaultKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// ParseFaultKind parses a fault name as String returns it.
func ParseFaultKind(name string) (FaultKind, error) {
	for k, n := range faultNames {
		if n == name {
			return FaultKind(k), nil
		}
	}
	return FaultNone, fmt.Errorf("sim: unknown fault %q", name)
}

// FaultHeader is the request header that forces a fault for one request,
// whatever the configured probabilities; "none" forces a clean answer.
const FaultHeader = "X-Sim-Fault"

func (f *FaultConfig) rates() [numFaultKinds]float64 {
	return [numFaultKinds]float64{
		FaultHTTP500:        f.HTTP500,
		FaultRateLimit:      f.RateLimit,
		FaultReset:          f.Reset,
		FaultHang:           f.Hang,
		FaultSlowFirstToken: f.SlowFirstToken,
		FaultMidStreamError: f.MidStreamError,
		FaultGarbage:        f.Garbage,
		FaultHTML:           f.HTML,
		FaultAbort:          f.Abort,
		FaultNoCredits:      f.NoCredits,
		FaultModeration:     f.Moderation,
		FaultRepetition:     f.Repetition,
		FaultMarkerLeak:     f.MarkerLeak,
	}
}

func (f *FaultConfig) validate() error {
	sum := 0.0
	for k, p := range f.rates() {
		if p < 0 || p > 1 || math.IsNaN(p) {
			return fmt.Errorf("sim: fault probability %s=%v outside [0, 1]", FaultKind(k), p)
		}
		sum += p
	}
	if sum > 1+1e-9 {
		return fmt.Errorf("sim: fault probabilities add up to %v > 1", sum)
	}
	if f.RetryAfter < 0 || f.SlowFirstTokenDelay < 0 {
		return errors.New("sim: fault delays must not be negative")
	}
	return nil
}

// faultPicker draws the fault of each request. The draw is a function of
// the seed, the request's identity (its rid, or its prompt without one) and
// how many times that identity was seen, so a run is reproducible and a
// client retrying a failed request gets a fresh draw for each attempt.
type faultPicker struct {
	seed     uint64
	rates    [numFaultKinds]float64
	mu       sync.Mutex
	attempts map[uint64]uint64
}

func newFaultPicker(cfg *Config) faultPicker {
	return faultPicker{seed: cfg.Seed, rates: cfg.Faults.rates(), attempts: make(map[uint64]uint64)}
}

func (p *faultPicker) enabled() bool {
	for _, r := range p.rates {
		if r > 0 {
			return true
		}
	}
	return false
}

// pick returns the fault for this request; the header wins over the draw.
func (p *faultPicker) pick(r *http.Request, identity uint64) (FaultKind, error) {
	if name := r.Header.Get(FaultHeader); name != "" {
		return ParseFaultKind(name)
	}
	if !p.enabled() {
		return FaultNone, nil
	}
	p.mu.Lock()
	attempt := p.attempts[identity]
	p.attempts[identity] = attempt + 1
	p.mu.Unlock()
	u := newRNG(p.seed, identity, attempt, 0xFA).float()
	for k, rate := range p.rates {
		if u < rate {
			return FaultKind(k), nil
		}
		u -= rate
	}
	return FaultNone, nil
}

// serveEarlyFault answers the faults that strike before any generation and
// reports whether it did.
func (s *Server) serveEarlyFault(w http.ResponseWriter, r *http.Request, kind FaultKind, d dialect, stream bool) bool {
	switch kind {
	case FaultHTTP500:
		if d == sglangDialect {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte("Internal Server Error"))
		} else {
			writeJSON(w, http.StatusInternalServerError, errorBody(d, http.StatusInternalServerError, "Internal Server Error", nil))
		}
	case FaultRateLimit:
		secs := int(math.Ceil(s.cfg.Faults.RetryAfter.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
		writeJSON(w, http.StatusTooManyRequests, errorBody(d, http.StatusTooManyRequests, "Rate limit exceeded: too many requests, retry later", nil))
	case FaultReset:
		resetConnection(w, stream)
	case FaultHang:
		s.injected[kind].Add(1)
		select {
		case <-r.Context().Done():
		case <-s.closing:
			// Drop the connection without an answer: returning normally
			// would send an empty 200.
			panic(http.ErrAbortHandler)
		}
		return true
	case FaultGarbage:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("\x00\x1f{\"text\": \"unterminated <<garbage>> \xff\xfe"))
	case FaultHTML:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"))
	case FaultNoCredits:
		writeJSON(w, http.StatusPaymentRequired, errorBody(openaiDialect, http.StatusPaymentRequired,
			"Insufficient credits. Add more credits and retry the request.", nil))
	case FaultModeration:
		writeJSON(w, http.StatusForbidden, errorBody(openaiDialect, http.StatusForbidden,
			s.cfg.ModelName+" requires moderation on sim. Your input was flagged for \"violence\". No credits were charged.",
			map[string]any{"reasons": []string{"violence"}, "flagged_input": "...", "provider_name": "sim", "model_slug": s.cfg.ModelName}))
	default:
		return false
	}
	s.injected[kind].Add(1)
	return true
}

// resetConnection writes a response head announcing more body than it
// sends, then closes the socket with SO_LINGER 0 so the client sees a
// reset in the middle of the body.
func resetConnection(w http.ResponseWriter, stream bool) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// HTTP/2 or a recorder: the closest we can do is a truncated body.
		w.WriteHeader(http.StatusOK)
		return
	}
	partial := `{"text": " the model was in the middle of`
	head := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n"
	if stream {
		partial = `data: {"text": " the model was`
		head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
			strconv.FormatInt(int64(len(partial)+64), 16) + "\r\n"
	}
	buf.WriteString(head)
	buf.WriteString(partial)
	buf.Flush()
	if tcp, ok := conn.(*net.TCPConn); ok {
		tcp.SetLinger(0)
	}
	conn.Close()
}

// applyLateFault arms the faults that strike during generation and returns
// the delay of a slow first token.
func (s *Server) applyLateFault(kind FaultKind, pl *plan, chat bool) time.Duration {
	switch kind {
	case FaultSlowFirstToken:
		s.injected[kind].Add(1)
		return s.cfg.Faults.SlowFirstTokenDelay
	case FaultMidStreamError:
		pl.failAt = pl.total / 2
		pl.failure = finishReason{kind: finishAbort, message: "Internal server error during generation (injected mid-stream error)", statusCode: http.StatusInternalServerError}
	case FaultAbort:
		pl.failAt = pl.total / 2
		pl.failure = finishReason{kind: finishAbort, message: "Aborted by the scheduler (injected abort)", statusCode: s.cfg.Faults.AbortStatusCode}
		if chat {
			pl.failure.statusCode = http.StatusInternalServerError
		}
	case FaultRepetition:
		pl.loopFrom, pl.loopPeriod = loopFrom, loopPeriod
		pl.eosAtEnd = false
		pl.decide(pl.params.maxNew) // runs to its limit
	case FaultMarkerLeak:
		pl.leakAt = max(pl.contentTokens()/2, 1)
	default:
		return 0
	}
	s.injected[kind].Add(1)
	return 0
}

// sleepCtx waits d unless the context ends or the server closes first.
func (s *Server) sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.closing:
		return false
	}
}
