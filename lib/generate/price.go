package generate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/engine"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/tidwall/gjson"
)

// worstPrice is the USD per token a request in flight is reserved at under
// --cost-budget: --max-price, else the higher of the model's prompt and
// completion prices in the server's /models list. Without either the budget
// could not be kept, so the run is refused.
func worstPrice(ctx context.Context, cfg *config) (float64, error) {
	if cfg.CostBudget == 0 {
		return cfg.maxPrice / engine.PerMillion, nil
	}
	if cfg.maxPrice > 0 {
		return cfg.maxPrice / engine.PerMillion, nil
	}
	var lastErr error
	for _, u := range cfg.URLs {
		p, err := listedPrice(ctx, u, cfg.Model, cfg.APIKey, cfg.Tuning.ServerInfoTimeoutOrDefault())
		if err == nil {
			return p, nil
		}
		lastErr = err
	}
	if errors.Is(lastErr, errPriceUnreachable) {
		// The list may well answer later: a cron job should try again,
		// not take this for a mistake in its command line.
		return 0, exitcode.TempFailf("--%s needs a price to reserve requests in flight at: %v (try again later, or give --%s USD_PER_MTOK)",
			flagCostBudget, lastErr, flagMaxPrice)
	}
	return 0, cliutil.Usagef("--%s needs a price to reserve requests in flight at: give --%s USD_PER_MTOK (%v)",
		flagCostBudget, flagMaxPrice, lastErr)
}

// errPriceUnreachable marks a /models list that could not be read for
// now: a timeout, a refused connection, a 5xx or 429 answer.
var errPriceUnreachable = errors.New("the model list is unreachable")

// listedPrice reads OpenRouter's /models pricing (USD per token, as
// strings), waiting at most timeout for it.
func listedPrice(ctx context.Context, base, model, key string, timeout time.Duration) (float64, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("no answer within %v", timeout))
	defer cancel()
	shown := backend.WithoutUserinfo(base) + "/models"
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/models", nil)
	if err != nil {
		return 0, fmt.Errorf("%s: not a valid URL", shown)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	unreachable := func(err error) error {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // its URL would show the credentials of --url
		}
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return fmt.Errorf("%s: %v: %w", shown, err, errPriceUnreachable)
	}
	resp, err := backend.SharedClient().Do(req)
	if err != nil {
		return 0, unreachable(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, unreachable(err)
	}
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return 0, fmt.Errorf("%s: HTTP %d: %w", shown, resp.StatusCode, errPriceUnreachable)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: HTTP %d", shown, resp.StatusCode)
	}
	base = shown[:len(shown)-len("/models")]
	if !jsonl.Valid(body) {
		return 0, fmt.Errorf("%s/models: the model list is not JSON", base)
	}
	var found gjson.Result
	entries := gjson.GetBytes(body, "data")
	entries.ForEach(func(_, m gjson.Result) bool {
		if m.Get("id").String() == model || (model == "" && len(entries.Array()) == 1) {
			found = m
			return false
		}
		return true
	})
	if !found.Exists() {
		return 0, fmt.Errorf("%s/models does not list %q", base, model)
	}
	var worst float64
	for _, field := range []string{"prompt", "completion"} {
		p, err := backend.ListedPrice(found, field)
		if err != nil {
			return 0, fmt.Errorf("%s/models: %w", base, err)
		}
		worst = max(worst, p)
	}
	return worst, nil
}
