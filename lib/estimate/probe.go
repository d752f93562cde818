package estimate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/servermetrics"
)

// probeTimeout bounds each question asked of a server.
const probeTimeout = 10 * time.Second

// serverError turns a failed question to a server into an error with the
// exit code a user can act on: 77 for a refused key, 75 for anything that
// may work later.
func serverError(what string, err error) error {
	var be *backend.Error
	if errors.As(err, &be) {
		msg := be.Message
		if be.Status != 0 {
			msg = fmt.Sprintf("HTTP %d: %s", be.Status, msg)
		}
		if be.Kind == backend.KindAuth || be.Kind == backend.KindCredits {
			return exitcode.NoPermf("%s: %s (check OPENROUTER_API_KEY)", what, msg)
		}
		return exitcode.TempFailf("%s: %s", what, msg)
	}
	return exitcode.TempFailf("%s: %v", what, err)
}

// serverCapacity reads an SGLang server's KV cache and running request
// limit from /server_info.
func serverCapacity(ctx context.Context, url, key string) (capacity.KV, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	info, err := backend.NewSGLang(backend.Options{APIKey: key}).ServerInfo(ctx, url)
	if err != nil {
		return capacity.KV{}, serverError(backend.WithoutUserinfo(url)+"/server_info", err)
	}
	c := capacity.FromServerInfo(info)
	if c.Tokens <= 0 {
		return c, exitcode.TempFailf("%s/server_info says nothing of the KV cache (max_total_num_tokens): is it an SGLang server?", backend.WithoutUserinfo(url))
	}
	return c, nil
}

// serverLoad is what an SGLang server's Prometheus metrics say of the work
// it does now.
type serverLoad struct {
	genThroughput float64 // sglang:gen_throughput, tokens per second, summed over ranks
	running       float64 // sglang:num_running_reqs, summed over ranks
	source        string  // where they were read: /metrics or /v1/loads
}

// serverMetrics reads sglang:gen_throughput and sglang:num_running_reqs
// from /metrics (SGLang started with --enable-metrics) or the same figures
// from /v1/loads (recent releases, whatever the flags), added up over
// data-parallel ranks by lib/servermetrics. A server without them answers an
// error that says so; the caller goes on without.
func serverMetrics(ctx context.Context, url, key string) (serverLoad, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	snap, err := servermetrics.Fetch(ctx, url, servermetrics.Options{Client: backend.SharedClient(), APIKey: key})
	if err != nil {
		return serverLoad{}, err
	}
	if !snap.Has[servermetrics.GenThroughput] {
		return serverLoad{}, fmt.Errorf("%s has no generation throughput (sglang:gen_throughput)", snap.Source)
	}
	return serverLoad{genThroughput: snap.GenThroughput, running: snap.Running, source: snap.Source}, nil
}

// prices are USD per token.
type prices struct{ prompt, completion float64 }

// listedPrices reads a model's prices from an OpenAI-style /models list in
// OpenRouter's shape: data[].pricing.prompt and .completion, USD per token,
// as decimal strings.
func listedPrices(ctx context.Context, base, modelID, key string) (prices, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	info, err := backend.NewOpenAI(backend.Options{APIKey: key, Model: modelID}).ServerInfo(ctx, base)
	if err != nil {
		err = serverError(base+"/models", err)
		var ce *exitcode.Error
		if errors.As(err, &ce) && ce.Code == exitcode.TempFail {
			// Offline, or the list is down: the prices can be given.
			return prices{}, exitcode.TempFailf("%v: the prices come from that list; without it give --%s and --%s (USD per million tokens), or --%s a copy of the list served where you are (its /models)",
				err, flagPriceIn, flagPriceOut, flagOpenRouterURL)
		}
		return prices{}, err
	}
	if info == nil {
		return prices{}, exitcode.TempFailf("%s/models does not list %q: check the model id, or give --price-in and --price-out", base, modelID)
	}
	doc := gjson.ParseBytes(info.Raw)
	var p prices
	for _, f := range []struct {
		field string
		dst   *float64
	}{{"prompt", &p.prompt}, {"completion", &p.completion}} {
		n, err := backend.ListedPrice(doc, f.field)
		if err != nil {
			// A price that is not there, or not a price, stays so on the
			// next run: the command needs the prices given.
			return prices{}, cliutil.Usagef("%s/models: %v: no cost can be computed from it; give --%s and --%s (USD per million tokens)", base, err, flagPriceIn, flagPriceOut)
		}
		*f.dst = n
	}
	return p, nil
}
