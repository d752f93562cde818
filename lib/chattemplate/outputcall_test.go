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
				render := func(src string) (string, string) {
					tmpl, err := Parse("t", src)
					if err != nil {
						t.Fatalf("%s: %v", src, err)
					}
					tmpl.limits = lim
					out, err := tmpl.Render(Options{Messages: msgs})
					return out, errText(err)
				}
				got, gotErr := render(direct)
				want, wantErr := render(printed)
				if got != want || gotErr != wantErr {
					t.Errorf("%s, limits %d:\n got %q, %q\nwant %q, %q", direct[len(macros)+1:], i, got, gotErr, want, wantErr)
				}
			}
		}
	}
}
