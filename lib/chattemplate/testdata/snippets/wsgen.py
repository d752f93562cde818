# Random templates built from whitespace-sensitive pieces, for comparing
# the lexer's whitespace handling with jinja2.
import json, random, sys
random.seed(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
def tag(body, kind):
    l = random.choice(["", "", "-", "+"]) if kind != "{{" else random.choice(["", "-"])
    r = random.choice(["", "", "-", "+"]) if kind != "{{" else random.choice(["", "-"])
    o, c = {"{%": ("{%", "%}"), "{{": ("{{", "}}"), "{#": ("{#", "#}")}[kind]
    return o + l + body + r + c
def ws():
    return "".join(random.choice([" ", "  ", "\t", "\n", "\n", "x", "\n  ", " \n", ""]) for _ in range(random.randint(0, 4)))
def piece(depth=0):
    k = random.random()
    if k < 0.25:
        return ws()
    if k < 0.45:
        return tag(" i ", "{{")
    if k < 0.55:
        return tag(" c ", "{#")
    if k < 0.65:
        return tag(" set z = 1 ", "{%")
    if depth < 2 and k < 0.85:
        return tag(" if t ", "{%") + body(depth + 1) + tag(" else ", "{%") + body(depth + 1) + tag(" endif ", "{%")
    if depth < 2:
        return tag(" for q in lst ", "{%") + body(depth + 1) + tag(" endfor ", "{%")
    return ws()
def body(depth):
    return "".join(piece(depth) for _ in range(random.randint(0, 4)))
srcs = set()
while len(srcs) < int(sys.argv[2]) if len(sys.argv) > 2 else 300:
    srcs.add(ws() + body(0) + ws())
json.dump([["whitespace_random", s] for s in sorted(srcs)], open("ws_snippets.json", "w"), indent=0)
