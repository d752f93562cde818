// Package servermetrics reads what an SGLang server says of its own load,
// from the first of three places it serves:
//
//   - /metrics, the Prometheus gauges it serves when started with
//     --enable-metrics (the fullest view);
//   - /v1/loads, the JSON load report of recent versions, served whatever
//     the flags (running and waiting requests, KV occupancy, throughput);
//   - /get_load, the older JSON report the SGLang router balances by,
//     also served whatever the flags (running plus waiting, and waiting).
//
// A server started without --enable-metrics, SGLang's default, thus still
// says how many requests it runs and queues.
//
// SGLang labels every series with the served model (model_name) and, per
// scheduler, tp_rank, pp_rank and, with data parallelism (--dp-size), dp_rank.
// Each data-parallel rank is a scheduler of its own, with its own running
// batch, waiting queue and KV cache; the workers of one rank's tensor or
// pipeline group describe that same batch. A Snapshot therefore
//
//   - takes, within one data-parallel rank, the largest value its series
//     report (several tensor-parallel workers repeating a figure count once);
//   - adds running and queued requests, used tokens and generation
//     throughput over the data-parallel ranks;
//   - averages the KV occupancy (token_usage) and the prefix-cache hit rate
//     over the ranks, as the ranks' caches are the same size, and keeps the
//     fullest rank's occupancy apart (MaxTokenUsage), since a full rank
//     queues its share of requests even when another has room.
//
// A server serving several models is read for one of them (Options.Model);
// with no match, every series counts.
package servermetrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	neturl "net/url"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/statusfile"
)

// The gauges a Snapshot is made of, as SGLang names them.
const (
	NumRunningReqs = "sglang:num_running_reqs"
	NumQueueReqs   = "sglang:num_queue_reqs"
	TokenUsage     = "sglang:token_usage"
	GenThroughput  = "sglang:gen_throughput"
	NumUsedTokens  = "sglang:num_used_tokens"
	CacheHitRate   = "sglang:cache_hit_rate"
)

// ErrNoMetrics says the server reports no load: none of /metrics,
// /v1/loads and /get_load is there or answers what SGLang would. Callers
// go on with their own measurements.
var ErrNoMetrics = errors.New("no SGLang load figures")

// The places a server's load is read from, as Snapshot.Source names them,
// in the order Fetch tries them.
const (
	SourceMetrics = statusfile.SourceMetrics
	SourceLoads   = statusfile.SourceLoads
	SourceGetLoad = statusfile.SourceGetLoad
)

// Sources is every place Fetch looks, the fullest view first.
var Sources = []string{SourceMetrics, SourceLoads, SourceGetLoad}

// Snapshot is one reading of a server's gauges, aggregated over its ranks
// as the package comment says. A gauge the server did not report is zero
// and absent from Has.
type Snapshot struct {
	Running       float64 // requests in the running batches
	Queued        float64 // requests in the waiting queues
	TokenUsage    float64 // KV cache occupancy, 0..1, averaged over ranks
	MaxTokenUsage float64 // the fullest rank's KV occupancy, 0..1
	GenThroughput float64 // tokens generated per second, all ranks
	UsedTokens    float64 // KV tokens in use, all ranks
	CacheHitRate  float64 // prefix cache hit rate, 0..1, averaged over ranks
	// Ranks is how many data-parallel ranks reported (1 without dp_rank).
	Ranks int
	// Model is the model_name the figures are for ("" when unlabelled).
	Model string
	// Has records which figures were present, by the names of the
	// /metrics gauges whatever the source.
	Has map[string]bool
	// Source is where the figures were read (one of Sources).
	Source string
	// Unusable holds the readings left out because they are no count, rate
	// or ratio (NaN, Inf, negative), by gauge name, with what was read:
	// a broken exporter's, which the caller counts and says once.
	Unusable map[string]float64
}

// ErrUnusable says the server reports its load, but this reading's running
// and queued requests were no counts (NaN, Inf, negative): no figure can be
// computed from it. The next reading may be sane; it is no ErrNoMetrics.
var ErrUnusable = errors.New("load reading with no usable request counts")

// unusable records v, read for the gauge name, as left out.
func (s *Snapshot) unusable(name string, v float64) {
	if s.Unusable == nil {
		s.Unusable = map[string]float64{}
	}
	s.Unusable[name] = v
}

// UnusableText names the readings left out, e.g.
// "sglang:num_running_reqs NaN, sglang:token_usage -3"; "" when none.
func (s Snapshot) UnusableText() string {
	names := make([]string, 0, len(s.Unusable))
	for name := range s.Unusable {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		names[i] = fmt.Sprintf("%s %v", name, s.Unusable[name])
	}
	return strings.Join(names, ", ")
}

// Options tune a Fetch.
type Options struct {
	// Client does the request; nil means http.DefaultClient.
	Client *http.Client
	// APIKey, when set, is sent as a Bearer token.
	APIKey string
	// Model picks the model_name to read on a server with several.
	Model string
}

// maxBody bounds what is read of a /metrics answer; SGLang's, histograms
// included, is tens of kilobytes.
const maxBody = 16 << 20

// get sends GET base+path with opt's key, or else the user and password
// of base as Basic authentication, and returns the answer and the URL as
// messages may show it: without the user and password.
func get(ctx context.Context, base, path, accept string, opt Options) (*http.Response, string, error) {
	full := strings.TrimSuffix(base, "/") + path
	shown := backend.WithoutUserinfo(full)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, full, nil)
	if err != nil {
		return nil, shown, fmt.Errorf("%s: not a valid URL", shown)
	}
	if user := req.URL.User; user != nil {
		req.URL.User = nil
		pass, _ := user.Password()
		req.SetBasicAuth(user.Username(), pass)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if opt.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+opt.APIKey)
	}
	client := opt.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		var uerr *neturl.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // its URL is shown once, below
		}
		return nil, shown, fmt.Errorf("%s: %w", shown, err)
	}
	return resp, shown, nil
}

// Fetch reads the server's load from the first of Sources it serves. A
// server with none answers an error wrapping ErrNoMetrics that says what
// each answered; a server that cannot be reached, that error alone.
func Fetch(ctx context.Context, base string, opt Options) (Snapshot, error) {
	var missing []string
	for _, source := range Sources {
		s, err := FetchFrom(ctx, base, source, opt)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, ErrNoMetrics) {
			return s, err
		}
		missing = append(missing, strings.TrimSuffix(err.Error(), ": "+ErrNoMetrics.Error()))
	}
	return Snapshot{}, fmt.Errorf("%s: %w", strings.Join(missing, "; "), ErrNoMetrics)
}

// FetchFrom reads the server's load from source, one of Sources. A
// server that does not serve it answers an error wrapping ErrNoMetrics.
func FetchFrom(ctx context.Context, base, source string, opt Options) (Snapshot, error) {
	accept := "application/json"
	if source == SourceMetrics {
		// Prometheus text: some servers (llm-sim among them) answer
		// JSON counters to clients that do not ask for it.
		accept = "text/plain;version=0.0.4"
	}
	resp, url, err := get(ctx, base, source, accept, opt)
	if err != nil {
		return Snapshot{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		hint := ""
		if source == SourceMetrics {
			hint = " (start SGLang with --enable-metrics)"
		}
		return Snapshot{}, fmt.Errorf("%s: HTTP %d%s: %w", url, resp.StatusCode, hint, ErrNoMetrics)
	}
	s, err := ParseFrom(io.LimitReader(resp.Body, maxBody), source, opt.Model)
	if err != nil {
		return s, fmt.Errorf("%s: %w", url, err)
	}
	return s, nil
}

// ParseFrom reads an answer of source (one of Sources) as FetchFrom does,
// for model when source is SourceMetrics.
func ParseFrom(r io.Reader, source, model string) (Snapshot, error) {
	var s Snapshot
	var err error
	if source == SourceMetrics {
		s, err = Parse(r, model)
	} else {
		s, err = parseLoadReport(r, source)
	}
	s.Source = source
	return s, err
}

// Parse reads Prometheus text and aggregates SGLang's gauges for model (or
// for every series when model is "" or matches none).
func Parse(r io.Reader, model string) (Snapshot, error) {
	families, err := textParser().TextToMetricFamilies(r)
	if err != nil {
		return Snapshot{}, fmt.Errorf("not Prometheus text (%v): %w", err, ErrNoMetrics)
	}
	s := Snapshot{Has: map[string]bool{}}
	s.Model = pickModel(families, model)
	g := gauges{families: families, s: &s, ranks: map[string]bool{}}
	s.Running = g.sum(NumRunningReqs)
	s.Queued = g.sum(NumQueueReqs)
	s.GenThroughput = g.sum(GenThroughput)
	s.UsedTokens = g.sum(NumUsedTokens)
	s.TokenUsage, s.MaxTokenUsage = g.mean(TokenUsage)
	s.CacheHitRate, _ = g.mean(CacheHitRate)
	s.Ranks = len(g.ranks)
	if len(s.Has) == 0 && len(s.Unusable) > 0 {
		return s, fmt.Errorf("%s: %w", s.UnusableText(), ErrUnusable)
	}
	if len(s.Has) == 0 {
		return s, fmt.Errorf("none of SGLang's gauges (%s...): %w", NumRunningReqs, ErrNoMetrics)
	}
	return s, nil
}

// textParser accepts the UTF-8 metric names newer Prometheus clients may
// write as well as SGLang's classic ones.
func textParser() *expfmt.TextParser {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return &p
}

// gauges reads SGLang's gauges of one model (s.Model, "": all) from a
// scrape, rank by rank, noting in s the gauges it holds and those it cannot
// use.
type gauges struct {
	families map[string]*dto.MetricFamily
	s        *Snapshot
	ranks    map[string]bool // every data-parallel rank seen
}

// perRank holds, for one gauge, each data-parallel rank's value: the
// largest its tensor/pipeline workers report.
func (g *gauges) perRank(name string) map[string]float64 {
	f, ok := g.families[name]
	if !ok {
		return nil
	}
	vals := map[string]float64{}
	bad := false
	for _, m := range f.GetMetric() {
		if g.s.Model != "" && label(m, "model_name") != g.s.Model {
			continue
		}
		v, ok := value(m)
		if !ok {
			if m.GetGauge() != nil || m.GetUntyped() != nil || m.GetCounter() != nil {
				g.s.unusable(name, v)
				bad = true
			}
			continue
		}
		// Several models (when none was picked) each have their own ranks.
		rank := label(m, "dp_rank")
		g.ranks[rank] = true
		key := label(m, "model_name") + "\x00" + rank
		if old, seen := vals[key]; !seen || v > old {
			vals[key] = v
		}
	}
	if bad {
		// A sum or mean without one rank's share would be wrong without
		// saying so: the gauge is left out whole.
		return nil
	}
	if len(vals) > 0 {
		g.s.Has[name] = true
	}
	return vals
}

// sum is a gauge's total over the ranks.
func (g *gauges) sum(name string) float64 {
	var t float64
	for _, v := range g.perRank(name) {
		t += v
	}
	return t
}

// mean is a gauge's mean and largest value over the ranks.
func (g *gauges) mean(name string) (avg, top float64) {
	vals := g.perRank(name)
	for _, v := range vals {
		avg += v
		top = max(top, v)
	}
	if len(vals) > 0 {
		avg /= float64(len(vals))
	}
	return avg, top
}

// pickModel returns want when some sglang: series carries it, else the one
// model all series share, else "" (count every series).
func pickModel(families map[string]*dto.MetricFamily, want string) string {
	models := map[string]bool{}
	for name, f := range families {
		if !strings.HasPrefix(name, "sglang:") {
			continue
		}
		for _, m := range f.GetMetric() {
			models[label(m, "model_name")] = true
		}
	}
	if want != "" && models[want] {
		return want
	}
	if len(models) == 1 {
		for m := range models {
			return m
		}
	}
	return ""
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// value is a gauge's reading, when it is one: a count, a rate or a ratio is
// finite and not negative, and a reading of NaN, Inf or -3 is no reading
// (one would make every figure computed from it NaN, for the whole run).
func value(m *dto.Metric) (float64, bool) {
	var v float64
	switch {
	case m.GetGauge() != nil:
		v = m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		v = m.GetUntyped().GetValue()
	case m.GetCounter() != nil:
		v = m.GetCounter().GetValue()
	default:
		return 0, false
	}
	return v, sane(v)
}

// sane reports whether a reading can be a count, a rate or a ratio.
func sane(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

// String is the snapshot in a person's words, e.g.
// "48 running, 0 queued, KV 91%, 1,250 tok/s"; gauges the server did not
// report are left out.
func (s Snapshot) String() string {
	var parts []string
	if s.Has[NumRunningReqs] {
		parts = append(parts, cliutil.Thousands(int64(math.Round(s.Running)))+" running")
	}
	if s.Has[NumQueueReqs] {
		parts = append(parts, cliutil.Thousands(int64(math.Round(s.Queued)))+" queued")
	}
	if s.Has[TokenUsage] {
		kv := fmt.Sprintf("KV %.0f%%", 100*s.TokenUsage)
		if s.Ranks > 1 && s.MaxTokenUsage-s.TokenUsage >= 0.05 {
			kv += fmt.Sprintf(" (fullest rank %.0f%%)", 100*s.MaxTokenUsage)
		}
		parts = append(parts, kv)
	}
	if s.Has[GenThroughput] {
		parts = append(parts, cliutil.Thousands(int64(math.Round(s.GenThroughput)))+" tok/s")
	}
	if s.Has[CacheHitRate] && s.CacheHitRate > 0 {
		parts = append(parts, fmt.Sprintf("cache hits %.0f%%", 100*s.CacheHitRate))
	}
	if s.Ranks > 1 {
		parts = append(parts, fmt.Sprintf("%d ranks", s.Ranks))
	}
	return strings.Join(parts, ", ")
}

// Combine is several servers seen as one: requests, tokens and throughput
// add up, KV occupancy and cache hits are averaged over the servers, and
// MaxTokenUsage is the fullest rank anywhere.
func Combine(snaps []Snapshot) Snapshot {
	t := Snapshot{Has: map[string]bool{}}
	for _, s := range snaps {
		t.Running += s.Running
		t.Queued += s.Queued
		t.GenThroughput += s.GenThroughput
		t.UsedTokens += s.UsedTokens
		t.TokenUsage += s.TokenUsage
		t.CacheHitRate += s.CacheHitRate
		t.MaxTokenUsage = max(t.MaxTokenUsage, s.MaxTokenUsage)
		t.Ranks += s.Ranks
		for k := range s.Has {
			t.Has[k] = true
		}
	}
	if n := float64(len(snaps)); n > 0 {
		t.TokenUsage /= n
		t.CacheHitRate /= n
	}
	if len(snaps) == 1 {
		t.Model = snaps[0].Model
	}
	return t
}
