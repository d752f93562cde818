package sim

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

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
