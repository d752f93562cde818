package backend

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkCumulativeStream4k reads a 4096-token answer that SGLang
// streamed token by token as cumulative snapshots (its default): 4096
// events, each repeating the text and ids so far.
func BenchmarkCumulativeStream4k(b *testing.B) {
	const n = 4096
	var sb strings.Builder
	ids := make([]string, 0, n)
	text := ""
	for i := 0; i < n; i++ {
		ids = append(ids, fmt.Sprint(10000+i))
		text += " word"
		fr := "null"
		if i == n-1 {
			fr = `{"type":"length","length":4096}`
		}
		fmt.Fprintf(&sb, "data: {\"text\":%q,\"output_ids\":[%s],\"meta_info\":{\"finish_reason\":%s,\"prompt_tokens\":3,\"completion_tokens\":%d}}\n\n", text, strings.Join(ids, ","), fr, i+1)
	}
	sb.WriteString("data: [DONE]\n\n")
	raw := []byte(sb.String())
	b.SetBytes(int64(len(raw)))
	b.ResetTimer()
	for b.Loop() {
		res, e := answerOffline(raw, true, &sglangAnswer{})
		if e != nil || len(res.OutputIDs) != n {
			b.Fatal(e)
		}
	}
}

// BenchmarkSGLangBody writes the /generate body of a 512-token prompt with
// the usual sampling parameters: appended to a buffer the loop reuses (the
// sampling parameters' own cost), and as Do builds it.
func BenchmarkSGLangBody(b *testing.B) {
	req := &Request{ID: "rec-7", Attempt: 1, InputIDs: make([]int, 512), Params: Params{
		MaxTokens: 4096, Sampling: Sampling{Temperature: ptr(0.6), TopP: ptr(0.95), TopK: ptr(20), MinP: ptr(0.0),
			Stop: []string{"</answer>"}, Seed: ptr(int64(42))},
	}}
	for i := range req.InputIDs {
		req.InputIDs[i] = 1000 + 37*i
	}
	rid := RID(req.ID, req.Attempt)
	b.Run("append", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = appendSGLangBody(buf[:0], req, rid, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("request", func(b *testing.B) {
		s := &sglang{}
		for b.Loop() {
			if _, err := s.requestBody(req, rid); err != nil {
				b.Fatal(err)
			}
		}
	})
}
