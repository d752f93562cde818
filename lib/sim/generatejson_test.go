package sim

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestGenerateOutputJSON checks generateOutput's own writer against
// encoding/json (with HTML escaping off, which SGLang's writer does not do
// either): byte for byte, over answers of every finish and shape.
func TestGenerateOutputJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", " word", "<|im_end|>", "&amp;", "\"q\"", `\`, "\n", "\t", "\x01", "é", "中文", "🙂", "\xff", "\xe2\x82"}
	str := func() string {
		var s strings.Builder
		for range rng.IntN(6) {
			s.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return s.String()
	}
	length := 7
	finishes := []*finishJSON{
		nil,
		{Type: "stop", Matched: 163586},
		{Type: "stop", Matched: "</s>"},
		{Type: "stop"},
		{Type: "length", Length: &length},
		{Type: "abort", Message: "client <gone> & away", StatusCode: 503},
		{Type: "abort", Message: "aborted"},
	}
	latencies := []float64{0, 1e-6, 0.0123, 3.5, 12345.678, 1e-7, 2.5e21}
	for i := range 2000 {
		o := generateOutput{
			Text: str(),
			MetaInfo: generateMeta{
				ID:               str(),
				FinishReason:     finishes[i%len(finishes)],
				PromptTokens:     rng.IntN(100000),
				WeightVersion:    "default",
				NumRetractions:   int64(rng.IntN(3)),
				ReasoningTokens:  rng.IntN(50),
				CompletionTokens: rng.IntN(5000),
				CachedTokens:     rng.IntN(5000),
				E2ELatency:       latencies[rng.IntN(len(latencies))],
			},
		}
		if i%5 != 0 {
			o.OutputIDs = make([]int, rng.IntN(40))
			for k := range o.OutputIDs {
				o.OutputIDs[k] = rng.IntN(200000)
			}
		}
		if i%97 == 0 {
			o.MetaInfo.OutputTokenLogprobs = []any{[]any{-0.5, 12, nil}}
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(o); err != nil {
			t.Fatal(err)
		}
		got := o.appendJSON(nil)
		if o.MetaInfo.OutputTokenLogprobs != nil {
			// encoding/json's own path, with its HTML escaping.
			plain, _ := json.Marshal(o)
			if !bytes.Equal(got, plain) {
				t.Fatalf("logprobs answer %d:\n got %s\nwant %s", i, got, plain)
			}
			continue
		}
		if !bytes.Equal(got, bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Fatalf("answer %d:\n got %s\nwant %s", i, got, want.Bytes())
		}
	}
}
