package generate

import (
	"strings"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/sim"
)

func TestProgressNamesTheBudgetAsTheLimit(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) {
		c.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: 64}
		c.StepTime = 10 * time.Millisecond
		c.MaxTotalTokens = 2000
	})
	// 30 prompts of 10 tokens, max_tokens 300: a worst case of 310 tokens,
	// answers of 75 (64 and the EOS, with the prompt). 1,000 tokens start
	// about 10 of them, two or three at a time. The server's target moves
	// from 20 (sized for answers of 150) to about 50 as answers come in,
	// a change worth a line were the server the limit.
	r := runGenerate(t, sglangRequests(30, 10), "--url", url, "--max-tokens", "300", "--token-budget", "1000",
		"--progress-interval", "50ms")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var limited, sized int
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, " in flight (limit: budget)") {
			limited++
		}
		if strings.Contains(l, ": concurrency ") {
			sized++
		}
	}
	if limited == 0 {
		t.Errorf("no progress line names the budget as the limit:\n%s", r.stderr)
	}
	if sized != 1 {
		t.Errorf("%d concurrency lines, want 1 (the first sizing): the budget, not the server, held the run\n%s", sized, r.stderr)
	}
}
