package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkGenerateZeroLatency measures requests per second through HTTP
// with many concurrent clients against a zero-latency engine: 64 clients
// per GOMAXPROCS, 32-token prompts, 64-token answers plus EOS.
func BenchmarkGenerateZeroLatency(b *testing.B) {
	benchmarkGenerate(b, false)
}

// BenchmarkGenerateStreamZeroLatency is the same with stream=true.
func BenchmarkGenerateStreamZeroLatency(b *testing.B) {
	benchmarkGenerate(b, true)
}

func benchmarkGenerate(b *testing.B, stream bool) {
	cfg := Default()
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 64}
	s, url := startSim(b, cfg)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxConnsPerHost: 1024}}
	var seq atomic.Int64
	b.SetParallelism(64)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(seq.Add(1))
			body, _ := json.Marshal(map[string]any{"input_ids": prompt(32, i), "stream": stream, "sampling_params": map[string]any{"max_new_tokens": 128}})
			resp, err := client.Post(url+"/generate", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	st := s.Stats()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(st.TokensGenerated)/elapsed.Seconds(), "tok/s")
	b.ReportMetric(float64(st.MaxRunning), "max-batch")
}
