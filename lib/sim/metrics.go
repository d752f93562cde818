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
// --enable-metrics does, with the gauges that describe its load: one series
// per data-parallel rank, labelled dp_rank when there are several, as
// SGLang labels them. Prefix caching is not modelled, so cache_hit_rate is 0.
func (s *Server) writePrometheus(w http.ResponseWriter) {
	type rankView struct {
		label string
		st    Stats
		tput  float64
	}
	views := make([]rankView, len(s.engine.engines))
	for i, e := range s.engine.engines {
		v := &views[i]
		v.st = e.snapshotStats()
		e.mu.Lock()
		v.tput = e.tput.last
		e.mu.Unlock()
		v.label = fmt.Sprintf("{model_name=%q}", s.cfg.ModelName)
		if len(views) > 1 {
			v.label = fmt.Sprintf("{dp_rank=\"%d\",model_name=%q}", i, s.cfg.ModelName)
		}
	}
	var b strings.Builder
	gauge := func(name, help string, value func(v rankView) float64) {
		fmt.Fprintf(&b, "# HELP sglang:%s %s\n# TYPE sglang:%s gauge\n", name, help, name)
		for _, v := range views {
			fmt.Fprintf(&b, "sglang:%s%s %g\n", name, v.label, value(v))
		}
	}
	gauge("num_running_reqs", "The number of running requests.", func(v rankView) float64 { return float64(v.st.Running) })
	gauge("num_used_tokens", "The number of used tokens.", func(v rankView) float64 { return float64(v.st.KVUsed) })
	gauge("token_usage", "The token usage.", func(v rankView) float64 { return float64(v.st.KVUsed) / float64(s.cfg.MaxTotalTokens) })
	gauge("gen_throughput", "The generation throughput (token/s).", func(v rankView) float64 { return v.tput })
	gauge("num_queue_reqs", "The number of requests in the waiting queue.", func(v rankView) float64 { return float64(v.st.Queued) })
	gauge("cache_hit_rate", "The prefix cache hit rate.", func(rankView) float64 { return 0 })
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(b.String()))
}
