package servermetrics

import (
	"fmt"
	"io"

	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/tidwall/gjson"
)

// SGLang's JSON load reports, served whatever its flags:
//
//	GET /v1/loads  {"loads": [{"dp_rank": 0, "num_running_reqs": 5,
//	                 "num_waiting_reqs": 2, "num_used_tokens": 5000,
//	                 "token_usage": 0.05, "gen_throughput": 120.5,
//	                 "cache_hit_rate": 0.1, ...}, ...], "aggregate": ...}
//	GET /get_load  [{"dp_rank": 0, "num_reqs": 7, "num_waiting_reqs": 2,
//	                 "num_tokens": 5300}, ...]
//
// one entry per data-parallel rank. /get_load's num_reqs counts the running
// and the waiting requests together, and its num_tokens adds the waiting
// prompts' tokens to the KV cache's: it is no occupancy, so it is not read.
// Releases before /get_load had ranks answered {"load": N}, one number for
// everything: that tells running from waiting no better than nothing, and
// counts as no report.

// parseLoadReport reads the JSON report of source (SourceLoads or
// SourceGetLoad) into a Snapshot, summed and averaged over the ranks as
// the package comment says. The reports name no model: a server serving
// several is read whole.
func parseLoadReport(r io.Reader, source string) (Snapshot, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return Snapshot{}, err
	}
	if !jsonl.Valid(body) {
		return Snapshot{}, fmt.Errorf("not JSON: %w", ErrNoMetrics)
	}
	ranks := gjson.ParseBytes(body)
	if source == SourceLoads {
		ranks = ranks.Get("loads")
	}
	if !ranks.IsArray() || len(ranks.Array()) == 0 {
		return Snapshot{}, fmt.Errorf("no per-rank load list: %w", ErrNoMetrics)
	}
	s := Snapshot{Has: map[string]bool{}}
	var kv []float64
	for i, rank := range ranks.Array() {
		num := func(field, gauge string) (float64, bool) { return s.rankFigure(rank, field, gauge) }
		waiting, okW := num("num_waiting_reqs", NumQueueReqs)
		var running float64
		okR := false
		if source == SourceLoads {
			running, okR = num("num_running_reqs", NumRunningReqs)
		} else if total, ok := num("num_reqs", NumRunningReqs); ok {
			running, okR = total-waiting, true
			if okW && running < 0 {
				s.unusable(NumRunningReqs, running)
				okR = false
			}
		}
		if rank.IsObject() && (!okW || !okR) && len(s.Unusable) > 0 {
			return Snapshot{Unusable: s.Unusable, Source: source},
				fmt.Errorf("rank %d of the report: %s: %w", i, s.UnusableText(), ErrUnusable)
		}
		if !rank.IsObject() || !okW || !okR {
			return Snapshot{}, fmt.Errorf("rank %d of the report has no running and waiting request counts: %w", i, ErrNoMetrics)
		}
		s.Running += running
		s.Queued += waiting
		s.Has[NumRunningReqs], s.Has[NumQueueReqs] = true, true
		if source == SourceLoads {
			kv = s.addLoads(rank, kv)
		}
	}
	s.Ranks = len(ranks.Array())
	for name := range s.Unusable {
		// One rank's figure missing would make the sum or mean wrong
		// without saying so: the gauge is left out whole.
		delete(s.Has, name)
		switch name {
		case NumUsedTokens:
			s.UsedTokens = 0
		case GenThroughput:
			s.GenThroughput = 0
		case TokenUsage:
			kv = nil
		case CacheHitRate:
			s.CacheHitRate = 0
		}
	}
	for _, v := range kv {
		s.TokenUsage += v / float64(len(kv))
		s.MaxTokenUsage = max(s.MaxTokenUsage, v)
	}
	s.CacheHitRate /= float64(s.Ranks)
	return s, nil
}

// rankFigure is a rank's field, a count, rate or ratio; a number that is
// none (1e999 reads as +Inf, -3) is recorded as unusable for gauge.
func (s *Snapshot) rankFigure(rank gjson.Result, field, gauge string) (float64, bool) {
	v := rank.Get(field)
	if v.Type != gjson.Number {
		return 0, false
	}
	if !sane(v.Float()) {
		s.unusable(gauge, v.Float())
		return 0, false
	}
	return v.Float(), true
}

// addLoads adds the figures only /v1/loads reports of a rank: used tokens,
// throughput and cache hit rate to their sums, its KV usage to kv.
func (s *Snapshot) addLoads(rank gjson.Result, kv []float64) []float64 {
	if v, ok := s.rankFigure(rank, "num_used_tokens", NumUsedTokens); ok {
		s.UsedTokens += v
		s.Has[NumUsedTokens] = true
	}
	if v, ok := s.rankFigure(rank, "gen_throughput", GenThroughput); ok {
		s.GenThroughput += v
		s.Has[GenThroughput] = true
	}
	if v, ok := s.rankFigure(rank, "token_usage", TokenUsage); ok {
		kv = append(kv, v)
		s.Has[TokenUsage] = true
	}
	if v, ok := s.rankFigure(rank, "cache_hit_rate", CacheHitRate); ok {
		s.CacheHitRate += v
		s.Has[CacheHitRate] = true
	}
	return kv
}
