package sim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/servermetrics"
)

// With --dp-size 2 each rank is a scheduler of its own: four requests dealt
// in turn to two ranks that run one request each leave one running and one
// queued on each, and /metrics reports both ranks, which servermetrics adds
// up.
func TestDataParallelMetrics(t *testing.T) {
	cfg := Default()
	cfg.DataParallel = 2
	cfg.MaxRunningRequests = 1
	cfg.MaxTotalTokens = 100
	// One step admits and decodes once, then the engine sleeps for the
	// rest of the test: the state it leaves can be read at leisure.
	cfg.StepTime = time.Hour
	s, url := startSim(t, cfg)
	for i := range 4 {
		go func() {
			body := fmt.Sprintf(`{"rid":"r%d","input_ids":[%d,5,6,7],"sampling_params":{"max_new_tokens":50}}`, i, 10+i)
			req, _ := http.NewRequest("POST", url+"/generate", strings.NewReader(body))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	var snap servermetrics.Snapshot
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		snap, err = servermetrics.Fetch(context.Background(), url, servermetrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.Running == 2 && st.Queued == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never 2 running and 2 queued: %+v", s.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The gauges were read before the last look at Stats: read again now
	// that the engines sleep.
	snap, err := servermetrics.Fetch(context.Background(), url, servermetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Each running request holds its 4 prompt tokens and its first output
	// token: 5 of a rank's 100.
	if snap.Ranks != 2 || snap.Running != 2 || snap.Queued != 2 || snap.UsedTokens != 10 ||
		snap.TokenUsage != 0.05 || snap.MaxTokenUsage != 0.05 || snap.Model != cfg.ModelName {
		t.Errorf("snapshot %+v", snap)
	}
	text := getAccept(t, url+"/metrics", "text/plain")
	for _, want := range []string{
		`sglang:num_running_reqs{dp_rank="0",model_name="sim/llm-sim-8b"} 1`,
		`sglang:num_queue_reqs{dp_rank="1",model_name="sim/llm-sim-8b"} 1`,
		`sglang:cache_hit_rate{dp_rank="1",model_name="sim/llm-sim-8b"} 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, text)
		}
	}
	// A rid in flight on one rank is refused on the other: the next turn
	// is rank 0's, and r1 or r3 is on rank 1.
	for _, rid := range []string{"r1", "r3"} {
		code, _, body := post(t, url+"/generate", `{"rid":"`+rid+`","input_ids":[1,2],"sampling_params":{"max_new_tokens":5}}`)
		if code != http.StatusBadRequest {
			t.Errorf("rid %s again: HTTP %d %s", rid, code, body)
		}
	}
}

// GET /api/v1/key reports the limit, what the key had spent and what chat
// answers cost since; a key with nothing left is refused with 402.
func TestKeyLimit(t *testing.T) {
	cfg := Default()
	cfg.PromptPrice, cfg.CompletionPrice = 0.001, 0.002
	cfg.KeyLimit, cfg.KeyUsage, cfg.KeyRateLimit = 1.0, 0.25, 50
	cfg.APIKey = "sk-test"
	s, url := startSim(t, cfg)
	auth := []string{"Authorization", "Bearer sk-test"}
	key := func() servermetrics.Key {
		t.Helper()
		k, err := servermetrics.FetchKey(context.Background(), url+"/api/v1", servermetrics.Options{APIKey: "sk-test"})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if k := key(); !k.Limited || k.Limit != 1 || k.Usage != 0.25 || k.Remaining != 0.75 || k.RateRequests != 50 {
		t.Errorf("before: %+v", k)
	}
	code, _, answer := post(t, url+"/api/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hello there"}],"max_tokens":10}`, auth...)
	if code != 200 {
		t.Fatalf("chat: %d %s", code, answer)
	}
	if k := key(); k.Usage <= 0.25 || fmt.Sprintf("%.9f", k.Usage) != fmt.Sprintf("%.9f", s.Spent()) || fmt.Sprintf("%.9f", k.Remaining) != fmt.Sprintf("%.9f", 1-s.Spent()) {
		t.Errorf("after one answer: %+v, server spent %v", k, s.Spent())
	}
	// Spend the rest: answers of 10 tokens cost at least 0.02 each.
	for range 60 {
		code, _, answer = post(t, url+"/api/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hello there"}],"max_tokens":10}`, auth...)
		if code != 200 {
			break
		}
	}
	if code != http.StatusPaymentRequired {
		t.Fatalf("a spent key: HTTP %d %s", code, answer)
	}
	if k := key(); k.Remaining != 0 || k.Usage < 1 {
		t.Errorf("spent: %+v", k)
	}
	// A wrong key is refused, and says so.
	_, err := servermetrics.FetchKey(context.Background(), url+"/api/v1", servermetrics.Options{APIKey: "wrong"})
	var ke *servermetrics.KeyError
	if !errors.As(err, &ke) || ke.Status != http.StatusUnauthorized {
		t.Errorf("wrong key: %v", err)
	}
}

// Without a limit, limit and limit_remaining are null.
func TestKeyNoLimit(t *testing.T) {
	_, url := startSim(t, Default())
	_, body := get(t, url+"/api/v1/key")
	if !strings.Contains(string(body), `"limit":null`) || !strings.Contains(string(body), `"limit_remaining":null`) {
		t.Errorf("/api/v1/key: %s", body)
	}
	k, err := servermetrics.ParseKey(body)
	if err != nil || k.Limited || k.Usage != 0 {
		t.Errorf("ParseKey: %+v, %v", k, err)
	}
}
