package chattemplate

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMacroOutputAsPrintedValue: {{ m(...) }}, where the macro writes its
// output straight into the text, renders as {{ m(...) if true }}, where the
// macro's output is a value that is then printed: the same text, or the same
// error (its kind, message and line) when the macro fails, recurses too deep or meets a limit on output, memory or steps.
func TestMacroOutputAsPrintedValue(t *testing.T) {
	macros := `{%- macro m(x, y=2) -%}[{{ x }}{{ y }}{{ n(x) }}]{%- endmacro -%}` +
		`{%- macro n(x) -%}<{{ x * 3 }}>{%- endmacro -%}` +
		`{%- macro big(k) -%}{{ 'abcdefgh' * k }}{{ n(k) }}{%- endmacro -%}` +
		`{%- macro rec(k) -%}{{ k }}{% if k > 0 %}{{ rec(k - 1) }}{% endif %}{%- endmacro -%}` +
		`{%- macro bad() -%}ok{{ raise_exception('no') }}{%- endmacro -%}` +
		`{%- macro undef() -%}{{ nothing.at.all }}{%- endmacro -%}` +
		`{%- macro brk() -%}{% for i in range(3) %}{{ i }}{% if i %}{% break %}{% endif %}{% endfor %}{%- endmacro -%}` +
		`{%- macro wrap() -%}({{ caller() }}){%- endmacro -%}` +
		`{%- macro kw(a, b) -%}{{ a }}{{ b }}{{ kwargs }}{%- endmacro -%}` +
		`{%- macro kwa() -%}{{ kwargs }}{{ varargs }}{%- endmacro -%}`
	calls := []string{
		"m(1)", "m('a', y='b')", "m(1, 2, 3)", "m(z=1)", "n(2)", "big(3)", "big(1000)", "rec(5)", "rec(400)",
		"bad()", "undef()", "brk()", "kw(1, b=2)", "kwa(1, x=2)", "nope()", "messages[0].get('role')",
		"'x'.upper()", "range(3)",
	}
	lims := []limits{defaultLimits, {steps: 40, callDepth: 250, output: 1 << 20, alloc: 1 << 20},
		{steps: 2_000_000, callDepth: 3, output: 1 << 20, alloc: 1 << 20},
		{steps: 2_000_000, callDepth: 250, output: 30, alloc: 1 << 20},
		{steps: 2_000_000, callDepth: 250, output: 1 << 20, alloc: 20}}
	msgs := json.RawMessage(`[{"role":"user","content":"hi"}]`)
	for _, call := range calls {
		for _, body := range []string{"a{{ %s }}b", "{%% for i in range(3) %%}{{ %s }}{%% endfor %%}", "{%% call wrap() %%}{{ %s }}{%% endcall %%}"} {
			direct := macros + "\n" + strings.ReplaceAll(body, "%s", call)
			direct = strings.ReplaceAll(direct, "%%", "%")
			printed := strings.Replace(direct, "{{ "+call+" }}", "{{ "+call+" if true }}", 1)
			for i, lim := range lims {
				got, gotErr := renderLimited(t, direct, lim, msgs)
				want, wantErr := renderLimited(t, printed, lim, msgs)
				if got != want || gotErr != wantErr {
					t.Errorf("%s, limits %d:\n got %q, %q\nwant %q, %q", direct[len(macros)+1:], i, got, gotErr, want, wantErr)
				}
			}
		}
	}
}

// TestDictMethodCallAsBoundMethod: d.get(...) and the other methods of a
// dict, called without the bound method getAttr makes, give what calling
// that bound method gives ({% set f = d.get %}{{ f(...) }}): the same
// value, the same error, the same escaping under autoescape, the same
// memory limit.
func TestDictMethodCallAsBoundMethod(t *testing.T) {
	calls := []string{
		"get('role')", "get('nope')", "get('nope', 'x')", "get('html', 1)", "get()", "get(1, 2, 3)", "get(key='role')",
		"items()", "keys()", "values()", "copy()", "items(1)",
	}
	msgs := json.RawMessage(`[{"role":"user","content":"hi","html":"<b>&</b>"}]`)
	for _, call := range calls {
		name, args, _ := strings.Cut(call, "(")
		for _, body := range []string{
			"{{ %s }}",
			"{%% autoescape true %%}{{ m() }}{{ %s }}{%% endautoescape %%}",
			"{{ (%s)|string|length }}",
		} {
			direct := strings.ReplaceAll(strings.ReplaceAll(body, "%s", "d."+call), "%%", "%")
			bound := strings.ReplaceAll(strings.ReplaceAll(body, "%s", "f("+args), "%%", "%")
			pre := "{%- macro m() -%}<i>{%- endmacro -%}{%- set d = messages[0] -%}"
			for _, lim := range []limits{defaultLimits, {steps: 2_000_000, callDepth: 250, output: 1 << 20, alloc: 10}} {
				got, gotErr := renderLimited(t, pre+direct, lim, msgs)
				want, wantErr := renderLimited(t, pre+"{%- set f = d."+name+" -%}"+bound, lim, msgs)
				if got != want || gotErr != wantErr {
					t.Errorf("%s (alloc limit %d):\n got %q, %q\nwant %q, %q", direct, lim.alloc, got, gotErr, want, wantErr)
				}
			}
		}
	}
}

// renderLimited renders the template src with msgs under the limits lim:
// the text and the error's text ("" for none).
func renderLimited(t *testing.T, src string, lim limits, msgs json.RawMessage) (string, string) {
	t.Helper()
	tmpl, err := Parse("t", src)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	tmpl.limits = lim
	out, err := tmpl.Render(Options{Messages: msgs})
	return out, errText(err)
}
