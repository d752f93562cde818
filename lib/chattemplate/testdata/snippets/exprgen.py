import json, random, sys
random.seed(int(sys.argv[1]))
atoms = ["i", "x", "n", "t", "f", "s", "empty", "lst", "d", "u8", "nope", "0", "1", "-3", "2.5", "'ab'", "''", "[1, 2]", "[]", "{'k': 1}", "none", "true", "false", "(1, 'a')", "messages[0]", "messages[1].content", "d.a", "lst[0]", "lst[-1]", "s[1:4]", "lst[::-1]", "nested.k.v", "messages", "messages[2].tool_calls", "tools", "d.items()", "range(3)", "('%s-%d' % ('a', i))", "tools[0].function", "messages[2]", "'<think>r</think>ans'", "' a b '", "'x\\ny'", "1e-7", "12345678.9", "-0.0", "'ß'", "'{0}:{1}'"]
binops = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">=", "in", "not in", "and", "or"]
filters = ["length", "string", "trim", "upper", "lower", "first", "last", "list", "join(',')", "default('D')", "int", "float", "abs", "round", "tojson", "sort", "reverse|list", "unique|list", "sum", "max", "min", "title", "capitalize", "wordcount", "items|list", "dictsort", "e", "count", "select|list", "reject|list", "map('string')|list", "batch(2)|list", "replace('a', 'b')", "indent(2)", "center(6)", "truncate(3, true, '', 0)", "d(none, true)", "tojson(indent=2)", "selectattr('role')|list", "map(attribute='role')|list", "groupby('role')|list", "dictsort(reverse=true)", "sort(attribute='role')|list", "tojson(separators=(',', ':'))", "join('|', attribute='role')", "rejectattr('content')|list", "string|length", "list|length", "first|string", "round(1)", "int(3)", "float(1.5)", "unique|list|length", "min(attribute='role')", "trim('ab')", "replace('a', 'b', 1)", "format(1, 2)", "pprint"]
tests = ["defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "iterable", "sequence", "boolean", "true", "false", "odd", "even", "divisibleby(2)", "eq 1", "in [1, 'ab']", "lower", "upper", "callable", "sameas none"]
methods = ["strip()", "upper()", "split()", "split(',')", "startswith('a')", "endswith(('b', 'c'))", "replace('a', 'z')", "find('b')", "count('a')", "title()", "lstrip('a')", "get('a')", "get('zz', 0)", "keys()|list", "values()|list", "items()|list", "index(1)", "format(1)", "join(['x', 'y'])", "zfill(4)", "isdigit()", "rstrip('\\n')", "split('</think>')[-1]", "rsplit(' ', 1)", "splitlines()", "ljust(6, '.')", "partition(',')", "format(i, x)", "lower().strip()", "get('role', 'none')", "copy()", "count(3)", "removeprefix('a')", "casefold()", "encode('utf-8') if false else 1"]
def expr(d=0):
    r = random.random()
    if d > 2 or r < 0.3:
        return random.choice(atoms)
    if r < 0.5:
        return "(" + expr(d+1) + " " + random.choice(binops) + " " + expr(d+1) + ")"
    if r < 0.65:
        return expr(d+1) + "|" + random.choice(filters)
    if r < 0.75:
        return "(" + expr(d+1) + " is " + random.choice(["", "not "]) + random.choice(tests) + ")"
    if r < 0.85:
        return "(" + expr(d+1) + ")." + random.choice(methods)
    if r < 0.9:
        return "(" + expr(d+1) + " if " + expr(d+1) + " else " + expr(d+1) + ")"
    if r < 0.95:
        return "(not " + expr(d+1) + ")"
    return "[" + expr(d+1) + ", " + expr(d+1) + "]"
out = set()
while len(out) < int(sys.argv[2]):
    out.add("{{ " + expr() + " }}")
json.dump([["expr_random", s] for s in sorted(out)], open("expr_snippets.json", "w"), indent=0)
