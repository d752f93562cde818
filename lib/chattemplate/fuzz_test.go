package chattemplate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fuzzMessages is the fixed conversation FuzzRender renders templates with.
var fuzzMessages = json.RawMessage(`[
 {"role": "system", "content": "sys"},
 {"role": "user", "content": "Hi <b>\"there\"</b>"},
 {"role": "assistant", "content": null, "reasoning_content": "hmm", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"a": [1, 2.5, null, true]}}}]},
 {"role": "tool", "tool_call_id": "c1", "content": "{\"ok\": 1}"},
 {"role": "assistant", "content": "done"}
]`)

var fuzzTools = json.RawMessage(`[{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "number"}}}, "required": ["a"]}}}]`)

// fuzzLimits keep each fuzz execution short; the default limits allow
// renders that take seconds.
var fuzzLimits = limits{steps: 20_000, callDepth: 50, output: 4 << 20, alloc: 16 << 20}

// FuzzRender parses arbitrary template text and renders it: whatever the
// input, Parse and Render must return (an error is fine) without panicking
// or running away.
func FuzzRender(f *testing.F) {
	addConformanceTemplates(f)
	for _, seed := range []string{
		"{{ messages|tojson(indent=2) }}",
		"{% for m in messages[::-1] if m.content %}{{ loop.index }}{{ m.role|upper }}{% endfor %}",
		"{% set ns = namespace(x=[]) %}{% set ns.x = ns.x + [1] %}{{ ns.x }}",
		"{% macro m(n) %}{% if n > 0 %}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(10) }}",
		"{%- raw -%} {{ x }} {%- endraw %}",
		"{{ 'a' * 1000 }}{{ range(10)|list }}",
		"{% macro m(a, b) %}{{ a }}{{ b }}{% endmacro %}{{ m(*[1], **{'b': 2}) }}{{ m.arguments }}",
		"{% for a, (b, c) in [[1, [2, 3]]] %}{{ a }}{{ loop|list }}{% endfor %}{% with ((x,), y) = [[1], 2] %}{{ x }}{% endwith %}",
		"{{ {'a': {'b': 1}}['a'].b }}{{ messages.0.content }}{% set if = 1 %}{{ if in [1] }}",
		"{% autoescape true %}{{ '<' }}{{ '<'|safe }}{% endautoescape %}{{ 2 ** 100 // 3 }}{{ -9223372036854775808 - 1 }}",
		"{% set g = messages|selectattr('content')|map(attribute='role') %}{{ g|first }}{{ g|list }}{{ [1, 2]|reverse|list }}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		tmpl, err := Parse("fuzz", src)
		if err != nil {
			return
		}
		tmpl.limits = fuzzLimits
		// A hung render never returns, so a watchdog crashes the worker and
		// the fuzzer records the input.
		watchdog := time.AfterFunc(5*time.Second, func() { panic(fmt.Sprintf("render of %q did not finish in 5s", src)) })
		defer watchdog.Stop()
		_, _ = tmpl.Render(Options{
			Messages:            fuzzMessages,
			Tools:               fuzzTools,
			AddGenerationPrompt: true,
			BOSToken:            "<s>",
			EOSToken:            "</s>",
			Now:                 fixedNow,
		})
	})
}

// FuzzRenderMessages feeds arbitrary message JSON to real templates: bad
// input must produce an error, never a panic.
func FuzzRenderMessages(f *testing.F) {
	var templates []*Template
	for _, name := range []string{"qwen3", "gptoss", "llama3_2", "kimi_k2_thinking"} {
		templates = append(templates, loadTemplate(f, name))
	}
	cf, _ := loadConformance(f)
	for _, c := range cf.Cases {
		f.Add([]byte(c.Messages), []byte(c.Tools))
	}
	f.Add([]byte(`[{"role": "assistant", "content": ["x", {"type": "text"}]}]`), []byte(`[{"function": 1}]`))
	f.Add([]byte(`[]`), []byte(`null`))
	f.Fuzz(func(t *testing.T, messages, tools []byte) {
		for _, tmpl := range templates {
			_, _ = tmpl.Render(Options{Messages: messages, Tools: tools, AddGenerationPrompt: true, Now: fixedNow})
		}
	})
}

// addConformanceTemplates seeds f with the conformance templates' text.
func addConformanceTemplates(f *testing.F) {
	entries, _ := filepath.Glob(filepath.Join("testdata", "conformance", "*.jinja"))
	for _, path := range entries {
		if src, err := os.ReadFile(path); err == nil {
			f.Add(string(src))
		}
	}
}

// FuzzLoopReplay parses arbitrary template text and renders fuzzMessages
// a message at a time through one MessageCache, as generate renders a
// conversation turn after turn, the template arguments changing between
// renders: whatever the template, each render must give what rendering
// without the cache gives, the same text or the same error.
func FuzzLoopReplay(f *testing.F) {
	addConformanceTemplates(f)
	for _, seed := range []string{
		"{% for m in messages %}{{ m.role }}{{ m.content }}{{ x }}{% endfor %}",
		"{% macro r(m) %}{{ m.content|tojson }}{{ x }}{% endmacro %}{% for m in messages %}{{ r(m) }}{% endfor %}",
		"{% set ns = namespace(n=0) %}{% for m in messages %}{% if m.tool_calls %}{% set ns.n = ns.n + 1 %}{% endif %}{{ ns.n }}{% endfor %}",
		"{% for m in messages %}{% for c in m.tool_calls or [] %}{{ loop.index }}{{ c.id }}{% endfor %}{{ loop.last }}{% endfor %}",
		"{% macro s(p) %}{% for m in messages %}{{ p }}{{ m.role }}{% endfor %}{% endmacro %}{{ s(1) }}{{ s(x) }}{% set x = 3 %}{{ s(x) }}",
		"{% macro m() %}{% for x in messages %}{{ x.content }}{% endfor %}{% endmacro %}{% if messages|length is even %}{% set s = m() %}[{{ s }}]{% else %}{{ m() }}{% endif %}",
	} {
		f.Add(seed)
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(fuzzMessages, &msgs); err != nil {
		f.Fatal(err)
	}
	args := []map[string]json.RawMessage{nil, {"x": json.RawMessage(`1`)}, {"x": json.RawMessage(`"<x>"`), "thinking": json.RawMessage(`false`)}}
	f.Fuzz(func(t *testing.T, src string) {
		tmpl, err := Parse("fuzz", src)
		if err != nil {
			return
		}
		tmpl.limits = fuzzLimits
		watchdog := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("renders of %q did not finish in 10s", src)) })
		defer watchdog.Stop()
		var cache MessageCache
		for i := 0; i <= 2*len(msgs); i++ {
			n := min(i, 2*len(msgs)-i) // the conversation grows, then shrinks
			o := Options{Messages: json.RawMessage(joinMessages(msgs[:n], ",")), Tools: fuzzTools, AddGenerationPrompt: true, Extra: args[i%len(args)], Now: fixedNow}
			want, wantErr := tmpl.Render(o)
			o.Messages, o.MessageList, o.Cache = nil, msgs[:n:n], &cache
			got, err := tmpl.Render(o)
			if got != want || errText(err) != errText(wantErr) {
				t.Fatalf("render %d (%d messages): got %q (%v), want %q (%v)", i, n, got, err, want, wantErr)
			}
		}
	})
}
