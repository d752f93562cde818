package sim

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// runEngine submits requests straight to an engine and waits for them all.
// All are queued before the engine's first step, so that what the test sees
// (a full batch, a queue behind it) does not depend on how fast the machine
// submits them compared with how fast the engine drains them.
func runEngine(t *testing.T, cfg Config, n, promptLen, maxNew int) (*engine, []*request) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	e := stoppedEngine(&cfg)
	t.Cleanup(e.close)
	var reqs []*request
	for i := range n {
		key := keyOfIDs(prompt(promptLen, i))
		pl := makePlan(&cfg, key, cfg.Lengths.sample(newRNG(cfg.Seed, key)), genParams{maxNew: maxNew, skipSpecial: true})
		r := newRequest("r"+string(rune('a'+i%26))+time.Now().Format("150405.000000000"), promptLen, pl, false)
		if err := e.submit(r); err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r)
	}
	e.start()
	for _, r := range reqs {
		<-r.done // a request that never ends fails the test at go test's -timeout
	}
	return e, reqs
}

func TestEngineBatchesWithinBudget(t *testing.T) {
	cfg := Default()
	cfg.MaxTotalTokens = 100000
	cfg.MaxRunningRequests = 16
	cfg.Lengths = LengthDist{Kind: LengthUniform, Min: 5, Max: 50}
	e, reqs := runEngine(t, cfg, 100, 20, 64)
	st := e.snapshotStats()
	if st.MaxRunning != 16 {
		t.Errorf("MaxRunning %d, want the cap 16", st.MaxRunning)
	}
	if st.MaxQueued == 0 {
		t.Errorf("no queue formed behind a full batch")
	}
	if st.Retractions != 0 || st.Completed != 100 || st.KVUsed != 0 || st.Running != 0 {
		t.Errorf("stats %+v", st)
	}
	var tokens int64
	for _, r := range reqs {
		if r.result.finish.kind != finishStop {
			t.Fatalf("finish %+v", r.result.finish)
		}
		tokens += int64(r.result.outputLen)
	}
	if tokens != st.TokensGenerated {
		t.Errorf("TokensGenerated %d, responses hold %d", st.TokensGenerated, tokens)
	}
}

func TestEngineRetractsUnderKVPressure(t *testing.T) {
	cfg := Default()
	cfg.MaxTotalTokens = 1000
	cfg.MaxRunningRequests = 32
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 150}
	e, reqs := runEngine(t, cfg, 40, 50, 200)
	st := e.snapshotStats()
	if st.MaxKVUsed > cfg.MaxTotalTokens {
		t.Fatalf("KV use %d exceeded capacity %d", st.MaxKVUsed, cfg.MaxTotalTokens)
	}
	if st.Retractions == 0 {
		t.Fatalf("no retraction under pressure: %+v", st)
	}
	if st.MaxQueued == 0 || st.Completed != 40 {
		t.Fatalf("stats %+v", st)
	}
	// Every running request decodes a token per step: the batch summed over
	// the steps is the tokens made; a queue formed, never longer than its peak.
	if st.RunningSteps != st.TokensGenerated || st.QueuedSteps == 0 || st.QueuedSteps > st.Steps*int64(st.MaxQueued) {
		t.Fatalf("queue and batch over the steps: %+v", st)
	}
	var retracted int64
	for _, r := range reqs {
		retracted += r.result.retractions
		if r.result.outputLen != 151 {
			t.Fatalf("a retracted request lost tokens: %d", r.result.outputLen)
		}
	}
	if retracted != st.Retractions {
		t.Fatalf("per-request retractions %d, total %d", retracted, st.Retractions)
	}
}

func TestEngineStepTimeModel(t *testing.T) {
	cfg := Default()
	cfg.StepTime = 2 * time.Millisecond
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 24}
	start := time.Now()
	e, _ := runEngine(t, cfg, 4, 10, 100)
	// 25 steps (24 tokens and EOS), all four in one batch: the steps are
	// counted; time only bounds them from below (a loaded machine may be
	// slower, never faster).
	if st := e.snapshotStats(); st.Steps != 25 || st.MaxRunning != 4 {
		t.Fatalf("%d steps with at most %d running, want 25 with all 4", st.Steps, st.MaxRunning)
	}
	if d := time.Since(start); d < 45*time.Millisecond {
		t.Fatalf("25 steps of 2ms took %v", d)
	}
}

// pausedEngine swaps the server's engine for one that runs no step until
// the returned start is called, so that a test can have every request
// queued first, however slowly its HTTP requests arrive.
func pausedEngine(s *Server) (start func()) {
	old := s.engine.engines[0]
	e := stoppedEngine(&s.cfg)
	s.engine.engines[0] = e
	old.close()
	return e.start
}

// TestBatchingOverHTTP drives the KV budget through the API and checks
// every answer belongs to its own prompt. All 48 requests are queued before
// the first step: the queue and the retractions under a full KV cache then
// do not depend on how fast this machine sends them.
func TestBatchingOverHTTP(t *testing.T) {
	cfg := Default()
	cfg.MaxTotalTokens = 1000
	cfg.MaxRunningRequests = 8
	cfg.StepTime = 200 * time.Microsecond
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 120}
	s, url := startSim(t, cfg)
	start := pausedEngine(s)
	const n = 48
	var wg sync.WaitGroup
	var mu sync.Mutex
	var retractions int64
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := prompt(40, i)
			code, _, body := post(t, url+"/generate", map[string]any{"input_ids": in, "sampling_params": map[string]any{"max_new_tokens": 150}})
			if code != 200 {
				t.Errorf("status %d: %s", code, body)
				return
			}
			doc := gjson.ParseBytes(body)
			ids := ints(doc.Get("output_ids"))
			if doc.Get("meta_info.finish_reason.type").String() == "stop" {
				ids = ids[:len(ids)-1]
			}
			if !slices.Equal(ids, s.ExpectedOutputIDs(in, len(ids))) {
				t.Errorf("request %d got output ids of another prompt", i)
			}
			mu.Lock()
			retractions += doc.Get("meta_info.num_retractions").Int()
			mu.Unlock()
		}()
	}
	eventually(t, "every request queued", func() bool { return s.Stats().Queued == n })
	start()
	wg.Wait()
	st := s.Stats()
	if st.MaxRunning > 8 || st.MaxKVUsed > 1000 || st.MaxQueued == 0 || st.Retractions == 0 {
		t.Fatalf("stats %+v", st)
	}
	if retractions != st.Retractions {
		t.Fatalf("num_retractions in answers %d, Stats %d", retractions, st.Retractions)
	}
}

func TestClientDisconnectAborts(t *testing.T) {
	for _, stream := range []bool{false, true} {
		cfg := Default()
		cfg.StepTime = time.Millisecond
		cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 5000}
		s, url := startSim(t, cfg)
		ctx, cancel := context.WithCancel(context.Background())
		body := `{"input_ids":[1,2,3],"stream":` + map[bool]string{false: "false", true: "true"}[stream] + `,"sampling_params":{"max_new_tokens":6000}}`
		req, _ := http.NewRequestWithContext(ctx, "POST", url+"/generate", stringsReader(body))
		errc := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_, err = readAllErr(resp)
			}
			errc <- err
		}()
		eventually(t, "request running", func() bool { return s.Stats().Running == 1 })
		cancel()
		<-errc
		eventually(t, "abort on disconnect", func() bool {
			st := s.Stats()
			return st.Aborted == 1 && st.Running == 0 && st.KVUsed == 0
		})
	}
}
