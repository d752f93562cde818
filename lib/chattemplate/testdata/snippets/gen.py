# Regenerates expected.json: python3 snippets.py && python3 gen.py snippets.json expected.json
# (Python 3 with jinja2 3.1; the environment mirrors transformers' apply_chat_template.)
import json, sys
import jinja2, jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment
def raise_exception(message): raise jinja2.exceptions.TemplateError(message)
def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
class Generation(jinja2.ext.Extension):
    """transformers' {% generation %} block: renders its body in a call block."""
    tags = {"generation"}
    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)
    def _render(self, caller):
        return caller()
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols, Generation])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = lambda f: "2025-06-15"
VARS_JSON = open("vars.json").read()
out = []
for group, src in json.load(open(sys.argv[1])):
    try:
        # Fresh variables per fragment: a failing filter can mutate a list in place.
        s = env.from_string(src).render(**json.loads(VARS_JSON))
        out.append({"group": group, "src": src, "ok": True, "output": s})
    except Exception as e:
        out.append({"group": group, "src": src, "ok": False, "error": f"{type(e).__name__}: {e}"})
json.dump(out, open(sys.argv[2], "w"), ensure_ascii=False, indent=1)
