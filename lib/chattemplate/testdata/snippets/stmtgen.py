import json, random, sys
random.seed(int(sys.argv[1]))
names = ["x", "y", "z"]
def val():
    return random.choice(["1", "'a'", "x", "y", "z", "ns.a", "loop.index", "i", "j", "(x ~ 'q')", "[1, 2]", "none", "lst", "m(1)", "varargs", "caller", "kwargs", "(loop.index0 if loop is defined else -1)"])
def out():
    return "{{ " + random.choice(["x", "y", "z", "ns.a", "i", "j", "loop.index", "loop.length", "loop.first", "loop.previtem", "loop.depth", "lst|length", "m('o')", "x is defined"]) + " }}"
def stmt(d, in_loop, in_macro):
    r = random.random()
    if r < 0.2:
        return "{% set " + random.choice(names) + " = " + val() + " %}"
    if r < 0.3:
        return "{% set ns.a = " + val() + " %}"
    if r < 0.45:
        return out()
    if d < 3 and r < 0.55:
        v = random.choice(["i", "j"])
        return "{% for " + v + " in " + random.choice(["lst", "[1, 2, 3]", "range(2)", "'ab'", "[]", "lst if x else []"]) + random.choice(["", " if " + v + " != 2"]) + " %}" + body(d+1, True, in_macro) + random.choice(["", "{% else %}E"]) + "{% endfor %}"
    if d < 3 and r < 0.65:
        return "{% if " + val() + " %}" + body(d+1, in_loop, in_macro) + random.choice(["", "{% elif " + val() + " %}" + body(d+1, in_loop, in_macro)]) + random.choice(["", "{% else %}" + body(d+1, in_loop, in_macro)]) + "{% endif %}"
    if in_loop and r < 0.7:
        return random.choice(["{% break %}", "{% continue %}", "{% if i == 1 %}{% break %}{% endif %}", "{% if loop.first %}{% continue %}{% endif %}"])
    if d < 3 and r < 0.75:
        return "{% with " + random.choice(names) + " = " + val() + " %}" + body(d+1, in_loop, in_macro) + "{% endwith %}"
    if d < 3 and r < 0.8:
        return "{% set " + random.choice(names) + " %}" + body(d+1, in_loop, in_macro) + "{% endset %}"
    if d < 3 and r < 0.85:
        return "{% filter upper %}" + body(d+1, in_loop, in_macro) + "{% endfilter %}"
    if d < 2 and r < 0.9:
        return "{% call(v) m2(" + val() + ") %}[" + body(d+1, in_loop, True) + "{{ v }}]{% endcall %}"
    return random.choice(["a", " ", "\n", "-"])
def body(d, in_loop, in_macro):
    return "".join(stmt(d, in_loop, in_macro) for _ in range(random.randint(1, 4)))
out_set = set()
while len(out_set) < int(sys.argv[2]):
    pre = "{% set ns = namespace(a=0) %}"
    macro = "{% macro m(p, q=2) %}<{{ p }}{{ q }}" + body(2, False, True) + ">{% endmacro %}"
    macro2 = "{% macro m2(v) %}({{ caller(v) }}" + body(2, False, True) + "){% endmacro %}"
    order = random.choice([0, 1])
    src = (pre + macro + macro2 + body(0, False, False)) if order else (pre + body(0, False, False) + macro + macro2 + body(0, False, False))
    out_set.add(src)
json.dump([["stmt_random", s] for s in sorted(out_set)], open("stmt_snippets.json", "w"), indent=0)
