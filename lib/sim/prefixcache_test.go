package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestPrefixCacheMatchAndSplit(t *testing.T) {
	c := newPrefixCache(100)
	c.insert([]int{1, 2, 3, 4, 5})
	c.insert([]int{1, 2, 9}) // splits the edge after 1, 2
	for _, tc := range []struct {
		seq  []int
		want int
	}{
		{[]int{1, 2, 3, 4, 5, 6}, 5},
		{[]int{1, 2, 3, 7}, 3},
		{[]int{1, 2, 9, 9}, 3},
		{[]int{1, 2}, 2},
		{[]int{2, 1}, 0},
		{nil, 0},
	} {
		if got := c.match(tc.seq); got != tc.want {
			t.Errorf("match(%v) = %d, want %d", tc.seq, got, tc.want)
		}
	}
	if c.size != 6 {
		t.Errorf("size %d, want 6 (1 2 | 3 4 5 | 9)", c.size)
	}
}

func TestPrefixCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newPrefixCache(10)
	c.insert([]int{1, 1, 1, 1})
	c.insert([]int{2, 2, 2, 2})
	c.match([]int{1, 1, 1, 1})  // 1s are now more recent than 2s
	c.insert([]int{3, 3, 3, 3}) // 12 tokens: two of the 2s go
	if c.size != 10 {
		t.Fatalf("size %d after eviction, want the capacity 10", c.size)
	}
	if got := c.match([]int{2, 2, 2, 2}); got != 2 {
		t.Errorf("least recently used sequence keeps %d ids, want its first 2 (its tail evicted)", got)
	}
	if c.match([]int{1, 1, 1, 1}) != 4 || c.match([]int{3, 3, 3, 3}) != 4 {
		t.Error("recently used sequences were evicted")
	}
	c.insert([]int{4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}) // longer than the cache
	if c.size != 10 || c.match([]int{4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}) != 10 {
		t.Errorf("a sequence past the capacity: size %d, want it cut to 10", c.size)
	}
}

// generateIDs answers one /generate request with these ids and returns its
// meta_info and output ids.
func generateIDs(t *testing.T, url string, ids []int, maxNew int) (gjson.Result, []int) {
	t.Helper()
	code, _, body := post(t, url+"/generate", map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": maxNew}})
	if code != 200 {
		t.Fatalf("/generate: %d %s", code, body)
	}
	doc := gjson.ParseBytes(body)
	return doc.Get("meta_info"), ints(doc.Get("output_ids"))
}

// A conversation's next turn, sent after its answer, finds its prompt and
// answer in the cache: only the new part is prefilled, and the cache's hit
// rate is reported where SGLang reports it.
func TestPrefixCacheNextTurn(t *testing.T) {
	cfg := Default()
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 8}
	cfg.PrefixCacheTokens = 10000
	s, url := startSim(t, cfg)

	turn1 := prompt(100, 1)
	meta, out := generateIDs(t, url, turn1, 16)
	if meta.Get("cached_tokens").Int() != 0 {
		t.Fatalf("first turn cached_tokens %d, want 0", meta.Get("cached_tokens").Int())
	}
	turn2 := append(append(append([]int{}, turn1...), out...), prompt(20, 2)...)
	meta, _ = generateIDs(t, url, turn2, 16)
	if got, want := meta.Get("cached_tokens").Int(), int64(len(turn1)+len(out)); got != want {
		t.Errorf("second turn cached_tokens %d, want %d (the first prompt and its answer)", got, want)
	}
	st := s.Stats()
	if want := int64(len(turn1) + len(turn2) - len(turn1) - len(out)); st.PrefilledTokens != want {
		t.Errorf("prefilled %d tokens, want %d: the cached part is not computed again", st.PrefilledTokens, want)
	}
	if st.CachedTokens != int64(len(turn1)+len(out)) {
		t.Errorf("Stats.CachedTokens %d", st.CachedTokens)
	}

	body := getAccept(t, url+"/metrics", "text/plain")
	wantRate := fmt.Sprintf("sglang:cache_hit_rate{model_name=%q} %g", cfg.ModelName, float64(len(turn1)+len(out))/float64(len(turn2)))
	for _, want := range []string{wantRate,
		fmt.Sprintf("sglang:cached_tokens_total{cache_source=\"device\",model_name=%q} %d", cfg.ModelName, len(turn1)+len(out)),
		fmt.Sprintf("sglang:prompt_tokens_total{model_name=%q} %d", cfg.ModelName, len(turn1)+len(turn2)),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	_, loads := get(t, url+"/v1/loads")
	if got := gjson.GetBytes(loads, "loads.0.cache_hit_rate").Float(); got <= 0.8 {
		t.Errorf("/v1/loads cache_hit_rate %v, want the last admission's share", got)
	}
	_, info := get(t, url+"/server_info")
	if gjson.GetBytes(info, "disable_radix_cache").Bool() {
		t.Error("server_info says the radix cache is disabled")
	}
}

// Without the cache nothing is cached, as SGLang with --disable-radix-cache.
func TestPrefixCacheOff(t *testing.T) {
	s, url := startSim(t, Default())
	p := prompt(50, 3)
	generateIDs(t, url, p, 4)
	meta, _ := generateIDs(t, url, p, 4)
	if meta.Get("cached_tokens").Int() != 0 || s.Stats().PrefilledTokens != 100 {
		t.Errorf("cache off: cached_tokens %d, prefilled %d", meta.Get("cached_tokens").Int(), s.Stats().PrefilledTokens)
	}
}

// A chat conversation's next turn hits the messages it repeats; the hit is
// reported in usage.prompt_tokens_details.cached_tokens.
func TestPrefixCacheChat(t *testing.T) {
	cfg := Default()
	cfg.PrefixCacheTokens = 10000
	_, url := startSim(t, cfg)
	long := strings.Repeat("a long system prompt ", 20)
	first := []map[string]string{{"role": "system", "content": long}, {"role": "user", "content": "one"}}
	code, _, body := post(t, url+"/v1/chat/completions", map[string]any{"model": "m", "messages": first, "max_tokens": 8})
	if code != 200 || gjson.GetBytes(body, "usage.prompt_tokens_details.cached_tokens").Int() != 0 {
		t.Fatalf("first turn: %d %s", code, body)
	}
	next := append(first, map[string]string{"role": "assistant", "content": "x"}, map[string]string{"role": "user", "content": "two"})
	_, _, body = post(t, url+"/v1/chat/completions", map[string]any{"model": "m", "messages": next, "max_tokens": 8})
	if got := gjson.GetBytes(body, "usage.prompt_tokens_details.cached_tokens").Int(); got < int64(len(long)/4) {
		t.Errorf("next turn cached_tokens %d, want at least the system prompt's %d", got, len(long)/4)
	}
}
