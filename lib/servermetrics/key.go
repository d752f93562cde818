package servermetrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/tidwall/gjson"
)

// Key is what OpenRouter says of the API key a run uses (GET /api/v1/key).
type Key struct {
	Label string
	// Limit is the key's credit limit in USD; Limited is false for a key
	// without one (limit null), and then Remaining means nothing.
	Limit     float64
	Limited   bool
	Usage     float64 // USD spent with the key so far
	Remaining float64 // USD the key can still spend (limit_remaining)
	FreeTier  bool
	// RateRequests per RateInterval, when the server says (OpenRouter
	// calls the field deprecated; -1 means no limit).
	RateRequests int64
	RateInterval string
}

// ErrNoKeyInfo says the server has no /key route: not OpenRouter, or an
// OpenAI-compatible server that does not track keys.
var ErrNoKeyInfo = errors.New("no key information")

// FetchKey reads base+"/key", base being an OpenRouter-style API root such
// as https://openrouter.ai/api/v1. A refused key is a *KeyError with the
// status; a server without the route wraps ErrNoKeyInfo.
func FetchKey(ctx context.Context, base string, opt Options) (Key, error) {
	resp, url, err := get(ctx, base, "/key", "", opt)
	if err != nil {
		return Key{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Key{}, fmt.Errorf("%s: %w", url, err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return Key{}, &KeyError{URL: url, Status: resp.StatusCode, Message: gjson.GetBytes(body, "error.message").String()}
	case resp.StatusCode != http.StatusOK:
		return Key{}, fmt.Errorf("%s: HTTP %d: %w", url, resp.StatusCode, ErrNoKeyInfo)
	}
	return ParseKey(body)
}

// ParseKey reads OpenRouter's answer:
// {"data": {"label", "limit", "usage", "limit_remaining", "is_free_tier",
// "rate_limit": {"requests", "interval"}}}, limit and limit_remaining being
// null for a key without a limit.
func ParseKey(body []byte) (Key, error) {
	if !jsonl.Valid(body) {
		return Key{}, fmt.Errorf("/key: not JSON: %w", ErrNoKeyInfo)
	}
	d := gjson.GetBytes(body, "data")
	if !d.IsObject() || !d.Get("usage").Exists() {
		return Key{}, fmt.Errorf("/key: no data.usage: %w", ErrNoKeyInfo)
	}
	k := Key{
		Label:        d.Get("label").String(),
		Usage:        d.Get("usage").Float(),
		FreeTier:     d.Get("is_free_tier").Bool(),
		RateRequests: d.Get("rate_limit.requests").Int(),
		RateInterval: d.Get("rate_limit.interval").String(),
	}
	if l := d.Get("limit"); l.Type == gjson.Number {
		k.Limited, k.Limit = true, l.Float()
		k.Remaining = max(k.Limit-k.Usage, 0)
		if r := d.Get("limit_remaining"); r.Type == gjson.Number {
			k.Remaining = r.Float()
		}
	}
	return k, nil
}

// KeyError is a key the server refused (HTTP 401 or 403).
type KeyError struct {
	URL     string
	Status  int
	Message string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s", e.URL, e.Status, e.Message)
}

// String is the key's state in a person's words, e.g.
// "key: $3.21 of $10.00 spent, $6.79 left".
func (k Key) String() string {
	if !k.Limited {
		return fmt.Sprintf("key: $%.2f spent, no limit", k.Usage)
	}
	return fmt.Sprintf("key: $%.2f of $%.2f spent, $%.2f left", k.Usage, k.Limit, k.Remaining)
}
