package generate

import (
	"bytes"
	"testing"

	"github.com/synthpipe/synthpipe/lib/sim"
)

// BenchmarkThroughput runs generate against a zero-latency simulator in the
// same process; b.N is the number of requests.
func BenchmarkThroughput(b *testing.B) {
	for _, conc := range []string{"8", "64", "auto"} {
		b.Run("concurrency="+conc, func(b *testing.B) { benchmarkThroughput(b, conc) })
	}
}

func benchmarkThroughput(b *testing.B, benchConc string) {
	_, url := startSim(b, func(c *sim.Config) { c.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: 16} })
	input := sglangRequests(b.N, 64)
	b.ResetTimer()
	var out bytes.Buffer
	r := runGenerateTo(b, input, &out, "--url", url, "--max-tokens", "16", "-q", "--concurrency", benchConc)
	if r.code != 0 {
		b.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}
