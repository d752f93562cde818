package sim

import (
	"math"
	"net/http"
	"sync"
)

// keyAccount is what the server's API key has spent: Config.KeyUsage at
// the start plus the usage.cost of every chat answer since, as OpenRouter
// counts a key's usage.
type keyAccount struct {
	mu    sync.Mutex
	spent float64
}

func (k *keyAccount) add(cost float64) {
	k.mu.Lock()
	k.spent += cost
	k.mu.Unlock()
}

func (k *keyAccount) total() float64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.spent
}

// Spent is the key's usage in USD: Config.KeyUsage plus what chat answers
// have cost since the server started.
func (s *Server) Spent() float64 { return s.cfg.KeyUsage + s.key.total() }

// keyExhausted reports whether a key with a limit has none of it left;
// OpenRouter then refuses requests with 402.
func (s *Server) keyExhausted() bool {
	return s.cfg.KeyLimit > 0 && s.Spent() >= s.cfg.KeyLimit
}

// KeyRateInterval is the interval of the rate limit GET /api/v1/key
// reports: Config.KeyRateLimit requests per KeyRateInterval, as OpenRouter
// writes it. llm-sim's --key-rate-limit help states it.
const KeyRateInterval = "10s"

// handleKey answers GET /api/v1/key (and /key, /v1/key) in OpenRouter's
// shape: {"data": {"label", "limit", "usage", "limit_remaining",
// "limit_reset", "is_free_tier", "rate_limit": {"requests", "interval"}}}.
// limit and limit_remaining are null for a key without a limit.
func (s *Server) handleKey(w http.ResponseWriter, r *http.Request) {
	usage := round12(s.Spent())
	var limit, remaining any
	if s.cfg.KeyLimit > 0 {
		limit = s.cfg.KeyLimit
		remaining = round12(max(s.cfg.KeyLimit-usage, 0))
	}
	rate := map[string]any{"requests": -1, "interval": KeyRateInterval}
	if s.cfg.KeyRateLimit > 0 {
		rate["requests"] = s.cfg.KeyRateLimit
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{
		"label":                 "sk-or-v1-sim...key",
		"limit":                 limit,
		"usage":                 usage,
		"usage_daily":           usage,
		"usage_weekly":          usage,
		"usage_monthly":         usage,
		"limit_remaining":       remaining,
		"limit_reset":           nil,
		"include_byok_in_limit": false,
		"is_free_tier":          false,
		"is_provisioning_key":   false,
		"rate_limit":            rate,
	}})
}

// round12 drops float noise below OpenRouter's dozen decimals.
func round12(v float64) float64 { return math.Round(v*1e12) / 1e12 }
