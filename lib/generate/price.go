package generate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
)

// perMillion converts --max-price (USD per million tokens) to USD per token.
const perMillion = 1e6

// worstPrice is the USD per token a request in flight is reserved at under
// --cost-budget: --max-price, else the higher of the model's prompt and
// completion prices in the server's /models list. Without either the budget
// could not be kept, so the run is refused.
func worstPrice(ctx context.Context, cfg *config) (float64, error) {
	if cfg.costBudget == 0 {
		return cfg.maxPrice / perMillion, nil
	}
	if cfg.maxPrice > 0 {
		return cfg.maxPrice / perMillion, nil
	}
	var lastErr error
	for _, u := range cfg.urls {
		p, err := listedPrice(ctx, u, cfg.model, cfg.apiKey)
		if err == nil {
			return p, nil
		}
		lastErr = err
	}
	return 0, cliutil.Usagef("--%s needs a price to reserve requests in flight at: give --%s USD_PER_MTOK (%v)",
		flagCostBudget, flagMaxPrice, lastErr)
}

// listedPrice reads OpenRouter's /models pricing (USD per token, as strings).
func listedPrice(ctx context.Context, base, model, key string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, serverInfoTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/models", nil)
	if err != nil {
		return 0, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := backend.SharedClient().Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s/models: %w", base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s/models: HTTP %d", base, resp.StatusCode)
	}
	var list struct {
		Data []struct {
			ID      string `json:"id"`
			Pricing struct {
				Prompt     json.RawMessage `json:"prompt"`
				Completion json.RawMessage `json:"completion"`
			} `json:"pricing"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return 0, fmt.Errorf("%s/models: %v", base, err)
	}
	for _, m := range list.Data {
		if m.ID != model && (model != "" || len(list.Data) != 1) {
			continue
		}
		p, perr := priceNumber(m.Pricing.Prompt)
		c, cerr := priceNumber(m.Pricing.Completion)
		if perr != nil || cerr != nil {
			return 0, fmt.Errorf("%s/models: no pricing for %q", base, m.ID)
		}
		return max(p, c), nil
	}
	return 0, fmt.Errorf("%s/models does not list %q", base, model)
}

// priceNumber reads a price given as a JSON string or number.
func priceNumber(raw json.RawMessage) (float64, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strconv.ParseFloat(s, 64)
	}
	var f float64
	err := json.Unmarshal(raw, &f)
	return f, err
}
