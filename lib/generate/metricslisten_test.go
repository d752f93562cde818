package generate

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/synthpipe/synthpipe/lib/sim"
)

// --metrics-listen serves the run's figures in the Prometheus text format
// while it lasts: a scrape taken once answers are in shows them, with the
// server's own view per --url; the address goes away with the run.
func TestMetricsListen(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) {
		c.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: 40}
		c.StepTime = 2 * time.Millisecond
	})
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"generate", "--url", url, "--max-tokens", "64", "--concurrency", "2", "--progress-interval", "10ms",
			"--token-budget", "100k", "--metrics-listen", "127.0.0.1:0"}, strings.NewReader(sglangRequests(40, 5)), &syncBuffer{}, &stderr)
	}()
	addrRe := regexp.MustCompile(`metrics on (http://127\.0\.0\.1:[0-9]+/metrics)`)
	var endpoint string
	var families map[string]float64
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if endpoint == "" {
			if m := addrRe.FindStringSubmatch(stderr.String()); m != nil {
				endpoint = m[1]
			}
			time.Sleep(time.Millisecond)
			continue
		}
		families = scrape(t, endpoint)
		if families[`synthpipe_generate_records_total{outcome="ok"}`] >= 2 && families[`synthpipe_generate_server_running_requests{url="`+url+`"}`] > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if endpoint == "" {
		t.Fatalf("no metrics address on stderr:\n%s", stderr.String())
	}
	for name, want := range map[string]float64{
		`synthpipe_generate_budget_tokens`:                       100000,
		`synthpipe_generate_server_down{url="` + url + `"}`:      0,
		`synthpipe_generate_records_total{outcome="errors"}`:     0,
		`synthpipe_generate_soft_failures_total{kind="aborted"}`: 0,
	} {
		if got, ok := families[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	if ok := families[`synthpipe_generate_records_total{outcome="ok"}`]; ok < 2 || families[`synthpipe_generate_tokens_total{kind="completion"}`] != 41*ok {
		t.Errorf("ok %v, completion tokens %v: want 41 per answer", ok, families[`synthpipe_generate_tokens_total{kind="completion"}`])
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	if _, err := http.Get(endpoint); err == nil {
		t.Errorf("%s still answers after the run", endpoint)
	}
}

// scrape reads a Prometheus endpoint into name{labels} -> value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			key := name
			if len(m.GetLabel()) > 0 {
				var parts []string
				for _, l := range m.GetLabel() {
					parts = append(parts, l.GetName()+`="`+l.GetValue()+`"`)
				}
				key += "{" + strings.Join(parts, ",") + "}"
			}
			switch {
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}
