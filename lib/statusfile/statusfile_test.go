package statusfile

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// Read refuses figures no float64 holds; ReadTolerant reads them as gjson
// does and still refuses what is no status file.
func TestReadTolerant(t *testing.T) {
	const head = `{"version":1,"tool":"generate","updated":"2026-12-01T10:00:00Z",`
	for _, tc := range []struct {
		name, text   string
		strict       bool // Read takes it
		tolerant     bool // ReadTolerant takes it
		rate, gen    float64
		running      float64
		formatErrors bool // refused as a *FormatError
	}{
		{"plain", head + `"rates":{"output_tokens_per_second":800},"servers":[{"url":"u","metrics":{"running":10,"gen_throughput":1000}}]}`,
			true, true, 800, 1000, 10, false},
		{"1e999", head + `"rates":{"output_tokens_per_second":1e999},"servers":[{"url":"u","metrics":{"running":10,"gen_throughput":1e999}}]}`,
			false, true, math.Inf(1), math.Inf(1), 10, true},
		{"strings", head + `"rates":{"output_tokens_per_second":"12"},"servers":[{"url":"u","metrics":{"running":"NaN","gen_throughput":"NaN"}}]}`,
			false, true, 12, math.NaN(), math.NaN(), true},
		{"bad time", `{"version":1,"tool":"generate","updated":"yesterday"}`, false, false, 0, 0, 0, true},
		{"version 2", `{"version":2,"tool":"generate"}`, false, false, 0, 0, 0, true},
		{"not JSON", `{"version":1,`, false, false, 0, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "st.json")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			var format *FormatError
			if _, err := Read(path); (err == nil) != tc.strict || (err != nil && errors.As(err, &format) != tc.formatErrors) {
				t.Errorf("Read: %v", err)
			}
			st, err := ReadTolerant(path)
			if (err == nil) != tc.tolerant {
				t.Fatalf("ReadTolerant: %v", err)
			}
			if err != nil {
				if !errors.As(err, &format) {
					t.Errorf("ReadTolerant: %v is no *FormatError", err)
				}
				return
			}
			m := st.Servers[0].Metrics
			if !same(st.Rates.OutputTokensPerSecond, tc.rate) || !same(m.GenThroughput, tc.gen) || !same(m.Running, tc.running) {
				t.Errorf("rate %g, gen_throughput %g, running %g", st.Rates.OutputTokensPerSecond, m.GenThroughput, m.Running)
			}
		})
	}
}

func same(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
