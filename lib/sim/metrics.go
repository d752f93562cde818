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

// The values of Config.LoadReports.
const (
	LoadReportsAll     = ""
	LoadReportsGetLoad = "get_load"
	LoadReportsNone    = "none"
)

// rankLoad is one data-parallel rank's load, as every load endpoint
// reports it.
type rankLoad struct {
	st   Stats
	tput float64 // generation throughput, tokens per second
	// waitingPrompt is the waiting requests' prompt tokens.
	waitingPrompt int
	// hitRate is the prefix cache's share of the latest admitted prompts.
	hitRate float64
}

func (s *Server) rankLoads() []rankLoad {
	loads := make([]rankLoad, len(s.engine.engines))
	for i, e := range s.engine.engines {
		loads[i].st = e.snapshotStats()
		e.mu.Lock()
		loads[i].tput = e.tput.last
		loads[i].hitRate = e.hitRate
		for _, r := range e.waiting {
			loads[i].waitingPrompt += r.promptTokens
		}
		e.mu.Unlock()
	}
	return loads
}

// kvUsage is a rank's KV cache occupancy, 0..1.
func (s *Server) kvUsage(l rankLoad) float64 {
	return float64(l.st.KVUsed) / float64(s.cfg.MaxTotalTokens)
}

// writePrometheus answers /metrics the way SGLang started with
// --enable-metrics does, with the gauges that describe its load: one series
// per data-parallel rank, labelled dp_rank when there are several, as
// SGLang labels them. cache_hit_rate is the prefix cache's share of the
// prompt tokens of the latest batch admitted (SGLang's, from its prefill
// log), and the counters prompt_tokens_total, cached_tokens_total (by
// cache_source, "device" here) and generation_tokens_total add up the run.
func (s *Server) writePrometheus(w http.ResponseWriter) {
	loads := s.rankLoads()
	labels := make([]string, len(loads))
	for i := range loads {
		labels[i] = fmt.Sprintf("{model_name=%q}", s.cfg.ModelName)
		if len(loads) > 1 {
			labels[i] = fmt.Sprintf("{dp_rank=\"%d\",model_name=%q}", i, s.cfg.ModelName)
		}
	}
	var b strings.Builder
	gauge := func(name, help string, value func(l rankLoad) float64) {
		fmt.Fprintf(&b, "# HELP sglang:%s %s\n# TYPE sglang:%s gauge\n", name, help, name)
		for i, l := range loads {
			fmt.Fprintf(&b, "sglang:%s%s %g\n", name, labels[i], value(l))
		}
	}
	gauge("num_running_reqs", "The number of running requests.", func(l rankLoad) float64 { return float64(l.st.Running) })
	gauge("num_used_tokens", "The number of used tokens.", func(l rankLoad) float64 { return float64(l.st.KVUsed) })
	gauge("token_usage", "The token usage.", s.kvUsage)
	gauge("gen_throughput", "The generation throughput (token/s).", func(l rankLoad) float64 { return l.tput })
	gauge("num_queue_reqs", "The number of requests in the waiting queue.", func(l rankLoad) float64 { return float64(l.st.Queued) })
	gauge("cache_hit_rate", "The prefix cache hit rate.", func(l rankLoad) float64 { return l.hitRate })
	counter := func(name, help, extra string, value func(l rankLoad) int64) {
		fmt.Fprintf(&b, "# HELP sglang:%s %s\n# TYPE sglang:%s counter\n", name, help, name)
		for i, l := range loads {
			lab := labels[i]
			if extra != "" {
				lab = "{" + extra + "," + lab[1:]
			}
			fmt.Fprintf(&b, "sglang:%s%s %d\n", name, lab, value(l))
		}
	}
	counter("prompt_tokens_total", "Number of prefill tokens processed.", "", func(l rankLoad) int64 { return l.st.PromptTokens })
	counter("cached_tokens_total", "Number of cached prompt tokens.", `cache_source="device"`, func(l rankLoad) int64 { return l.st.CachedTokens })
	counter("generation_tokens_total", "Number of generation tokens processed.", "", func(l rankLoad) int64 { return l.st.TokensGenerated })
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(b.String()))
}

// handleLoads answers GET /v1/loads as recent SGLang releases do whatever
// their flags: per data-parallel rank, the running and waiting requests, the
// KV cache's use and the generation throughput, and their sums.
func (s *Server) handleLoads(w http.ResponseWriter, r *http.Request) {
	if s.cfg.LoadReports != LoadReportsAll {
		http.NotFound(w, r)
		return
	}
	type load struct {
		DPRank         int     `json:"dp_rank"`
		Running        int     `json:"num_running_reqs"`
		Waiting        int     `json:"num_waiting_reqs"`
		Total          int     `json:"num_total_reqs"`
		UsedTokens     int     `json:"num_used_tokens"`
		MaxTotalTokens int     `json:"max_total_num_tokens"`
		TokenUsage     float64 `json:"token_usage"`
		GenThroughput  float64 `json:"gen_throughput"`
		CacheHitRate   float64 `json:"cache_hit_rate"`
		MaxRunningReqs int     `json:"max_running_requests"`
	}
	var out struct {
		Timestamp   string `json:"timestamp"`
		Version     string `json:"version"`
		DPRankCount int    `json:"dp_rank_count"`
		Loads       []load `json:"loads"`
		Aggregate   struct {
			Running int `json:"total_running_reqs"`
			Waiting int `json:"total_waiting_reqs"`
			Total   int `json:"total_reqs"`
		} `json:"aggregate"`
	}
	out.Timestamp, out.Version = time.Now().UTC().Format(time.RFC3339Nano), s.cfg.Version
	for i, l := range s.rankLoads() {
		out.Loads = append(out.Loads, load{
			DPRank: i, Running: l.st.Running, Waiting: l.st.Queued, Total: l.st.Running + l.st.Queued,
			UsedTokens: l.st.KVUsed, MaxTotalTokens: s.cfg.MaxTotalTokens, TokenUsage: s.kvUsage(l),
			GenThroughput: l.tput, CacheHitRate: l.hitRate, MaxRunningReqs: s.cfg.MaxRunningRequests,
		})
		out.Aggregate.Running += l.st.Running
		out.Aggregate.Waiting += l.st.Queued
	}
	out.DPRankCount = len(out.Loads)
	out.Aggregate.Total = out.Aggregate.Running + out.Aggregate.Waiting
	writeJSON(w, http.StatusOK, out)
}

// handleGetLoad answers GET /get_load, the older report SGLang's router
// balances by: per rank, running plus waiting requests (num_reqs), the
// waiting ones, and the KV cache's tokens with the waiting prompts'.
func (s *Server) handleGetLoad(w http.ResponseWriter, r *http.Request) {
	if s.cfg.LoadReports == LoadReportsNone {
		http.NotFound(w, r)
		return
	}
	type load struct {
		DPRank  int `json:"dp_rank"`
		Reqs    int `json:"num_reqs"`
		Waiting int `json:"num_waiting_reqs"`
		Tokens  int `json:"num_tokens"`
	}
	var out []load
	for i, l := range s.rankLoads() {
		out = append(out, load{DPRank: i, Reqs: l.st.Running + l.st.Queued, Waiting: l.st.Queued, Tokens: l.st.KVUsed + l.waitingPrompt})
	}
	writeJSON(w, http.StatusOK, out)
}
