package sim

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

func getAccept(t *testing.T, url, accept string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: HTTP %d: %s", url, resp.StatusCode, body)
	}
	return string(body)
}

// A Prometheus client gets SGLang's gauges; after a run of more than one
// window of decode steps, gen_throughput is the tokens per second of the
// latest window.
func TestMetricsPrometheus(t *testing.T) {
	cfg := Default()
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 100}
	_, url := startSim(t, cfg)
	text := getAccept(t, url+"/metrics", "text/plain;version=0.0.4")
	for _, want := range []string{
		"# TYPE sglang:gen_throughput gauge\n",
		`sglang:gen_throughput{model_name="sim/llm-sim-8b"} 0` + "\n",
		`sglang:num_running_reqs{model_name="sim/llm-sim-8b"} 0` + "\n",
		`sglang:num_queue_reqs{model_name="sim/llm-sim-8b"} 0` + "\n",
		`sglang:token_usage{model_name="sim/llm-sim-8b"} 0` + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, text)
		}
	}
	code, _, body := post(t, url+"/generate", `{"input_ids":[5,6,7],"sampling_params":{"max_new_tokens":200}}`)
	if code != 200 {
		t.Fatalf("generate: %d %s", code, body)
	}
	text = getAccept(t, url+"/metrics", "application/openmetrics-text;version=1.0.0,text/plain;q=0.5")
	m := regexp.MustCompile(`sglang:gen_throughput\{[^}]*\} (\S+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no gen_throughput in\n%s", text)
	}
	if v, err := strconv.ParseFloat(m[1], 64); err != nil || v <= 0 {
		t.Errorf("gen_throughput %s after 101 steps, want a positive rate", m[1])
	}
	// Anyone else still gets the JSON counters.
	if _, body := get(t, url+"/metrics"); gjson.GetBytes(body, "tokens_generated").Int() != 101 {
		t.Errorf("JSON /metrics: %s", body)
	}
}

// OpenRouter's base path serves the price list and the chat route.
func TestOpenRouterBasePath(t *testing.T) {
	cfg := Default()
	cfg.PromptPrice, cfg.CompletionPrice = 0.6e-6, 2.5e-6
	_, url := startSim(t, cfg)
	_, body := get(t, url+"/api/v1/models")
	model := gjson.GetBytes(body, "data.0")
	if model.Get("id").String() != cfg.ModelName || model.Get("pricing.prompt").String() != "0.0000006" ||
		model.Get("pricing.completion").String() != "0.0000025" {
		t.Errorf("/api/v1/models: %s", body)
	}
	code, _, answer := post(t, url+"/api/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hello there"}],"max_tokens":10}`)
	if code != 200 {
		t.Fatalf("chat: %d %s", code, answer)
	}
	u := gjson.GetBytes(answer, "usage")
	want := float64(u.Get("prompt_tokens").Int())*0.6e-6 + float64(u.Get("completion_tokens").Int())*2.5e-6
	if got := u.Get("cost").Float(); fmt.Sprintf("%.12f", got) != fmt.Sprintf("%.12f", want) {
		t.Errorf("usage.cost %v, want the listed prices' %v", got, want)
	}
}

// TestNoMetrics: --no-metrics answers /metrics as SGLang does without
// --enable-metrics, while /generate works as ever.
func TestNoMetrics(t *testing.T) {
	cfg := Default()
	cfg.NoMetrics = true
	_, url := startSim(t, cfg)
	if code, _ := get(t, url+"/metrics"); code != http.StatusNotFound {
		t.Fatalf("/metrics answered %d, want 404", code)
	}
	if code, _, body := post(t, url+"/generate", `{"input_ids":[5,6,7],"sampling_params":{"max_new_tokens":4}}`); code != 200 {
		t.Fatalf("generate: %d %s", code, body)
	}
}

// The JSON load reports tell running from waiting requests per rank, as
// SGLang's do whatever its flags, and LoadReports hides them as a server
// that is not SGLang, or an older release, would.
func TestLoadReports(t *testing.T) {
	cfg := Default()
	cfg.NoMetrics = true
	cfg.DataParallel = 2
	cfg.MaxRunningRequests = 1
	cfg.MaxTotalTokens = 4000
	cfg.StepTime = 50 * time.Millisecond // the five answers take minutes
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 3000}
	s, url := startSim(t, cfg)
	for i := range 5 {
		go func() {
			// Closing the server ends them.
			body := fmt.Sprintf(`{"input_ids":[5,6,%d],"sampling_params":{"max_new_tokens":3000}}`, 7+i)
			if resp, err := http.Post(url+"/generate", "application/json", strings.NewReader(body)); err == nil {
				resp.Body.Close()
			}
		}()
	}
	// Two ranks of one running request each: three wait.
	for st := s.Stats(); st.Running != 2 || st.Queued != 3; st = s.Stats() {
		runtime.Gosched()
	}
	code, body := get(t, url+"/v1/loads")
	loads := gjson.ParseBytes(body)
	if code != 200 || loads.Get("dp_rank_count").Int() != 2 || loads.Get("aggregate.total_running_reqs").Int() != 2 ||
		loads.Get("aggregate.total_waiting_reqs").Int() != 3 || loads.Get("aggregate.total_reqs").Int() != 5 {
		t.Errorf("/v1/loads: %d %s", code, body)
	}
	for i, rank := range loads.Get("loads").Array() {
		if rank.Get("dp_rank").Int() != int64(i) || rank.Get("num_running_reqs").Int() != 1 ||
			rank.Get("num_running_reqs").Int()+rank.Get("num_waiting_reqs").Int() != rank.Get("num_total_reqs").Int() ||
			rank.Get("max_total_num_tokens").Int() != 4000 || rank.Get("num_used_tokens").Int() <= 0 ||
			rank.Get("token_usage").Float() != float64(rank.Get("num_used_tokens").Int())/4000 {
			t.Errorf("/v1/loads rank %d: %s", i, rank.Raw)
		}
	}
	code, body = get(t, url+"/get_load")
	ranks := gjson.ParseBytes(body).Array()
	if code != 200 || len(ranks) != 2 || ranks[0].Get("num_reqs").Int()+ranks[1].Get("num_reqs").Int() != 5 ||
		ranks[0].Get("num_waiting_reqs").Int()+ranks[1].Get("num_waiting_reqs").Int() != 3 ||
		ranks[0].Get("num_tokens").Int() <= 0 {
		t.Errorf("/get_load: %d %s", code, body)
	}

	for _, tc := range []struct {
		reports     string
		loads, load int
	}{{LoadReportsGetLoad, 404, 200}, {LoadReportsNone, 404, 404}} {
		cfg := Default()
		cfg.LoadReports = tc.reports
		_, url := startSim(t, cfg)
		if code, _ := get(t, url+"/v1/loads"); code != tc.loads {
			t.Errorf("LoadReports %q: /v1/loads answered %d, want %d", tc.reports, code, tc.loads)
		}
		if code, _ := get(t, url+"/get_load"); code != tc.load {
			t.Errorf("LoadReports %q: /get_load answered %d, want %d", tc.reports, code, tc.load)
		}
	}
}
