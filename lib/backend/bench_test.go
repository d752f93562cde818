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
