package chattemplate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Small tables per engine feature. Expected values are what Python jinja2
// renders in transformers' environment.

// tableVars are the variables every table case sees.
var tableVars = map[string]json.RawMessage{
	"n":     json.RawMessage(`null`),
	"t":     json.RawMessage(`true`),
	"i":     json.RawMessage(`7`),
	"x":     json.RawMessage(`2.5`),
	"s":     json.RawMessage(`"  Hello, World  "`),
	"u8":    json.RawMessage(`"Ünï 中文 🙂"`),
	"lst":   json.RawMessage(`[3, 1, 2]`),
	"d":     json.RawMessage(`{"b": 2, "a": 1}`),
	"tools": json.RawMessage(`[{"name": "get", "parameters": {"z": 1, "a": {"y": null, "b": true}}}]`),
}

type tableCase struct{ src, want string }

func runTable(t *testing.T, cases []tableCase) {
	t.Helper()
	for _, c := range cases {
		tmpl, err := Parse("table", c.src)
		if err != nil {
			t.Errorf("%q: parse: %v", c.src, err)
			continue
		}
		got, err := tmpl.Render(Options{Messages: json.RawMessage(`[{"role": "user", "content": "hi"}]`), Extra: tableVars, Now: fixedNow})
		if err != nil {
			t.Errorf("%q: %v", c.src, err)
			continue
		}
		if got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.src, got, c.want)
		}
	}
}

func TestWhitespaceControl(t *testing.T) {
	runTable(t, []tableCase{
		{"a  {%- if t %} b {% endif -%}  c", "a b c"},
		{"line1\n    {% if t %}\n    yes\n    {% endif %}\nend", "line1\n    yes\nend"},
		{"x\n  {{ i }}\n  {# c #}\n  y", "x\n  7\n  y"},
		{"{% if t %}\nA\n{% endif %}\n\nB\n\n", "A\n\nB\n"},
		{"a\n{%+ if t %}b{% endif %}", "a\nb"},
		{"x {% if t +%}\nkeep{% endif %}", "x \nkeep"},
		{"a  {{- i -}}  b", "a7b"},
		{"a {{ i }}   {% if t %}x{% endif %}", "a 7   x"},
		{"{% raw %}{{ not }}{% endraw %}\nafter", "{{ not }}after"},
		{"text\r\nmore\r\n", "text\nmore"},
		{"{% set v %}\n  block {{ i }}\n{% endset %}[{{ v }}]", "[  block 7\n]"},
	})
}

func TestToJSON(t *testing.T) {
	runTable(t, []tableCase{
		{"{{ tools|tojson }}", `[{"name": "get", "parameters": {"z": 1, "a": {"y": null, "b": true}}}]`},
		{"{{ tools|tojson(separators=(',', ':')) }}", `[{"name":"get","parameters":{"z":1,"a":{"y":null,"b":true}}}]`},
		{"{{ d|tojson(indent=2) }}", "{\n  \"b\": 2,\n  \"a\": 1\n}"},
		{"{{ d|tojson(sort_keys=true) }}", `{"a": 1, "b": 2}`},
		{"{{ [[], {}]|tojson(indent=1) }}", "[\n [],\n {}\n]"},
		{"{{ u8|tojson }}|{{ u8|tojson(ensure_ascii=true) }}", `"Ünï 中文 🙂"|"\u00dcn\u00ef \u4e2d\u6587 \ud83d\ude42"`},
		{`{{ [1, 2.0, 1e-7, none, 'q"\n'] |tojson }}`, `[1, 2.0, 1e-07, null, "q\"\n"]`},
		{"{{ (1, 2)|tojson }} {{ {1: 'a', none: 'b'}|tojson }}", `[1, 2] {"1": "a", "null": "b"}`},
	})
}

func TestSlicing(t *testing.T) {
	runTable(t, []tableCase{
		{"{{ lst[::-1] }} {{ lst[1:] }} {{ lst[:-1] }} {{ lst[-1] }}", "[2, 1, 3] [1, 2] [3, 1] 2"},
		{"{{ lst[::2] }} {{ lst[5:] }} {{ lst[-10:2] }} {{ lst[2:0:-1] }}", "[3, 2] [] [3, 1] [2, 1]"},
		{"{{ s[2:7] }}|{{ s[-3:] }}|{{ u8[1:3] }}|{{ u8[::-1] }}", "Hello|d  |nï|🙂 文中 ïnÜ"},
		{"{{ (1, 2, 3)[1:] }} {{ lst.1 }} {{ 'abc'.0 }}", "(2, 3) 1 a"},
	})
}

func TestLoopVariables(t *testing.T) {
	runTable(t, []tableCase{
		{"{% for x in lst %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
			"1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;"},
		{"{% for x in lst %}{{ loop.previtem|default('-') }}{{ loop.nextitem|default('-') }}{{ loop.cycle('a', 'b') }} {% endfor %}", "-1a 32b 1-a "},
		{"{% for x in lst if x > 1 %}{{ x }}{{ loop.length }}{% else %}none{% endfor %}", "3222"},
		{"{% for k, v in d.items() %}{{ k }}={{ v }}{% endfor %}", "b=2a=1"},
		{"{% for x in lst %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}", "3"},
		{"{% set v = 1 %}{% for i in lst %}{{ v }}{% set v = v + 10 %}{{ v }}{% endfor %}{{ v }}", "1111111111"},
	})
}

// TestScopeReuse: a scope given back for the next iteration or call
// starts as a new one would, and one that a macro defined in it keeps is
// not given back.
func TestScopeReuse(t *testing.T) {
	runTable(t, []tableCase{
		{"{% for x in lst %}{{ y is defined }}{% set y = x %}{{ y }}{% endfor %}", "False3False1False2"},
		{"{% macro m(a) %}{{ b is defined }}{% set b = a %}{{ b }}{% endmacro %}{{ m(1) }}{{ m(2) }}", "False1False2"},
		{"{% macro m(a) %}{% for x in [a, a] %}{{ x }}{% endfor %}{% endmacro %}{% for y in lst %}{{ m(y) }}{% endfor %}", "331122"},
		{"{% set ns = namespace(m=none) %}{% macro outer(a) %}{% macro inner() %}{{ a }}{% endmacro %}{% set ns.m = inner %}{% endmacro %}" +
			"{{ outer(1) }}{% set k = ns.m %}{{ outer(2) }}{{ k() }}{{ ns.m() }}", "12"},
	})
}

func TestNamespaceAndMacros(t *testing.T) {
	runTable(t, []tableCase{
		{"{% set ns = namespace(a=1, b='x') %}{% set ns.a = ns.a + 1 %}{% for v in lst %}{% set ns.b = ns.b ~ v %}{% endfor %}{{ ns.a }} {{ ns.b }}", "2 x312"},
		{"{% macro g(name, greeting='Hello') %}{{ greeting }}, {{ name }}{% endmacro %}{{ g('A') }}|{{ g('B', greeting='Hi') }}", "Hello, A|Hi, B"},
		{"{% macro m(a) %}{{ a }}{{ b }}{% endmacro %}{% set b = 'late' %}{{ m('x') }}", "xlate"},
		{"{% set a, b = 1, 2 %}{{ a }}{{ b }}", "12"},
		{"{% set v | upper %}abc{% endset %}{{ v }}", "ABC"},
	})
}

func TestUndefinedSemantics(t *testing.T) {
	runTable(t, []tableCase{
		{"[{{ nope }}] {{ nope is defined }} {{ nope|default('d') }} {{ nope|length }}", "[] False d 0"},
		{"{% if nope %}y{% else %}n{% endif %}{% for v in nope %}x{% else %}-{% endfor %}", "n-"},
		{"{{ messages[0].missing }}|{{ messages[0].missing is defined }}|{{ n.attr is defined }}", "|False|False"},
		{"{{ nope ~ 'x' }}|{{ nope == nope }}|{{ lst.append is defined }}", "x|True|False"},
	})
	for src, want := range map[string]string{
		"{{ nope.attr }}":               "'nope' is undefined",
		"{{ messages[0].missing.x }}":   "'dict object' has no attribute 'missing'",
		"{{ nope + 1 }}":                "'nope' is undefined",
		"{{ lst.append(1) }}":           "access to attribute 'append' of 'list' object is unsafe.",
		"{{ n|length }}":                "object of type 'NoneType' has no len()",
		"{{ 'a' in n }}":                "argument of type 'NoneType' is not iterable",
		"{{ raise_exception('boom') }}": "boom",
	} {
		tmpl, err := Parse("undef", src)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tmpl.Render(Options{Messages: json.RawMessage(`[{"role": "user"}]`), Extra: tableVars})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", src, err, want)
		}
	}
}

func TestRaiseExceptionMessageIsExact(t *testing.T) {
	tmpl, err := Parse("raise", "{{ raise_exception('Only user and assistant roles are supported!') }}")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render(Options{})
	var te *TemplateError
	if !errors.As(err, &te) || err.Error() != "Only user and assistant roles are supported!" {
		t.Fatalf("got %v", err)
	}
}

func TestPythonRendering(t *testing.T) {
	runTable(t, []tableCase{
		{"{{ n }} {{ none }} {{ true }} {{ False }} {{ n|trim }} {{ n ~ '' }}", "None None True False None None"},
		{"{{ 1.0 }} {{ 1e-5 }} {{ 1e16 }} {{ 123456789.125 }} {{ 0.1 + 0.2 }} {{ 7 / 2 }} {{ -7 // 2 }} {{ -7 % 3 }}", "1.0 1e-05 1e+16 123456789.125 0.30000000000000004 3.5 -4 2"},
		{"{{ [1, 'a', none, true, 2.0] }} {{ (1,) }} {{ {'a': 1, 'b': [none]} }}", "[1, 'a', None, True, 2.0] (1,) {'a': 1, 'b': [None]}"},
		{`{{ ["it's", 'say "hi"', 'x\ny'] }}`, `["it's", 'say "hi"', 'x\ny']`},
		{"{{ x }} {{ i * x }} {{ 1 + true }} {{ 2 ** 10 }} {{ 2 ** -1 }}", "2.5 17.5 2 1024 0.5"},
	})
}

func TestStringMethods(t *testing.T) {
	runTable(t, []tableCase{
		{"{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ 'xxhixx'.strip('x') }}|{{ '\\n\\nhi\\n'.strip('\\n') }}", "Hello, World|Hello, World  |  Hello, World|hi|hi"},
		{"{{ 'a,b,,c'.split(',') }} {{ '  a  b c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a b c'.rsplit(' ', 1) }}", "['a', 'b', '', 'c'] ['a', 'b', 'c'] ['a', 'b c'] ['a b', 'c']"},
		{"{{ s.startswith('  He') }} {{ s.endswith(('x', '  ')) }} {{ s.replace('l', 'L', 1) }}", "True True   HeLlo, World  "},
		{"{{ 'hello world 3rd'.title() }} {{ 'hello wORLD-foo (bar'|title }} {{ 'hELLO'.capitalize() }}", "Hello World 3Rd Hello World-Foo (Bar Hello"},
		{"{{ s.find('o') }} {{ s.rfind('o') }} {{ u8.find('中') }} {{ s.count('l') }} {{ '-'.join('abc') }}", "6 10 4 3 a-b-c"},
		{"{{ '{} and {}'.format('a', 1) }} {{ '{name}!'.format(name='n') }} {{ '{:.2f}'.format(3.14159) }}", "a and 1 n! 3.14"},
		{"{{ d.get('a') }} {{ d.get('zz', 'def') }} {{ d.keys()|list }} {{ d.values()|list }}", "1 def ['b', 'a'] [2, 1]"},
	})
}

func TestJSONNumbers(t *testing.T) {
	tmpl, err := Parse("numbers", "{{ messages[0].n }} {{ messages[0].n is integer }} {{ messages[0]|tojson }} {{ messages[0].f }} {{ messages[0].e }}")
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(Options{Messages: json.RawMessage(`[{"n": 123456789012345678901234, "f": 1.0, "e": 1E5, "z": -0}]`)})
	if err != nil {
		t.Fatal(err)
	}
	want := `123456789012345678901234 True {"n": 123456789012345678901234, "f": 1.0, "e": 100000.0, "z": 0} 1.0 100000.0`
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestReprEscapesNonPrintable(t *testing.T) {
	runTable(t, []tableCase{
		{`{{ ['a\u00a0b\u3000c\u200bd\ue000e🙂\x85', 'x'] }}`, `['a\xa0b\u3000c\u200bd\ue000e🙂\x85', 'x']`},
	})
}

// runErrorTable renders each template and wants the Python exception kind.
func runErrorTable(t *testing.T, cases []tableCase) {
	t.Helper()
	for _, c := range cases {
		tmpl, err := Parse("table", c.src)
		if err != nil {
			t.Errorf("%q: parse: %v", c.src, err)
			continue
		}
		got, err := tmpl.Render(Options{Extra: tableVars})
		var re *RenderError
		if !errors.As(err, &re) || re.Kind != c.want {
			t.Errorf("%q: rendered %q, error %v; want a %s", c.src, got, err, c.want)
		}
	}
}

func TestBigIntegers(t *testing.T) {
	runTable(t, []tableCase{
		{"{{ 9223372036854775807 + 1 }}|{{ -9223372036854775808 - 1 }}|{{ 2 ** 100 }}|{{ (2 ** 100) // 3 }}",
			"9223372036854775808|-9223372036854775809|1267650600228229401496703205376|422550200076076467165567735125"},
		{"{{ (2**100) % -7 }}|{{ -(2**100) // 7 }}|{{ 2**64 == 18446744073709551616 }}|{{ 2**64 > 1.5 }}|{{ 2**64 / 2 }}|{{ 2**63 - 1 }}",
			"-5|-181092942889747057356671886483|True|True|9.223372036854776e+18|9223372036854775807"},
		{"{{ [2**70]|tojson }}|{{ '{:,}'.format(2**70) }}|{{ 2**70 * 0.5 }}|{{ (-3)**41 }}|{{ (-2**70)|abs }}|{{ '-99999999999999999999'|int }}",
			"[1180591620717411303424]|1,180,591,620,717,411,303,424|5.902958103587057e+20|-36472996377170786403|1180591620717411303424|-99999999999999999999"},
		{"{{ 340282366920938463463374607431768211455 }}|{{ (2**64) is integer }}|{{ {2**64: 1}[18446744073709551616] }}",
			"340282366920938463463374607431768211455|True|1"},
	})
	runErrorTable(t, []tableCase{
		{"{{ 10 ** 5000 }}", "ValueError"}, // Python fails printing an int beyond 4300 digits
		{"{{ (10 ** 400) * 1.0 }}", "OverflowError"},
	})
}

func TestGenerators(t *testing.T) {
	runTable(t, []tableCase{
		{"{% set g = lst|map('string') %}{{ g|first }}|{{ g|list }}|{{ g|list }}", "3|['1', '2']|[]"},
		{"{{ lst|select('odd')|list }}|{% if [] | select %}always true{% endif %}|{{ (lst|reverse)[0] }}|{{ lst|reverse|list }}",
			"[3, 1]|always true||[2, 1, 3]"},
		{"{{ 1 in lst|map('int') }}|{{ lst|unique|list }}|{{ d|items|list }}|{{ lst|batch(2)|list }}|{{ lst|slice(2)|list }}",
			"True|[3, 1, 2]|[('b', 2), ('a', 1)]|[[3, 1], [2]]|[[3, 1], [2]]"},
		{"{% for x in lst|select %}{{ loop.length }}{% endfor %}|{{ lst|reject('odd')|join(',') }}|{{ lst|select|sum }}|{{ lst|select('divisibleby', num=3)|list }}|{{ 6 is divisibleby(num=3) }}",
			"333|2|6|[3]|True"},
	})
	runErrorTable(t, []tableCase{
		{"{{ lst|select|length }}", "TypeError"},
		{"{{ lst|map('int')|last }}", "TypeError"},
		{"{{ (d|items)[1:] }}", "TypeError"},
		{"{{ lst|select|tojson }}", "TypeError"},
		{"{{ (5|items)|list }}", "TypeError"},
	})
}

func TestJinja2Syntax(t *testing.T) {
	runTable(t, []tableCase{
		{"{% for a, (b, c) in [[1, [2, 3]]] %}{{ a }}{{ b }}{{ c }}{% endfor %}|{% with ((a,), b) = [[4], 5] %}{{ a }}{{ b }}{% endwith %}", "123|45"},
		{"{{ {'k': {'v': 1}}['k']['v'] }}|{% set if = 1 %}{{ if }}|{% set in = [1] %}{{ if in in }}|{{ [[1, [2, 3]]].0.1.1 }}", "1|1|True|3"},
		{"{% macro m(a, b) %}{{ a }}{{ b }}{% endmacro %}{{ m(*[1, 2]) }}{{ m(**{'a': 3, 'b': 4}) }}{{ m(5, *[6]) }}{{ dict(c=1, **d) }}",
			"123456{'c': 1, 'b': 2, 'a': 1}"},
		{"{% macro m(a, b=1) %}{{ caller() }}{% endmacro %}{{ m.name }} {{ m.arguments }} {{ m.caller }} {{ m.catch_kwargs }}",
			"m ('a', 'b') True False"},
		{"{% macro n() %}{{ caller.name }} {{ caller.arguments }} {{ caller }}{% endmacro %}{% call(x) n() %}{% endcall %}",
			"None ('x',) <Macro anonymous>"},
		{"{% autoescape true %}{{ '<a>' }}{{ '<b>'|safe }}{{ '<c>'|e }}{% endautoescape %}{{ '<d>' }}", "&lt;a&gt;<b>&lt;c&gt;<d>"},
		{"{% for x in lst %}{{ x }}{{ dict(loop) }}{% endfor %}", "3{1: <LoopContext 3/3>, 2: <LoopContext 3/3>}"},
	})
	runErrorTable(t, []tableCase{
		{"{{ 2 is even(42) }}", "TypeError"},
		{"{{ lst|select('odd', 1)|list }}", "TypeError"},
		{"{{ lst|select('divisibleby', num=3)|list }}{{ lst|select('ne', c=3)|list }}", "TypeError"},
		{"{{ 'abc'.replace('a', 'x', count=1) }}", "TypeError"}, // Python 3.11; 3.13 accepts count=
		{"{{ lst.index(1, start=0) }}", "TypeError"},
	})
	for _, src := range []string{"{{ }}", "{{ f(*a, b) }}", "{{ f(**a, b=1) }}", "{{ f(a=1, b) }}", "{% for (a, 1) in x %}{% endfor %}", "{{ (1 }}", "{{ [1) }}", "{{ 1) }}"} {
		if _, err := Parse("syntax", src); err == nil {
			t.Errorf("%q parsed; jinja2 rejects it", src)
		}
	}
}

// TestSignedConstants: a sign before a number is folded into a constant at
// parse time; the value must be what evaluating it gives, and a sign
// before anything else is still evaluated when rendered.
func TestSignedConstants(t *testing.T) {
	runTable(t, []tableCase{
		{"{{ -1 }}|{{ -1.5 }}|{{ +2 }}|{{ - -1 }}|{{ -2 ** 2 }}|{{ -9223372036854775808 }}|{{ -0.0 }}", "-1|-1.5|2|1|4|-9223372036854775808|-0.0"},
		{"{{ -i }}|{{ -1 + i }}|{{ [10, 20, 30][-1] }}|{{ range(3, -1, -1)|list }}|{{ -1|abs }}|{{ +x }}|{{ -t }}", "-7|6|30|[3, 2, 1, 0]|1|2.5|-1"},
	})
	tmpl, err := Parse("sign", "{{ -s }}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmpl.Render(Options{Extra: tableVars}); err == nil || !strings.Contains(err.Error(), "bad operand type for unary -: 'str'") {
		t.Fatalf("-s: got %v, want the TypeError", err)
	}
}

// TestDefinedTest: "name is defined" and "is undefined" on a bare name
// are answered from the name's binding, without evaluating it; a name
// bound to an undefined value, one that a later set makes local and
// unassigned yet, a global and a macro's missing argument must still
// answer as jinja2 does.
func TestDefinedTest(t *testing.T) {
	runTable(t, []tableCase{
		{"{% set u = nothere %}{{ u is defined }}|{{ n is defined }}|{{ range is defined }}|{{ i is undefined }}|{{ i is not defined }}|{{ nothere is not undefined }}|{{ nothere is defined }}", "False|True|True|False|False|False|False"},
		{"{% for m in messages %}{{ i is defined }}{{ m is defined }}{{ loop is defined }}{% endfor %}{% set i = 1 %}", "FalseTrueTrue"},
		{"{% macro f(a) %}{{ a is defined }}{{ b is defined }}{{ caller is defined }}{% endmacro %}{{ f() }}{{ f(1) }}", "FalseFalseFalseTrueFalseFalse"},
	})
}
