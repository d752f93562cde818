package runview

import (
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/synthpipe/synthpipe/lib/statusfile"
)

// --metrics-listen serves the status file's figures in the Prometheus text
// format for users who scrape long jobs: each scrape takes the run's state
// then, as a status file rewrite does.

const metricsNamespace = "synthpipe_generate"

// runCollector turns the run's status into metrics on every scrape.
type runCollector struct {
	status func() *statusfile.Status
}

// The metrics, by name; each is described with its labels once.
var (
	descRecords   = desc("records_total", "Records by outcome: ok, errors, cut (by a budget), cancelled (in flight at a stop).", "outcome")
	descRead      = desc("records_read_total", "Records handed on from the input.")
	descAlready   = desc("records_already", "Records in the --already files, written by earlier runs.")
	descTotal     = desc("records_expected", "Records expected (--total, or counted in a regular file); 0 unknown.")
	descInFlight  = desc("in_flight", "Requests in flight.")
	descSoft      = desc("soft_failures_total", "Answers written with a soft failure: truncated, empty or aborted.", "kind")
	descRetries   = desc("retries_total", "Attempts after a record's first.")
	descRateLimit = desc("rate_limited_total", "Attempts answered HTTP 429.")
	descTokens    = desc("tokens_total", "Tokens of this run's answers: prompt, completion.", "kind")
	descSpent     = desc("budget_tokens_spent", "Tokens counted against --token-budget, earlier runs' included.")
	descBudget    = desc("budget_tokens", "--token-budget; 0 none.")
	descUSD       = desc("spent_usd_total", "Money spent, USD.")
	descBudgetUSD = desc("budget_usd", "--cost-budget, USD; 0 none.")
	descETA       = desc("eta_seconds", "Time left, when known.")
	descDown      = desc("server_down", "1 while the server is sidelined after connection failures.", "url")
	descRunning   = desc("server_running_requests", "The server's own running requests (SGLang /metrics).", "url")
	descQueued    = desc("server_queued_requests", "The server's own waiting queue (SGLang /metrics).", "url")
	descKV        = desc("server_kv_usage", "The server's KV cache occupancy, 0 to 1 (SGLang /metrics).", "url")
	descGen       = desc("server_gen_throughput", "Tokens per second the server generates (SGLang /metrics).", "url")
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(metricsNamespace, "", name), help, labels, nil)
}

func (c *runCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c *runCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.status()
	r := st.Records
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for outcome, n := range map[string]int64{"ok": r.OK, "errors": r.Errors, "cut": r.Cut, "cancelled": r.Cancelled} {
		counter(descRecords, float64(n), outcome)
	}
	counter(descRead, float64(r.Read))
	gauge(descAlready, float64(r.Already))
	gauge(descTotal, float64(r.Total))
	gauge(descInFlight, float64(r.InFlight))
	for kind, n := range map[string]int64{"truncated": r.Truncated, "empty": r.Empty, "aborted": r.Aborted} {
		counter(descSoft, float64(n), kind)
	}
	counter(descRetries, float64(r.Retries))
	counter(descRateLimit, float64(r.RateLimited))
	counter(descTokens, float64(st.Tokens.Prompt), "prompt")
	counter(descTokens, float64(st.Tokens.Completion), "completion")
	gauge(descSpent, float64(st.Tokens.Spent))
	gauge(descBudget, float64(st.Tokens.Budget))
	counter(descUSD, st.Cost.SpentUSD)
	gauge(descBudgetUSD, st.Cost.BudgetUSD)
	if st.ETASeconds != nil {
		gauge(descETA, *st.ETASeconds)
	}
	for _, s := range st.Servers {
		down := 0.0
		if s.Down {
			down = 1
		}
		gauge(descDown, down, s.URL)
		if m := s.Metrics; m != nil {
			gauge(descRunning, m.Running, s.URL)
			gauge(descQueued, m.Queued, s.URL)
			gauge(descKV, m.TokenUsage, s.URL)
			gauge(descGen, m.GenThroughput, s.URL)
		}
	}
}

// ServeMetrics listens on addr and serves /metrics, the figures of status
// at each scrape, until the returned stop is called. The address actually
// listened on (port 0 picks a free one) is returned for the start-up note;
// an address it cannot listen on is the listener's error.
func ServeMetrics(addr string, status func() *statusfile.Status) (string, func(), error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(&runCollector{status: status})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			ln.Close()
		}
	}()
	return ln.Addr().String(), func() { srv.Close() }, nil
}
