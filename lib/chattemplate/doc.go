// Package chattemplate renders Hugging Face chat templates byte for byte as
// transformers' apply_chat_template does. It is a Jinja engine of its own
// (lexer, parser to a syntax tree, evaluator) with Python jinja2's semantics
// in the environment transformers builds: ImmutableSandboxedEnvironment with
// trim_blocks, lstrip_blocks, no kept trailing newline, the loopcontrols
// extension, {% generation %} blocks, raise_exception, strftime_now and
// transformers' tojson (json.dumps with ensure_ascii=False, Python spacing
// and key order kept).
//
// Usage:
//
//	tmpl, err := chattemplate.Parse("qwen3", src) // once; safe to share
//	text, err := tmpl.Render(chattemplate.Options{
//		Messages:            messagesJSON,
//		Tools:               toolsJSON, // nil: the template sees None
//		AddGenerationPrompt: true,
//		BOSToken:            "<s>",
//		EOSToken:            "</s>",
//		Extra:               map[string]json.RawMessage{"enable_thinking": []byte("false")},
//	})
//
// Values behave like the Python objects transformers hands to the template:
// JSON objects are dicts that keep their key order, integral JSON numbers are
// ints (of any size, as Python's) and others floats, null is None (printed
// "None"), and strings, numbers, lists and dicts print as Python's str() and
// repr() do. Filters that return generators in jinja2 (map, select,
// selectattr, reject, rejectattr, unique, batch, slice, items; reverse gives
// an iterator) do here too: one pass, no length, always true. Undefined
// values follow jinja2's default Undefined: falsy, printed empty, an error
// when used in arithmetic, called or asked for an attribute.
//
// Supported: whitespace control ({%- -%}, {{- -}}, {%+ %}, {% +%}) with exact
// trim_blocks/lstrip_blocks rules; raw blocks and comments; if/elif/else; for
// with else, an if clause, nested tuple unpacking, recursive loops, the loop
// variable (index, index0, revindex, revindex0, first, last, length, depth,
// previtem, nextitem, cycle, changed), break and continue; set (plain, tuple,
// namespace attribute and block form with filters); macros with defaults,
// varargs, kwargs, call blocks with caller and the Macro attributes; filter
// blocks; with blocks; autoescape blocks; jinja2's compile-time scoping
// rules. Expressions: literals, lists, tuples, dicts, attribute and item
// access, Python slicing, arithmetic with Python int/float semantics, ~,
// comparisons (chained), in/not in, and/or/not, conditional expressions,
// calls with *args and **kwargs, tests and filters. The jinja2 builtin
// filters and tests chat templates use, the Python str/list/dict methods
// (mutating list and dict methods are refused as in the sandbox), "%"
// formatting and str.format, and the globals range (sandbox-limited),
// namespace, dict, joiner, cycler, raise_exception and strftime_now.
//
// Not supported: template inheritance and inclusion (extends, block, include,
// import), the do statement, and HTML Markup: escape and safe return plain
// strings, while jinja2 returns Markup objects whose + and % escape the other
// operand. Inside {% autoescape true %} a printed value is escaped unless it
// comes straight from safe, escape, forceescape, tojson or a macro call.
// Error messages name the Python exception and usually carry Python's
// wording, but only raise_exception messages are guaranteed to match.
//
// Rendering is bounded: loop iterations, macro recursion depth, output size
// and memory built by expressions are limited, so a hostile template ends
// with an error instead of hanging.
package chattemplate
