package chattemplate

import (
	"testing"
)

// BenchmarkRender renders each conformance template for its tool-calling
// conversation (system, user, tool call, tool result, answer).
func BenchmarkRender(b *testing.B) {
	cf, _ := loadConformance(b)
	var conv conformanceCase
	for _, c := range cf.Cases {
		if c.Name == "tools_dict_args" {
			conv = c
		}
	}
	for _, name := range []string{"qwen3", "deepseek_v3", "llama3_1", "llama3_2", "gptoss", "kimi_k2_instruct", "kimi_k2_thinking", "kimi_k25_like_kite"} {
		tmpl := loadTemplate(b, name)
		c := conv
		if name == "kimi_k2_instruct" || name == "deepseek_v3" {
			c = cf.Cases[2] // multi_turn: these templates cannot render that tool conversation
		}
		opts := optionsFor(cf, name, c)
		if _, err := tmpl.Render(opts); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tmpl.Render(opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
