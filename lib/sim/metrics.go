package sim

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// throughputWindow is how many decode steps the generation throughput is
// measured over, as SGLang's scheduler logs its decode stats every 40
// steps (--decode-log-interval).
const throughputWindow = 40

// throughput measures tokens generated per second of wall time over windows
// of throughputWindow busy steps, as SGLang's sglang:gen_throughput does.
// A window cut short by an idle engine is dropped; the gauge keeps the last
// full window's value, as SGLang's does. Guarded by engine.mu.
type throughput struct {
	tic    time.Time
	steps  int
	tokens int64
	last   float64
}

// step counts one decode step of batch tokens.
func (t *throughput) step(batch int) {
	if t.steps == 0 {
		// The window starts now: this step's tokens were made before it.
		t.tic = time.Now()
		t.steps = 1
		return
	}
	t.steps++
	t.tokens += int64(batch)
	if t.steps > throughputWindow {
		if secs := time.Since(t.tic).Seconds(); secs > 0 {
			t.last = float64(t.tokens) / secs
		}
		t.steps, t.tokens = 0, 0
	}
}

// idle drops a window the engine did not fill.
func (t *throughput) idle() { t.steps, t.tokens = 0, 0 }

// wantsPrometheus reports whether a /metrics client asks for Prometheus
// text (scrapers and synthpipe's estimate send Accept: text/plain or
// OpenMetrics) rather than the JSON counters.
func wantsPrometheus(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, "text/plain") || strings.Contains(accept, "openmetrics")
}

// writePrometheus answers /metrics the way SGLang started with
// --enable-metrics does, with the gauges that describe its load.
func (s *Server) writePrometheus(w http.ResponseWriter) {
	st := s.engine.snapshotStats()
	s.engine.mu.Lock()
	genThroughput := s.engine.tput.last
	s.engine.mu.Unlock()
	label := fmt.Sprintf("{model_name=%q}", s.cfg.ModelName)
	var b strings.Builder
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(&b, "# HELP sglang:%s %s\n# TYPE sglang:%s gauge\nsglang:%s%s %g\n", name, help, name, name, label, v)
	}
	gauge("num_running_reqs", "The number of running requests.", float64(st.Running))
	gauge("num_used_tokens", "The number of used tokens.", float64(st.KVUsed))
	gauge("token_usage", "The token usage.", float64(st.KVUsed)/float64(s.cfg.MaxTotalTokens))
	gauge("gen_throughput", "The generation throughput (token/s).", genThroughput)
	gauge("num_queue_reqs", "The number of requests in the waiting queue.", float64(st.Queued))
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(b.String()))
}
