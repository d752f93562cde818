// Package kimitools renders tool schemas for Kimi-K2.5 exactly as the
// model's Hugging Face tokenizer does before its chat template runs: every
// object's keys sorted, recursively (deep_sort_dict in tokenization_kimi.py),
// then the tools written as a TypeScript namespace
// (encode_tools_to_typescript_style in tool_declaration_ts.py). The template
// prints that declaration as tools_ts_str, or, where the Python code raises,
// the sorted tools as compact JSON. SGLang and vLLM serve the model through
// that code, so the declaration is what the model was trained on.
//
// The encoder is a port of the reference's behaviour, Python's quirks
// included (str() of numbers and booleans, strings iterated as characters,
// which schemas raise), because a prompt that differs by one byte is a
// different prompt.
package kimitools

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnsupported wraps the reasons the reference encoder raises on a tool
// list: the template then prints the sorted tools as JSON instead.
var ErrUnsupported = errors.New("the TypeScript declaration does not support these tools")

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
}

// Tools is a tool list as Kimi-K2.5's tokenizer hands it to the chat
// template.
type Tools struct {
	// Sorted is the tools with every object's keys sorted, as compact JSON.
	Sorted []byte
	// Declaration is tools_ts_str; meaningful only when Declared.
	Declaration string
	// Declared reports whether tools_ts_str is set. It is not when the
	// tools are empty or null, or when the encoder raises (Err says why).
	// An empty Declaration (no function tools) is set, and falsy.
	Declared bool
	// Err is why the encoder raised (wrapping ErrUnsupported), or nil.
	Err error
}

// Prepare sorts tools (a JSON value, normally an array of OpenAI tool
// objects) and encodes the declaration. Its error is for tools that are not
// JSON; a schema the reference cannot encode is reported in Tools.Err.
func Prepare(tools []byte) (Tools, error) {
	v, err := parse(tools)
	if err != nil {
		return Tools{}, err
	}
	t := Tools{Sorted: appendSorted(make([]byte, 0, len(tools)), v)}
	if !v.truthy() { // apply_chat_template: `if tools:`
		return t, nil
	}
	t.Declaration, t.Err = encodeTools(v)
	t.Declared = t.Err == nil
	return t, nil
}

// Declaration returns the TypeScript declaration of tools, or an error
// wrapping ErrUnsupported where the reference raises (or errSyntax where the
// tools are not JSON). Null or empty tools give "".
func Declaration(tools []byte) (string, error) {
	t, err := Prepare(tools)
	if err != nil {
		return "", err
	}
	return t.Declaration, t.Err
}

// SortKeys returns tools with every object's keys sorted, recursively, list
// order kept, as compact JSON.
func SortKeys(tools []byte) ([]byte, error) {
	v, err := parse(tools)
	if err != nil {
		return nil, err
	}
	return appendSorted(make([]byte, 0, len(tools)), v), nil
}

func encodeTools(tools *value) (string, error) {
	if tools.kind != kindList { // iterating a dict or a str yields strs: tool.get raises
		return "", unsupported("tools are a %s, not a list", pyTypeName(tools))
	}
	var funcs []string
	for _, tool := range tools.list {
		if tool.kind != kindDict {
			return "", unsupported("a tool is a %s, not an object", pyTypeName(tool))
		}
		if !tool.get("type").isString("function") {
			continue // "_plugin" and other kinds are left out
		}
		fn := tool.get("function")
		if fn == nil || !fn.truthy() {
			continue
		}
		if fn.kind != kindDict {
			return "", unsupported("a function is a %s, not an object", pyTypeName(fn))
		}
		s, err := encodeFunction(fn)
		if err != nil {
			return "", err
		}
		funcs = append(funcs, s)
	}
	if len(funcs) == 0 {
		return "", nil
	}
	return "# Tools\n\n## functions\nnamespace functions {\n" + strings.Join(funcs, "\n") + "\n}\n", nil
}

const indentStep = "  "

func encodeFunction(fn *value) (string, error) {
	reg := &registry{index: map[string]int{}}
	params := fn.get("parameters")
	if params == nil || !params.truthy() {
		params = &value{kind: kindDict}
	}
	root, err := parseObject(params, reg)
	if err != nil {
		return "", err
	}
	var interfaces []string
	selfRef := reg.selfRef // decided before the definitions are parsed, which may refer to # too
	if selfRef {
		fields := make([]string, 0, len(root.props))
		for _, p := range root.props { // in key order: the root interface does not put required first
			s, err := p.typescript(indentStep)
			if err != nil {
				return "", err
			}
			fields = append(fields, s)
		}
		body := ""
		if len(fields) > 0 {
			body = "\n" + strings.Join(fields, ",\n") + "\n"
		}
		interfaces = append(interfaces, "interface parameters {"+body+"}")
	}
	// Definitions registered while these are parsed are known to $ref but
	// get no interface of their own.
	defs := append([]definition(nil), reg.defs...)
	for _, d := range defs {
		t, err := parseType(d.schema, reg)
		if err != nil {
			return "", err
		}
		body, _, err := t.typescript("")
		if err != nil {
			return "", err
		}
		if d.schema.kind != kindDict {
			return "", unsupported("definition %s is a %s, not an object", d.name, pyTypeName(d.schema))
		}
		desc := ""
		if dv := d.schema.get("description"); dv != nil && dv.truthy() {
			if dv.kind != kindString {
				return "", unsupported("the description of definition %s is a %s", d.name, pyTypeName(dv))
			}
			desc = formatDescription(dv.s, "") + "\n"
		}
		interfaces = append(interfaces, desc+"interface "+d.name+" "+body)
	}
	name := "function"
	if nv := fn.get("name"); nv != nil {
		name = pyStr(nv)
	}
	var typeDef string
	if selfRef {
		typeDef = "type " + name + " = (_: parameters) => any;"
	} else {
		body, _, err := root.typescript("")
		if err != nil {
			return "", err
		}
		typeDef = "type " + name + " = (_: " + body + ") => any;"
	}
	parts := make([]string, 0, 3)
	if s := strings.Join(interfaces, "\n"); s != "" {
		parts = append(parts, s)
	}
	if dv := fn.get("description"); dv != nil && dv.truthy() {
		if dv.kind != kindString {
			return "", unsupported("the description of function %s is a %s", name, pyTypeName(dv))
		}
		parts = append(parts, formatDescription(dv.s, ""))
	}
	parts = append(parts, typeDef)
	return strings.Join(parts, "\n"), nil
}

// formatDescription writes each line as a // comment; empty lines stay
// empty, without the indent.
func formatDescription(desc, indent string) string {
	lines := strings.Split(desc, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = indent + "// " + l
		}
	}
	return strings.Join(lines, "\n")
}

// pyTypeName names v's Python type, for messages.
func pyTypeName(v *value) string {
	return [...]string{"None", "bool", "int", "float", "str", "list", "dict"}[v.kind]
}
