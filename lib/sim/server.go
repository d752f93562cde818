package sim

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Server is a simulated SGLang / OpenRouter inference server.
type Server struct {
	cfg    Config
	engine *ranks
	faults faultPicker
	kimi   *kimiFormat // Config.AnswerFormat kimi-k2.5, else nil
	key    keyAccount
	start  time.Time

	ridSeq   atomic.Uint64
	rejected atomic.Int64
	injected [numFaultKinds]atomic.Int64

	// closing is closed by Close so that hanging handlers let go.
	closing   chan struct{}
	closeOnce sync.Once
	mu        sync.Mutex
	http      *http.Server
}

// Stats are the server's counters since New. Counters only grow; Running,
// Queued and KVUsed are gauges at the time of the call.
type Stats struct {
	// Requests counts generations admitted to the waiting queue.
	Requests int64 `json:"requests"`
	// Completed counts generations that ended with stop or length.
	Completed int64 `json:"completed"`
	// Aborted counts generations ended by an abort: client disconnect,
	// /abort_request, an injected abort or mid-stream error, or shutdown.
	Aborted int64 `json:"aborted"`
	// Rejected counts requests answered 4xx before reaching the engine
	// (bad input, duplicate rid, authentication), injected faults excluded.
	Rejected int64 `json:"rejected"`
	// Retractions counts requests pushed back from the running batch to the
	// waiting queue because the KV cache was full.
	Retractions int64 `json:"retractions"`
	// PromptTokens and TokensGenerated count prompt and output tokens.
	PromptTokens    int64 `json:"prompt_tokens"`
	TokensGenerated int64 `json:"tokens_generated"`
	// CachedTokens counts the prompt tokens the prefix cache held when
	// their request was first admitted (Config.PrefixCacheTokens);
	// divided by PromptTokens, the run's cache hit rate.
	CachedTokens int64 `json:"cached_tokens"`
	// PrefilledTokens counts the tokens computed at admission, what the
	// prefill time is charged for: prompts less what the cache held, and
	// again after a retraction.
	PrefilledTokens int64 `json:"prefilled_tokens"`
	// Steps counts decode steps.
	Steps int64 `json:"steps"`
	// QueuedSteps and RunningSteps add up, over the decode steps, the
	// waiting queue's length and the running batch's size: divided by
	// Steps, the mean queue and the mean batch, which say how much of the
	// load a server was sent only waited.
	QueuedSteps  int64 `json:"queued_steps"`
	RunningSteps int64 `json:"running_steps"`
	// MaxRunning, MaxQueued and MaxKVUsed are the peaks of the running
	// batch size, the waiting queue length and the KV tokens in use.
	MaxRunning int `json:"max_running"`
	MaxQueued  int `json:"max_queued"`
	MaxKVUsed  int `json:"max_kv_used"`
	// Running, Queued and KVUsed are the current values.
	Running int `json:"running"`
	Queued  int `json:"queued"`
	KVUsed  int `json:"kv_used"`
	// Faults counts injected faults by kind.
	Faults map[FaultKind]int64 `json:"faults"`
}

// New validates cfg and starts the engine. Call Close to stop it.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, start: time.Now(), closing: make(chan struct{})}
	s.cfg.Lengths.Values = append([]int(nil), cfg.Lengths.Values...)
	s.engine = newRanks(&s.cfg)
	s.faults = newFaultPicker(&s.cfg)
	if cfg.AnswerFormat == AnswerKimiK25 {
		k, err := loadKimiFormat()
		if err != nil {
			return nil, err
		}
		s.kimi = k
	}
	return s, nil
}

// Config returns the configuration the server runs with.
func (s *Server) Config() Config { return s.cfg }

// Handler returns the HTTP handler serving every endpoint; use it with
// httptest or your own listener instead of Start.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, method := range []string{"POST", "PUT"} {
		mux.HandleFunc(method+" /generate", s.handleGenerate)
	}
	for _, path := range []string{"/server_info", "/get_server_info"} {
		mux.HandleFunc("GET "+path, s.handleServerInfo)
	}
	for _, path := range []string{"/model_info", "/get_model_info"} {
		mux.HandleFunc("GET "+path, s.handleModelInfo)
	}
	mux.HandleFunc("GET /health", s.handleHealth)
	mux.HandleFunc("GET /health_generate", s.handleHealthGenerate)
	mux.HandleFunc("POST /abort_request", s.handleAbortRequest)
	mux.HandleFunc("GET /metrics", s.handleMetrics)
	mux.HandleFunc("GET /v1/loads", s.handleLoads)
	mux.HandleFunc("GET /get_load", s.handleGetLoad)
	// /api/v1 is OpenRouter's base path: a client pointed at llm-sim as
	// at https://openrouter.ai/api/v1 finds the same routes.
	for _, prefix := range []string{"/v1", "", "/api/v1"} {
		mux.HandleFunc("POST "+prefix+"/chat/completions", s.handleChat)
		mux.HandleFunc("GET "+prefix+"/models", s.handleModels)
		mux.HandleFunc("GET "+prefix+"/key", s.handleKey)
	}
	return s.authenticate(mux)
}

// CheckLoopback refuses an address Start would not listen on: one that is
// malformed, or whose host is not localhost or a loopback IP.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return errors.New("not a loopback address: only loopback addresses are allowed (127.0.0.1, ::1, localhost)")
	}
	return nil
}

// Start serves Handler on addr, which must be a loopback address such as
// "127.0.0.1:0", and returns the base URL, e.g. "http://127.0.0.1:41234".
func (s *Server) Start(addr string) (string, error) {
	if err := CheckLoopback(addr); err != nil {
		return "", fmt.Errorf("sim: refusing to listen on %q: %w", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("sim: %w", err)
	}
	if !ln.Addr().(*net.TCPAddr).IP.IsLoopback() {
		ln.Close()
		return "", fmt.Errorf("sim: %q did not resolve to a loopback address", addr)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	if s.http != nil {
		s.mu.Unlock()
		ln.Close()
		return "", errors.New("sim: server already started")
	}
	s.http = srv
	s.mu.Unlock()
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), nil
}

// Close aborts every request in flight, releases hanging handlers, stops the
// engine and, if Start was used, closes the listener and all connections.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.closing)
		s.engine.close()
		s.mu.Lock()
		srv := s.http
		s.mu.Unlock()
		if srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if shutdownErr := srv.Shutdown(ctx); shutdownErr != nil {
				err = srv.Close()
			}
		}
	})
	return err
}

// Stats returns the current counters.
func (s *Server) Stats() Stats {
	st := s.engine.snapshotStats()
	st.Rejected = s.rejected.Load()
	st.Faults = make(map[FaultKind]int64)
	for k := FaultKind(1); k < numFaultKinds; k++ {
		if n := s.injected[k].Load(); n > 0 {
			st.Faults[k] = n
		}
	}
	return st
}

// authenticate enforces Config.APIKey the way OpenRouter does, except on the
// health and metrics endpoints that probes call without credentials.
func (s *Server) authenticate(next http.Handler) http.Handler {
	if s.cfg.APIKey == "" {
		return next
	}
	want := []byte("Bearer " + s.cfg.APIKey)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health", "/health_generate", "/metrics":
			next.ServeHTTP(w, r)
			return
		}
		got := r.Header.Get("Authorization")
		if got == "" {
			s.reject(w, openaiDialect, http.StatusUnauthorized, "No auth credentials found")
			return
		}
		if subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			s.reject(w, openaiDialect, http.StatusUnauthorized, "User not found.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// dialect selects the error body shape of the API a handler imitates.
type dialect uint8

const (
	// sglangDialect: 400 as {"error": {"message"}} (SGLang's ValueError
	// path), other statuses as FastAPI's ErrorResponse
	// {"object": "error", "message", "type", "param", "code"}.
	sglangDialect dialect = iota
	// openaiDialect: OpenRouter's {"error": {"code", "message", "metadata"?}}.
	openaiDialect
)

func errorBody(d dialect, status int, message string, metadata map[string]any) any {
	if d == openaiDialect {
		e := map[string]any{"code": status, "message": message}
		if metadata != nil {
			e["metadata"] = metadata
		}
		return map[string]any{"error": e}
	}
	if status == http.StatusBadRequest {
		return map[string]any{"error": map[string]any{"message": message}}
	}
	return map[string]any{"object": "error", "message": message, "type": http.StatusText(status), "param": nil, "code": status}
}

// reject answers an error for a request that never reached the engine and
// counts it in Stats.Rejected.
func (s *Server) reject(w http.ResponseWriter, d dialect, status int, message string) {
	s.rejected.Add(1)
	writeJSON(w, status, errorBody(d, status, message, nil))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// marshal is json.Marshal, or v's own writer where it has one.
func marshal(v any) ([]byte, error) {
	if a, ok := v.(appender); ok {
		return a.appendJSON(make([]byte, 0, 1024)), nil
	}
	return json.Marshal(v)
}

// newRID returns a fresh request id in SGLang's style (32 hex digits).
func (s *Server) newRID() string {
	n := s.ridSeq.Add(1)
	return fmt.Sprintf("%016x%016x", splitmix64(uint64(s.start.UnixNano())), n)
}

// waitDone waits until r finished, the client went away or the server
// closes. A departed client aborts the request, as SGLang does when it
// notices a disconnect, freeing its KV cache.
func (s *Server) waitDone(ctx context.Context, r *request) bool {
	select {
	case <-r.done:
		return true
	case <-ctx.Done():
		s.engine.abort(r, "client disconnected")
		return false
	}
}

// holdFirstToken waits out an injected slow-first-token delay. A client that
// leaves meanwhile aborts its request, as in waitDone.
func (s *Server) holdFirstToken(ctx context.Context, r *request, delay time.Duration) bool {
	if !s.sleepCtx(ctx, delay) {
		s.engine.abort(r, "client disconnected")
		return false
	}
	return true
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	select {
	case <-s.closing:
		w.WriteHeader(http.StatusServiceUnavailable)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.NoMetrics {
		http.NotFound(w, r)
		return
	}
	if wantsPrometheus(r) {
		s.writePrometheus(w)
		return
	}
	writeJSON(w, http.StatusOK, s.Stats())
}
