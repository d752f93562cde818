package chattemplate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// memoTemplates are the conformance templates and the bundled Kimi-K2.5
// template, by name.
func memoTemplates(t *testing.T) map[string]*Template {
	t.Helper()
	out := map[string]*Template{}
	names, _ := filepath.Glob(filepath.Join("testdata", "conformance", "*.jinja"))
	for _, path := range names {
		name := strings.TrimSuffix(filepath.Base(path), ".jinja")
		out[name] = loadTemplate(t, name)
	}
	src, err := os.ReadFile(filepath.Join("..", "bundle", "kimi_k25", "chat_template.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	if out["bundled_kimi_k25"], err = Parse("bundled_kimi_k25", string(src)); err != nil {
		t.Fatal(err)
	}
	return out
}

// rawMessages is msgs as a MessageList.
func rawMessages(msgs []string) []json.RawMessage {
	list := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		list[i] = json.RawMessage(m)
	}
	return list
}

// agentTurns is a conversation of tool-using turns that grows as
// generate --turns all grows it, then has its history rewritten: answers
// with and without reasoning, tool calls and their results, plain answers,
// a system message added at the start, an earlier answer's reasoning
// dropped, a message in the middle edited and one removed.
func agentTurns() [][]string {
	msgs := []string{`{"role":"system","content":"You are careful."}`, `{"role":"user","content":"Weather in Paris and <Tokyo>?"}`}
	var convs [][]string
	add := func(m ...string) {
		msgs = append(msgs, m...)
		convs = append(convs, append([]string(nil), msgs...))
	}
	convs = append(convs, append([]string(nil), msgs...))
	for k := range 6 {
		n := fmt.Sprint(k)
		call := `[{"id":"call_` + n + `","type":"function","function":{"name":"get_weather","arguments":{"city":"Paris","day":` + n + `}}}]`
		add(`{"role":"assistant","content":"Looking (` + n + `).","reasoning_content":"call the tool ` + n + `","tool_calls":` + call + `}`)
		add(`{"role":"tool","tool_call_id":"call_` + n + `","content":"{\"temp\": 2` + n + `}"}`)
		add(`{"role":"assistant","content":"It is 2`+n+` degrees.","reasoning_content":"read the result `+n+`"}`,
			`{"role":"user","content":"And day `+n+`?"}`)
		if k%2 == 1 {
			add(`{"role":"assistant","content":"Plain `+n+`."}`, `{"role":"user","content":[{"type":"text","text":"parts `+n+`"}]}`)
		}
	}
	edits := [][]string{
		append([]string{`{"role":"system","content":"A new first system message."}`}, msgs...),
		append(append([]string(nil), msgs[:4]...), append([]string{`{"role":"assistant","content":"It is 20 degrees."}`}, msgs[5:]...)...),
		append(append([]string(nil), msgs[:7]...), append([]string{`{"role":"user","content":"edited"}`}, msgs[8:]...)...),
		append(append([]string(nil), msgs[:3]...), msgs[4:]...),
		msgs,
	}
	return append(convs, edits...)
}

// memoArgs are template arguments that change from one render to the next:
// the thinking switches Kimi's templates read inside their message loops.
var memoArgs = []map[string]json.RawMessage{
	nil,
	{"thinking": json.RawMessage(`false`)},
	{"thinking": json.RawMessage(`true`), "enable_thinking": json.RawMessage(`false`)},
	{"preserve_thinking": json.RawMessage(`true`)},
	nil,
	nil,
}

// TestLoopReplayRendersAsWithout renders agentTurns, each array after the
// one before through one MessageCache, with every template, the template
// arguments changing now and then, and compares each render with a render
// without the cache: the same text, or the same error. Kimi-K2.5's
// templates must have replayed iterations.
func TestLoopReplayRendersAsWithout(t *testing.T) {
	for name, tmpl := range memoTemplates(t) {
		t.Run(name, func(t *testing.T) {
			var cache MessageCache
			replayed := 0
			for i, msgs := range agentTurns() {
				o := Options{
					MessageList:         rawMessages(msgs),
					Tools:               json.RawMessage(`[{"type":"function","function":{"name":"get_weather","parameters":{}}}]`),
					AddGenerationPrompt: i%5 != 4,
					BOSToken:            "<s>",
					EOSToken:            "</s>",
					Extra:               memoArgs[i/3%len(memoArgs)],
					Now:                 fixedNow,
				}
				want, wantErr := tmpl.Render(o)
				o.Cache = &cache
				got, err := tmpl.Render(o)
				if got != want || errText(err) != errText(wantErr) {
					t.Fatalf("render %d (%d messages): %s (err %v, want %v)", i, len(msgs), describeMismatch(got, want), err, wantErr)
				}
				replayed += cache.Replayed
			}
			t.Logf("%d iterations replayed", replayed)
			if strings.Contains(name, "kimi_k25") && replayed == 0 {
				t.Fatal("no iteration replayed")
			}
		})
	}
}

// TestLoopReplayFallsBack renders templates whose loop bodies depend on
// more than the message and loop-invariant values (the loop variable, a
// namespace they assign, break, the clock, a joiner's state, ...) or whose
// loops run twice in one render with different surroundings, over a
// growing conversation through one MessageCache: each render must equal
// one without the cache, and the loops that cannot be replayed must not
// have been.
func TestLoopReplayFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		replays   bool
	}{
		{"plain", `{% for m in messages %}{{ m.role }}: {{ m.content }};{% endfor %}`, true},
		{"loop index", `{% for m in messages %}{{ loop.index }}{{ m.content }}{% endfor %}`, false},
		{"loop last", `{% for m in messages %}{{ m.content }}{% if not loop.last %},{% endif %}{% endfor %}`, false},
		{"loop in a nested if clause", `{% for m in messages %}{% for c in m.content if loop.first %}{{ c }}{% endfor %}{% endfor %}`, false},
		{"loop of a nested loop", `{% for m in messages %}{% for c in [1, 2] %}{{ loop.index }}{% endfor %}{{ m.content }}{% endfor %}`, true},
		{"namespace set", `{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{{ ns.n }}{% endfor %}`, false},
		{"namespace set by a macro", `{% set ns = namespace(n=0) %}{% macro bump() %}{% set ns.n = ns.n + 1 %}{% endmacro %}{% for m in messages %}{{ bump() }}{{ m.content }}{% endfor %}{{ ns.n }}`, false},
		{"namespace set, not read", `{% set ns = namespace(n=0) %}{% for m in messages %}{% if m.content == 'a' %}{% set ns.n = 'seen a' %}{% endif %}{% endfor %}{{ ns.n }}`, false},
		{"namespace set by a macro, not read", `{% set ns = namespace(n=0) %}{% macro mark() %}{% set ns.n = 'seen' %}{% endmacro %}{% for m in messages %}{% if m.content == 'a' %}{{ mark() }}{% endif %}{% endfor %}{{ ns.n }}`, false},
		{"namespace read", `{% set ns = namespace(p='>') %}{% for m in messages %}{{ ns.p }}{{ m.content }}{% endfor %}`, false},
		{"break", `{% for m in messages %}{% if m.content == 'c' %}{% break %}{% endif %}{{ m.content }}{% endfor %}`, false},
		{"continue", `{% for m in messages %}{% if m.content == 'b' %}{% continue %}{% endif %}{{ m.content }}{% endfor %}`, false},
		{"recursive", `{% for m in messages recursive %}{{ m.content }}{% endfor %}`, false},
		{"clock", `{% for m in messages %}{{ strftime_now('%S') }}{{ m.content }}{% endfor %}`, false},
		{"clock in a macro", `{% macro now() %}{{ strftime_now('%S') }}{% endmacro %}{% for m in messages %}{{ now() }}{{ m.content }}{% endfor %}`, false},
		{"joiner", `{% set j = joiner('|') %}{% for m in messages %}{{ j() }}{{ m.content }}{% endfor %}`, false},
		{"joiner in a loop run twice", `{% set j = joiner('|') %}{% macro show() %}{% for m in messages %}{{ j() }}{{ m.content }}{% endfor %}{% endmacro %}{{ show() }}{{ show() }}`, false},
		{"list read", `{% set seen = ['a'] %}{% for m in messages %}{{ m.content in seen }}{% endfor %}`, false},
		{"macro defined in the body", `{% for m in messages %}{% macro x() %}{{ m.content }}{% endmacro %}{{ x() }}{% endfor %}`, false},
		{"call block", `{% macro w() %}[{{ caller() }}]{% endmacro %}{% for m in messages %}{% call w() %}{{ m.content }}{% endcall %}{% endfor %}`, false},
		{"items the template made", `{% set ns = namespace(x=1) %}{% set items = [{'n': ns}] %}{% macro show() %}{% for it in items %}{{ it.n.x }}{% endfor %}{% endmacro %}{{ show() }}{% set ns.x = 2 %}{{ show() }}`, false},
		{"argument read", `{% for m in messages %}{{ prefix }}{{ m.content }}{% endfor %}`, true},
		// A loop that runs again in the same render in other surroundings
		// starts its memo again each time (and so here never replays).
		{"macro argument", `{% macro show(p) %}{% for m in messages %}{{ p }}{{ m.content }}{% endfor %}{% endmacro %}{{ show('a') }}{{ show('b') }}`, false},
		{"same macro argument", `{% macro show(p) %}{% for m in messages %}{{ p }}{{ m.content }}{% endfor %}{% endmacro %}{{ show('a') }}{{ show('a') }}`, true},
		// show's loop runs inside itself with another p: the outer run
		// must neither replay nor record once the inner one has started
		// the memo again; the loop over the messages replays.
		{"recursion through a macro", `{% macro show(p, d) %}{% for m in d.parts %}[{{ p }}{{ m.content }}{% if p < 2 %}{{ show(p + 1, d) }}{% endif %}]{% endfor %}{% endmacro %}{% for d in messages %}{{ show(0, d) }}{% endfor %}`, true},
		{"set before the loop changes", `{% for k in [1, 2] %}{% set x = k * 10 %}{% for m in messages %}{{ x }}{{ m.content }}{% endfor %}{% endfor %}`, false},
		{"autoescape", `{% macro show() %}{% for m in messages %}{{ m.content }}{% endfor %}{% endmacro %}{{ show() }}{% autoescape true %}{{ show() }}{% endautoescape %}`, false},
		{"variable set in the body", `{% for m in messages %}{% set c = m.content ~ '!' %}{{ c }}{% endfor %}{{ c }}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Parse(tc.name, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			var cache MessageCache
			var msgs []string
			replayed := 0
			for i, content := range []string{"a", "<b>", "c", "d"} {
				msgs = append(msgs, `{"role":"user","content":"`+content+`","parts":[{"content":"1"},{"content":"2"}]}`)
				clock := time.Date(2025, 1, 1, 0, 0, i, 0, time.UTC)
				o := Options{
					MessageList: rawMessages(msgs),
					Extra:       map[string]json.RawMessage{"prefix": json.RawMessage(fmt.Sprintf(`"%d>"`, i/2))},
					Now:         func() time.Time { return clock },
				}
				renderAgainstCache(t, tmpl, o, &cache, fmt.Sprintf("render %d", i))
				replayed += cache.Replayed
			}
			if tc.replays != (replayed > 0) {
				t.Fatalf("%d iterations replayed, want replays: %v", replayed, tc.replays)
			}
		})
	}
}

// TestLoopReplayLimits renders a conversation through a cache that holds
// the text of all its messages, or of all but the last, under limits on steps, output and
// memory from tiny to enough: a replayed iteration must fail where running
// it would, and succeed where it would.
func TestLoopReplayLimits(t *testing.T) {
	tmpl := memoTemplates(t)["bundled_kimi_k25"]
	convs := agentTurns()
	msgs := convs[len(convs)-1]
	opts := func(n int, cache *MessageCache) Options {
		return Options{MessageList: rawMessages(msgs[:n]), AddGenerationPrompt: true, Cache: cache}
	}
	full, err := tmpl.Render(opts(len(msgs), nil))
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]int{}
	for _, field := range []string{"steps", "output", "alloc"} {
		for n := 1; ; n += 1 + n/16 {
			limited := *tmpl
			switch field {
			case "steps":
				limited.limits.steps = n
			case "output":
				limited.limits.output = n
			default:
				limited.limits.alloc = n
			}
			want, wantErr := limited.Render(opts(len(msgs), nil))
			// The cache holds every message's text, or all but the last's.
			for _, warm := range []int{len(msgs), len(msgs) - 1} {
				var cache MessageCache
				if _, err := tmpl.Render(opts(warm, &cache)); err != nil {
					t.Fatal(err)
				}
				got, err := limited.Render(opts(len(msgs), &cache))
				if got != want || errText(err) != errText(wantErr) {
					t.Fatalf("%s limit %d, %d messages cached: got %q (%v), want %q (%v)", field, n, warm, got, err, want, wantErr)
				}
			}
			checked[field]++
			if wantErr == nil {
				if want != full {
					t.Fatalf("%s limit %d: rendered otherwise than without the limit", field, n)
				}
				break
			}
		}
	}
	t.Logf("limits checked: %v", checked)
}

// TestPeerSuitesThroughCache renders every peer case that passes messages
// twice through one MessageCache, its messages as the conversation: both
// renders must give what rendering without the cache gives.
func TestPeerSuitesThroughCache(t *testing.T) {
	ran, replayed := 0, 0
	for _, c := range loadPeerCases(t) {
		var msgs []json.RawMessage
		if raw, ok := c.Context["messages"]; !ok || c.Skip != "" || json.Unmarshal(raw, &msgs) != nil || msgs == nil {
			continue
		}
		tmpl, err := Parse(c.ID, c.Template)
		if err != nil {
			continue
		}
		extra := map[string]json.RawMessage{}
		for k, v := range c.Context {
			if k != "messages" {
				extra[k] = v
			}
		}
		want, wantErr := tmpl.Render(Options{Extra: c.Context, Now: peerNow})
		var cache MessageCache
		for range 2 {
			got, err := tmpl.Render(Options{MessageList: msgs, Extra: extra, Now: peerNow, Cache: &cache})
			if got != want || errText(err) != errText(wantErr) {
				t.Fatalf("%s: got %q (%v), want %q (%v)\ntemplate: %s", c.ID, truncate(got, 300), err, truncate(want, 300), wantErr, truncate(c.Template, 400))
			}
		}
		ran++
		replayed += cache.Replayed
	}
	t.Logf("%d cases, %d iterations replayed", ran, replayed)
	if ran == 0 || replayed == 0 {
		t.Fatal("no case replayed an iteration")
	}
}

// TestLoopMemoForgets renders conversations that grow, stay and shrink
// through one MessageCache: after each render, every loop's memo holds the
// iterations that render wrote, no more (those of messages that left the
// conversation or that the loop no longer reaches are forgotten), whether
// it ran or replayed them.
func TestLoopMemoForgets(t *testing.T) {
	tmpl, err := Parse("t", `{% for m in messages %}{{ m.content }}{% endfor %}{% for m in messages[1:] %}{{ m.role }}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	all := rawMessages([]string{`{"role":"user","content":"a"}`, `{"role":"assistant","content":"b"}`, `{"role":"user","content":"c"}`, `{"role":"assistant","content":"d"}`})
	var cache MessageCache
	for _, n := range []int{4, 4, 2, 3, 1, 4} {
		if _, err := tmpl.Render(Options{MessageList: all[:n], Cache: &cache}); err != nil {
			t.Fatal(err)
		}
		var sizes []int
		for _, s := range tmpl.body {
			if loop, ok := s.(*forStmt); ok {
				sizes = append(sizes, len(cache.loops[loop].iters))
			}
		}
		if want := []int{n, n - 1}; !slices.Equal(sizes, want) {
			t.Fatalf("%d messages: the loops hold %v iterations, want %v", n, sizes, want)
		}
	}
}

// TestDepsWalkerCompares: a loop's dependencies, looked up again, are
// compared with the memo's as they come; the walker must tell a list that
// is the memo's from one that parts from it anywhere (in the middle, at
// the end, shorter, longer, or no memo at all), and then hold the new
// list whole.
func TestDepsWalkerCompares(t *testing.T) {
	list := []value{0, false, "a", undefinedDep{}, expandedDep{}, seenDep{1}, "b"}
	edited := func(i int, v value) []value {
		out := slices.Clone(list)
		out[i] = v
		return out
	}
	for _, tc := range []struct {
		name    string
		old     []value
		changed bool
	}{
		{"the same", slices.Clone(list), false},
		{"no memo", nil, true},
		{"parts at the start", edited(0, 1), true},
		{"parts in the middle", edited(3, "c"), true},
		{"parts at the end", edited(len(list)-1, "c"), true},
		{"the memo's is shorter", list[:4], true},
		{"the memo's is longer", append(slices.Clone(list), "c"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := depsWalker{old: tc.old, out: make([]value, 0, 1)}
			for _, v := range list {
				d.add(v)
			}
			if got := d.changed(); got != tc.changed {
				t.Fatalf("changed: %v, want %v", got, tc.changed)
			}
			if tc.changed && !slices.Equal(d.out, list) {
				t.Fatalf("wrote out %v, want %v", d.out, list)
			}
		})
	}
}

// TestLoopReplayDependencyChanges renders a growing conversation through
// one MessageCache while the values a loop's body reads through its
// macros change from render to render, one at a time, first or last in
// the loop's dependencies: each render must equal one without the cache,
// replay nothing when a dependency changed, and replay again once they
// stay put.
func TestLoopReplayDependencyChanges(t *testing.T) {
	tmpl, err := Parse("deps", `{% macro tail(m) %}{{ m.content }}{{ b }}{% endmacro %}{% macro head(m) %}{{ a }}{{ tail(m) }}{% endmacro %}{% for m in messages %}[{{ head(m) }}{{ c is defined }}]{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	var cache MessageCache
	var msgs []string
	for i, tc := range []struct {
		args    string
		replays bool
	}{
		{`{"a": 1, "b": 2}`, false}, // the first render has nothing to replay
		{`{"a": 1, "b": 2}`, true},
		{`{"a": 9, "b": 2}`, false},
		{`{"a": 9, "b": 2}`, true},
		{`{"a": 9, "b": "x"}`, false},
		{`{"a": 9, "b": "x", "c": null}`, false},
		{`{"a": 9, "b": "x", "c": null}`, true},
		{`{"a": 9}`, false},
		{`{"a": 9}`, true},
	} {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"m%d"}`, i))
		var extra map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tc.args), &extra); err != nil {
			t.Fatal(err)
		}
		o := Options{MessageList: rawMessages(msgs), Extra: extra}
		renderAgainstCache(t, tmpl, o, &cache, fmt.Sprintf("render %d", i))
		if replays := cache.Replayed > 0; replays != tc.replays {
			t.Fatalf("render %d (%s): %d iterations replayed, want replays: %v", i, tc.args, cache.Replayed, tc.replays)
		}
	}
}

// TestRenderAfterFailedRender renders a conversation through one
// MessageCache where some renders fail part way (inside a loop, inside
// a macro called by it, at the step limit) and the next ones do not: the
// renders through the cache, whose renderer and scopes the next render
// takes up again, must each give what a render without the cache gives.
func TestRenderAfterFailedRender(t *testing.T) {
	tmpl, err := Parse("fail", `{% macro show(m) %}{% set c = m.content %}{% if c == 'boom' %}{{ raise_exception('boom in ' ~ m.role) }}{% endif %}{{ c }}{% endmacro %}{% for m in messages %}<{{ show(m) }}>{% endfor %}{% for m in messages[1:] %}{% if m.content == 'bang' %}{{ m.nothere.x }}{% endif %}{{ m.role }}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	var cache MessageCache
	var msgs []string
	failed := 0
	for i, content := range []string{"a", "b", "boom", "c", "bang", "d", "e"} {
		msg := fmt.Sprintf(`{"role":"user","content":%q}`, content)
		o := Options{MessageList: rawMessages(append(msgs, msg))}
		if err := renderAgainstCache(t, tmpl, o, &cache, fmt.Sprintf("render %d", i)); err != nil {
			failed++
			continue // the failing message does not stay
		}
		msgs = append(msgs, msg)
		limited := *tmpl
		limited.limits.steps = len(msgs) // fails in the first loop
		if _, err := limited.Render(o); err == nil || !strings.Contains(err.Error(), "step limit") {
			t.Fatalf("render %d with a step limit: %v, want the step limit's error", i, err)
		}
	}
	if failed != 2 {
		t.Fatalf("%d renders failed, want 2", failed)
	}
}

// TestLoopReplayBoundNames renders a growing conversation through one
// MessageCache while the argument p changes at every render. A loop body
// or macro that binds p before it runs (as the loop's target, a macro
// parameter, a name its scope assigns before reading) never sees the
// argument, and must replay every message the last render wrote; one that
// may read it from outside (assigned in one branch only, in a parameter's
// default) must replay none. Each render must equal one without the cache.
func TestLoopReplayBoundNames(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		replays   bool
	}{
		{"loop target", `{% for p in messages %}{{ p.content }}{% endfor %}`, true},
		{"macro parameter", `{% macro show(p) %}{{ p.content }}{% endmacro %}{% for m in messages %}{{ show(m) }}{% endfor %}`, true},
		{"set before read", `{% for m in messages %}{% set p = m.role %}{{ p }}{{ m.content }}{% endfor %}`, true},
		{"set before read in a macro", `{% macro show(m) %}{% set p = m.role %}{{ p }}{% endmacro %}{% for m in messages %}{{ show(m) }}{% endfor %}`, true},
		{"set in one branch", `{% for m in messages %}{% if m.content == 'c' %}{% set p = 'C' %}{% endif %}{{ p }}{{ m.content }}{% endfor %}`, false},
		{"parameter default", `{% macro show(m, q=p) %}{{ q }}{{ m.content }}{% endmacro %}{% for m in messages %}{{ show(m) }}{% endfor %}`, false},
		{"default before its parameter", `{% macro show(m, q=p, p=1) %}{{ q }}{{ p }}{{ m.content }}{% endmacro %}{% for m in messages %}{{ show(m) }}{% endfor %}`, false},
		{"nested loop target", `{% for m in messages %}{% for p in [m.content] %}{{ p }}{% endfor %}{{ p }}{% endfor %}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Parse(tc.name, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			var cache MessageCache
			var msgs []string
			for i, content := range []string{"a", "b", "c", "d"} {
				msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":%q}`, content))
				o := Options{MessageList: rawMessages(msgs), Extra: map[string]json.RawMessage{"p": json.RawMessage(fmt.Sprintf(`"p%d"`, i))}}
				renderAgainstCache(t, tmpl, o, &cache, fmt.Sprintf("render %d", i))
				wantReplayed := 0
				if tc.replays {
					wantReplayed = i
				}
				if cache.Replayed != wantReplayed {
					t.Fatalf("render %d: %d iterations replayed, want %d", i, cache.Replayed, wantReplayed)
				}
			}
		})
	}
}

// renderAgainstCache renders o without a cache and through cache: the two
// must agree, text and error, which it returns. what names the render in a
// failure.
func renderAgainstCache(t *testing.T, tmpl *Template, o Options, cache *MessageCache, what string) error {
	t.Helper()
	want, wantErr := tmpl.Render(o)
	o.Cache = cache
	got, err := tmpl.Render(o)
	if got != want || errText(err) != errText(wantErr) {
		t.Fatalf("%s: got %q (%v), want %q (%v)", what, got, err, want, wantErr)
	}
	return err
}
