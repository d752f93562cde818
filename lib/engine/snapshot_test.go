package engine

import (
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/servermetrics"
)

// What a progress line adds to its counts: the budget with the earlier
// runs' share, soft failures with their shares, retries and servers down,
// and the server's own view; nothing when there is nothing to say.
func TestStandingText(t *testing.T) {
	server := servermetrics.Snapshot{Running: 48, Queued: 0, TokenUsage: 0.91, GenThroughput: 1250, Ranks: 1,
		Has: map[string]bool{servermetrics.NumRunningReqs: true, servermetrics.NumQueueReqs: true, servermetrics.TokenUsage: true, servermetrics.GenThroughput: true}}
	for _, tc := range []struct {
		name  string
		st    Standing
		plain string
		bar   string
	}{
		{"nothing to say", Standing{OK: 10, Servers: 1}, "", ""},
		{
			"everything",
			Standing{TokensSpent: 3_912_044, Already: 1_200_310, TokenBudget: 10_000_000, USDSpent: 1.5, USDBudget: 20,
				OK: 4207, Truncated: 41, Empty: 2, Retries: 17, RateLimited: 5, ServersDown: 1, Servers: 2, Sidelines: 3, Server: server, HasServer: true},
			"; budget 3,912,044/10,000,000 total tokens (39.1%, 1,200,310 by earlier runs), $1.5000 of $20.00" +
				"; soft failures: 41 truncated (1.0%), 2 empty (0.0%); 17 retries, 5 rate-limited (HTTP 429), 1 of 2 servers down" +
				"; server: 48 running, 0 queued, KV 91%, 1,250 tok/s",
			" | budget 39% | server 48 run 0 queued KV 91% | 17 retries, 5 rate-limited (HTTP 429), 1 of 2 servers down",
		},
		{
			"servers back up, one aborted answer",
			Standing{OK: 200, Aborted: 1, Servers: 2, Sidelines: 2},
			"; soft failures: 1 aborted (0.5%, no end of sequence); servers down 2 times, all up now",
			" | servers down 2 times, all up now",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.st.Plain("total"); got != tc.plain {
				t.Errorf("plain:\n got %q\nwant %q", got, tc.plain)
			}
			if got := strings.Join(tc.st.BarParts(), ""); got != tc.bar {
				t.Errorf("bar:\n got %q\nwant %q", got, tc.bar)
			}
		})
	}
}
