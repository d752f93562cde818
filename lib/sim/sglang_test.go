package sim

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

func TestGenerateStopsAtEOS(t *testing.T) {
	cfg := Default()
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 10}
	s, url := startSim(t, cfg)
	in := prompt(12, 1)
	code, _, body := post(t, url+"/generate", map[string]any{
		"input_ids": in, "rid": "r-1", "sampling_params": map[string]any{"max_new_tokens": 64, "temperature": 0.7},
	})
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	doc := gjson.ParseBytes(body)
	ids := ints(doc.Get("output_ids"))
	want := append(ExpectedOutputIDs(in, 10), cfg.EOSTokenID)
	if !slices.Equal(ids, want) {
		t.Fatalf("output_ids %v, want %v", ids, want)
	}
	meta := doc.Get("meta_info")
	checks := map[string]any{
		"id": "r-1", "finish_reason.type": "stop", "finish_reason.matched": float64(cfg.EOSTokenID),
		"prompt_tokens": 12.0, "completion_tokens": 11.0, "cached_tokens": 0.0, "num_retractions": 0.0,
	}
	for path, want := range checks {
		if got := meta.Get(path).Value(); got != want {
			t.Errorf("meta_info.%s = %v, want %v", path, got, want)
		}
	}
	if meta.Get("e2e_latency").Float() <= 0 {
		t.Errorf("e2e_latency missing: %s", meta.Raw)
	}
	if got, want := doc.Get("text").String(), s.RenderText(want); got != want {
		t.Errorf("text %q, want %q", got, want)
	}
}

func TestGenerateLengthAndStopTrim(t *testing.T) {
	cfg := Default()
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 100}
	s, url := startSim(t, cfg)
	in := prompt(5, 2)

	_, _, body := post(t, url+"/generate", map[string]any{"input_ids": in, "sampling_params": map[string]any{"max_new_tokens": 7}})
	doc := gjson.ParseBytes(body)
	if fr := doc.Get("meta_info.finish_reason"); fr.Get("type").String() != "length" || fr.Get("length").Int() != 7 {
		t.Fatalf("finish_reason %s, want length 7", fr.Raw)
	}
	if !slices.Equal(ints(doc.Get("output_ids")), ExpectedOutputIDs(in, 7)) {
		t.Fatalf("output_ids differ from ExpectedOutputIDs")
	}

	// A stop token id ends the answer; the id stays in output_ids and
	// leaves the text unless no_stop_trim.
	stopID := ExpectedOutputIDs(in, 5)[4]
	for _, noTrim := range []bool{false, true} {
		_, _, body = post(t, url+"/generate", map[string]any{"input_ids": in, "sampling_params": map[string]any{
			"max_new_tokens": 50, "stop_token_ids": []int{stopID}, "no_stop_trim": noTrim}})
		doc = gjson.ParseBytes(body)
		ids := ints(doc.Get("output_ids"))
		if len(ids) != 5 || ids[4] != stopID || doc.Get("meta_info.finish_reason.matched").Int() != int64(stopID) {
			t.Fatalf("stop token: %s", body)
		}
		wantText := s.RenderText(ids[:4])
		if noTrim {
			wantText = s.RenderText(ids)
		}
		if doc.Get("text").String() != wantText {
			t.Errorf("no_stop_trim=%v: text %q, want %q", noTrim, doc.Get("text").String(), wantText)
		}
	}

	// A stop string is reported as matched and trimmed from the text.
	third := wordOf(ExpectedOutputIDs(in, 3)[2])
	_, _, body = post(t, url+"/generate", map[string]any{"input_ids": in, "sampling_params": map[string]any{
		"max_new_tokens": 50, "stop": []string{" " + third}}})
	doc = gjson.ParseBytes(body)
	if doc.Get("meta_info.finish_reason.matched").String() != " "+third {
		t.Fatalf("stop string: %s", body)
	}
}

func TestGenerateLogprobs(t *testing.T) {
	_, url := startSim(t, Default())
	_, _, body := post(t, url+"/generate", map[string]any{"input_ids": []int{4}, "return_logprob": true, "sampling_params": map[string]any{"max_new_tokens": 3}})
	lp := gjson.GetBytes(body, "meta_info.output_token_logprobs")
	ids := ints(gjson.GetBytes(body, "output_ids"))
	if len(lp.Array()) != 3 || lp.Get("1.1").Int() != int64(ids[1]) || lp.Get("0.0").Float() > 0 {
		t.Fatalf("output_token_logprobs %s for ids %v", lp.Raw, ids)
	}
}

func TestAbortAllAndClose(t *testing.T) {
	cfg := Default()
	cfg.MaxRunningRequests = 2
	cfg.StepTime = 2 * time.Millisecond
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 1000}
	s, url := startSim(t, cfg)
	results := make(chan string, 5)
	for i := range 5 {
		go func() {
			_, _, body := post(t, url+"/generate", map[string]any{"input_ids": []int{i}, "sampling_params": map[string]any{"max_new_tokens": 2000}})
			results <- gjson.GetBytes(body, "meta_info.finish_reason.type").String()
		}()
	}
	eventually(t, "batch full and queue formed", func() bool { st := s.Stats(); return st.Running == 2 && st.Queued == 3 })
	post(t, url+"/abort_request", map[string]any{"abort_all": true})
	for range 5 {
		if got := <-results; got != "abort" {
			t.Fatalf("finish %q after abort_all", got)
		}
	}
	if st := s.Stats(); st.Aborted != 5 || st.KVUsed != 0 || st.Running+st.Queued != 0 {
		t.Fatalf("stats %+v", st)
	}

	// Close releases a hanging request by dropping its connection.
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("POST", url+"/generate", stringsReader(`{"input_ids":[1]}`))
		req.Header.Set(FaultHeader, "hang")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	eventually(t, "hang injected", func() bool { return s.Stats().Faults[FaultHang] == 1 })
	s.Close()
	if err := <-errc; err == nil {
		t.Fatal("a hanging request got an answer at Close")
	}
}

func TestGenerateValidation(t *testing.T) {
	cfg := Default()
	cfg.ContextLength = 100
	_, url := startSim(t, cfg)
	cases := map[string]any{
		"not json":       "{",
		"no prompt":      map[string]any{"sampling_params": map[string]any{}},
		"batched":        map[string]any{"input_ids": [][]int{{1}, {2}}},
		"batched, space": `{"input_ids": [ [1], [2]]}`,
		"past the vocab": map[string]any{"input_ids": []int{1, cfg.VocabSize}},
		"a fraction":     map[string]any{"input_ids": []any{1, 2.5}},
		"temperature":    map[string]any{"input_ids": []int{1}, "sampling_params": map[string]any{"temperature": -1}},
		"top_p":          map[string]any{"input_ids": []int{1}, "sampling_params": map[string]any{"top_p": 0}},
		"context":        map[string]any{"input_ids": prompt(100, 0)},
		"context+output": map[string]any{"input_ids": prompt(50, 0), "sampling_params": map[string]any{"max_new_tokens": 60}},
	}
	for name, body := range cases {
		code, _, resp := post(t, url+"/generate", body)
		if code != http.StatusBadRequest || gjson.GetBytes(resp, "error.message").String() == "" {
			t.Errorf("%s: status %d body %s, want 400 with error.message", name, code, resp)
		}
	}
}

func TestGenerateTextPrompt(t *testing.T) {
	s, url := startSim(t, Default())
	_, _, body := post(t, url+"/generate", map[string]any{"text": "Hello there, simulator!", "sampling_params": map[string]any{"max_new_tokens": 4}})
	doc := gjson.ParseBytes(body)
	if doc.Get("meta_info.prompt_tokens").Int() != 6 {
		t.Errorf("prompt_tokens %d, want 6 (23 bytes / 4)", doc.Get("meta_info.prompt_tokens").Int())
	}
	if !slices.Equal(ints(doc.Get("output_ids")), s.ExpectedTextOutputIDs("Hello there, simulator!", 4)) {
		t.Errorf("text prompt output_ids differ")
	}
}

func TestGenerateStreamCumulativeAndIncremental(t *testing.T) {
	for _, incremental := range []bool{false, true} {
		t.Run(fmt.Sprintf("incremental=%v", incremental), func(t *testing.T) {
			cfg := Default()
			cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 30}
			cfg.StepTime = time.Millisecond
			cfg.IncrementalStreaming = incremental
			s, url := startSim(t, cfg)
			in := prompt(8, 3)
			code, hdr, body := post(t, url+"/generate", map[string]any{"input_ids": in, "stream": true, "sampling_params": map[string]any{"max_new_tokens": 100}})
			if code != 200 || hdr.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d, content type %q", code, hdr.Get("Content-Type"))
			}
			events, _ := sseEvents(body)
			if len(events) < 3 || events[len(events)-1] != "[DONE]" {
				t.Fatalf("want several chunks ending in [DONE], got %q", events)
			}
			var ids []int
			var text string
			for i, ev := range events[:len(events)-1] {
				chunk := gjson.Parse(ev)
				fr := chunk.Get("meta_info.finish_reason")
				if last := i == len(events)-2; last != fr.IsObject() {
					t.Fatalf("chunk %d: finish_reason %s", i, fr.Raw)
				}
				if incremental {
					ids = append(ids, ints(chunk.Get("output_ids"))...)
					text += chunk.Get("text").String()
				} else {
					ids, text = ints(chunk.Get("output_ids")), chunk.Get("text").String()
				}
			}
			want := append(ExpectedOutputIDs(in, 30), cfg.EOSTokenID)
			if !slices.Equal(ids, want) {
				t.Fatalf("streamed ids %v, want %v", ids, want)
			}
			if text != s.RenderText(want) {
				t.Fatalf("streamed text %q, want %q", text, s.RenderText(want))
			}
		})
	}
}

func TestDuplicateRIDInFlight(t *testing.T) {
	cfg := Default()
	cfg.StepTime = 2 * time.Millisecond
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 200}
	s, url := startSim(t, cfg)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		post(t, url+"/generate", map[string]any{"input_ids": []int{1, 2}, "rid": "same", "sampling_params": map[string]any{"max_new_tokens": 300}})
	}()
	eventually(t, "first request running", func() bool { return s.Stats().Running == 1 })
	code, _, body := post(t, url+"/generate", map[string]any{"input_ids": []int{3}, "rid": "same"})
	if code != http.StatusBadRequest || gjson.GetBytes(body, "error.message").String() == "" {
		t.Fatalf("duplicate rid: status %d body %s", code, body)
	}
	post(t, url+"/abort_request", map[string]any{"rid": "same"})
	wg.Wait()
	// Once finished the rid may be used again.
	if code, _, body := post(t, url+"/generate", map[string]any{"input_ids": []int{3}, "rid": "same"}); code != 200 {
		t.Fatalf("reused rid: %d %s", code, body)
	}
}

func TestAbortRequest(t *testing.T) {
	cfg := Default()
	cfg.StepTime = 2 * time.Millisecond
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 1000}
	s, url := startSim(t, cfg)
	done := make(chan []byte)
	go func() {
		_, _, body := post(t, url+"/generate", map[string]any{"input_ids": []int{9}, "rid": "victim", "sampling_params": map[string]any{"max_new_tokens": 2000}})
		done <- body
	}()
	eventually(t, "request running", func() bool { return s.Stats().Running == 1 })
	if code, _, _ := post(t, url+"/abort_request", map[string]any{"rid": "victim"}); code != 200 {
		t.Fatalf("abort_request status %d", code)
	}
	body := <-done
	if fr := gjson.GetBytes(body, "meta_info.finish_reason"); fr.Get("type").String() != "abort" || fr.Get("message").String() == "" {
		t.Fatalf("finish_reason %s, want abort", fr.Raw)
	}
	if st := s.Stats(); st.Aborted != 1 || st.KVUsed != 0 {
		t.Fatalf("stats after abort: %+v", st)
	}
}

func TestInfoEndpoints(t *testing.T) {
	cfg := Default()
	_, url := startSim(t, cfg)
	for _, path := range []string{"/server_info", "/get_server_info"} {
		code, body := get(t, url+path)
		doc := gjson.ParseBytes(body)
		if code != 200 || doc.Get("max_total_num_tokens").Int() != int64(cfg.MaxTotalTokens) ||
			doc.Get("max_running_requests").Int() != int64(cfg.MaxRunningRequests) ||
			doc.Get("context_length").Int() != int64(cfg.ContextLength) ||
			doc.Get("internal_states.0.memory_usage.token_capacity").Int() != int64(cfg.MaxTotalTokens) ||
			doc.Get("version").String() == "" {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	for _, path := range []string{"/model_info", "/get_model_info"} {
		if code, body := get(t, url+path); code != 200 || !gjson.GetBytes(body, "is_generation").Bool() {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	for _, path := range []string{"/health", "/health_generate"} {
		if code, _ := get(t, url+path); code != 200 {
			t.Errorf("%s: %d", path, code)
		}
	}
	code, body := get(t, url+"/metrics")
	if code != 200 || !gjson.GetBytes(body, "max_running").Exists() {
		t.Errorf("/metrics: %d %s", code, body)
	}
}

// TestSamplingSeed: a request's sampling seed picks its answer, as on a
// sampling server: another seed, another answer; the same seed, the same
// one; none, the prompt's own.
func TestSamplingSeed(t *testing.T) {
	_, url := startSim(t, Default())
	in := prompt(12, 3)
	generate := func(seed any) []int {
		sp := map[string]any{"max_new_tokens": 32}
		if seed != nil {
			sp["sampling_seed"] = seed
		}
		_, _, body := post(t, url+"/generate", map[string]any{"input_ids": in, "sampling_params": sp})
		return ints(gjson.GetBytes(body, "output_ids"))
	}
	chat := func(seed any) string {
		body := map[string]any{"model": "m", "max_tokens": 32, "messages": []map[string]any{{"role": "user", "content": "hi"}}}
		if seed != nil {
			body["seed"] = seed
		}
		_, _, out := post(t, url+"/v1/chat/completions", body)
		return gjson.GetBytes(out, "choices.0.message.content").String()
	}
	none, s1, s2, s1again := generate(nil), generate(1), generate(2), generate(1)
	if !slices.Equal(none, ExpectedOutputIDs(in, len(none)-1)) && !slices.Equal(none, ExpectedOutputIDs(in, len(none))) {
		t.Errorf("without a seed the answer is not the prompt's own: %v", none)
	}
	if slices.Equal(s1, s2) || slices.Equal(s1, none) {
		t.Errorf("seeds 1 and 2 (and none) give the same answer: %v %v %v", s1, s2, none)
	}
	if !slices.Equal(s1, s1again) {
		t.Errorf("seed 1 twice gives two answers: %v, %v", s1, s1again)
	}
	if c1, c2 := chat(1), chat(2); c1 == c2 || c1 != chat(1) {
		t.Errorf("chat seeds 1, 2, 1: %q, %q, %q", c1, c2, chat(1))
	}
}

// TestMembersPick: the one pass over an object finds what a lookup by name
// finds: the first of a key written twice, an escaped key, null, a missing
// member, a name not picked, and nothing in what is not an object.
func TestMembersPick(t *testing.T) {
	names := []string{"rid", "stream", "input_ids", "text"}
	for _, raw := range []string{
		`{"rid":"a","stream":true,"input_ids":[1,2],"text":null}`,
		`{"rid":"a","rid":"b","\u0073tream":false,"x":{"rid":"inner"}}`,
		`{"input_ids":[[1],[2]],"stream":"yes","extra":7}`,
		`{}`, `[]`, `null`, `7`, ``,
	} {
		obj := gjson.Parse(raw)
		var m members
		m.pick(obj, names)
		for _, name := range append(names, "extra", "x") {
			want := gjson.Result{}
			if obj.IsObject() {
				want = obj.Get(name)
			}
			if got := m.get(name); got.Raw != want.Raw || got.Type != want.Type {
				t.Errorf("%s: %s is %q, Get finds %q", raw, name, got.Raw, want.Raw)
			}
		}
	}
}
