package generate

import (
	"context"
	"fmt"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/engine"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/servermetrics"
)

// readKey reads the key of an openai backend's first --url. A server
// without the route (not OpenRouter) or an answer that cannot be read
// leaves it unknown: nil, and the run goes on. A --cost-budget above what
// the key can still spend is refused (77) unless --over-key-limit: the run
// would stop halfway on HTTP 402 with the budget meant for the rest.
func readKey(ctx context.Context, cfg *config, note func(string, ...any)) (*engine.Key, error) {
	if !cfg.Kind.KeyInfo || len(cfg.URLs) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Tuning.ServerInfoTimeoutOrDefault())
	defer cancel()
	k, err := servermetrics.FetchKey(ctx, cfg.URLs[0], servermetrics.Options{Client: backend.SharedClient(), APIKey: cfg.APIKey})
	if err != nil {
		return nil, nil
	}
	ks := &engine.Key{URL: backend.WithoutUserinfo(cfg.URLs[0]), Info: k}
	rate := ""
	if k.RateRequests > 0 {
		rate = fmt.Sprintf("; rate limit %d requests per %s", k.RateRequests, k.RateInterval)
	}
	note("%s/key: %s%s", ks.URL, k, rate)
	if !k.Limited || cfg.CostBudget <= k.Remaining {
		return ks, nil
	}
	if cfg.CostBudget > 0 && !cfg.overKeyLimit {
		return nil, exitcode.NoPermf("--%s $%.2f is more than the API key can still spend: $%.2f of its $%.2f limit is left (%s/key); "+
			"lower --%s, raise the key's limit, or give --%s to go on and stop when the key runs out",
			flagCostBudget, cfg.CostBudget, k.Remaining, k.Limit, ks.URL, flagCostBudget, flagOverKeyLimit)
	}
	note("the run may stop when the key runs out ($%.2f left): it then exits 77 and a later run with more credit goes on", k.Remaining)
	return ks, nil
}
