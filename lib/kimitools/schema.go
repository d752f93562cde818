package kimitools

import "strings"

// registry holds a function's $defs in the order they were first
// registered (a later registration of a name replaces its schema in place,
// as assigning to a Python dict does), and whether "#" was referred to.
type registry struct {
	defs    []definition
	index   map[string]int
	selfRef bool
}

type definition struct {
	name   string
	schema *value
}

func (r *registry) register(defs *value) error {
	if !defs.truthy() {
		return nil
	}
	if defs.kind != kindDict {
		return unsupported("$defs is a %s, not an object", pyTypeName(defs))
	}
	for _, m := range defs.dict {
		if i, ok := r.index[m.key]; ok {
			r.defs[i].schema = m.val
			continue
		}
		r.index[m.key] = len(r.defs)
		r.defs = append(r.defs, definition{m.key, m.val})
	}
	return nil
}

// schemaType is one parsed schema. typescript returns its text and whether
// that is a Python str: a scalar's "type" may be any JSON value, which
// f-strings print with str() but + and join refuse.
type schemaType interface {
	docstring(indent string) (string, error)
	typescript(indent string) (text string, isStr bool, err error)
}

// base is what every type keeps: its description and the constraints its
// kind prints (maxLength, minimum, ...), in key order.
type base struct {
	description *value
	constraints []member
}

func newBase(schema *value, allowed ...string) base {
	b := base{description: schema.get("description")}
	for _, m := range schema.dict {
		for _, a := range allowed {
			if m.key == a {
				b.constraints = append(b.constraints, m)
			}
		}
	}
	return b
}

func (b *base) docstring(indent string) (string, error) {
	var s strings.Builder
	if d := b.description; d != nil && d.truthy() {
		if d.kind != kindString {
			return "", unsupported("a description is a %s, not a string", pyTypeName(d))
		}
		s.WriteString(formatDescription(d.s, indent))
		s.WriteByte('\n')
	}
	if len(b.constraints) > 0 {
		s.WriteString(indent)
		s.WriteString("// ")
		for i, m := range b.constraints {
			if i > 0 {
				s.WriteString(", ")
			}
			s.WriteString(m.key)
			s.WriteString(": ")
			s.WriteString(pyStr(m.val))
		}
		s.WriteByte('\n')
	}
	return s.String(), nil
}

// parseType is _parse_parameter_type: the first of $ref, anyOf, enum and
// type that the schema has decides its kind.
func parseType(schema *value, reg *registry) (schemaType, error) {
	switch schema.kind {
	case kindBool:
		if schema.b {
			return anyScalar(), nil
		}
		return &scalarType{typ: &value{kind: kindString, s: "null"}}, nil
	case kindDict:
	default:
		return nil, unsupported("a schema is a %s, not an object", pyTypeName(schema))
	}
	switch {
	case schema.has("$ref"):
		return parseRef(schema, reg)
	case schema.has("anyOf"):
		t := &anyOfType{base: newBase(schema)}
		members, err := pyIter(schema.get("anyOf"))
		if err != nil {
			return nil, err
		}
		for _, m := range members {
			mt, err := parseType(m, reg)
			if err != nil {
				return nil, err
			}
			t.types = append(t.types, mt)
		}
		return t, nil
	case schema.has("enum"):
		return parseEnum(schema)
	case schema.has("type"):
		typ := schema.get("type")
		switch {
		case typ.kind == kindList:
			return parseUnion(schema)
		case typ.isString("object"):
			return parseObject(schema, reg)
		case typ.isString("array"):
			t := &arrayType{base: newBase(schema, "maxItems", "minItems")}
			if items := schema.get("items"); items != nil && items.truthy() {
				var err error
				if t.item, err = parseType(items, reg); err != nil {
					return nil, err
				}
			} else {
				t.item = anyScalar()
			}
			return t, nil
		default:
			return newScalar(typ, schema), nil
		}
	case len(schema.dict) == 0:
		return anyScalar(), nil
	}
	return nil, unsupported("a schema has none of type, enum, anyOf, $ref")
}

// pyIter lists what a Python for loop over v yields: a list's items, a
// str's characters, a dict's keys. Anything else raises.
func pyIter(v *value) ([]*value, error) {
	switch v.kind {
	case kindList:
		return v.list, nil
	case kindString:
		out := make([]*value, 0, len(v.s))
		for _, r := range v.s {
			out = append(out, &value{kind: kindString, s: string(r)})
		}
		return out, nil
	case kindDict:
		out := make([]*value, 0, len(v.dict))
		for _, m := range v.dict {
			out = append(out, &value{kind: kindString, s: m.key})
		}
		return out, nil
	}
	return nil, unsupported("a %s is not iterable", pyTypeName(v))
}

type scalarType struct {
	base
	typ *value
}

func anyScalar() *scalarType { return &scalarType{typ: &value{kind: kindString, s: "any"}} }

func newScalar(typ, schema *value) *scalarType {
	var allowed []string
	switch {
	case typ.isString("string"):
		allowed = []string{"maxLength", "minLength", "pattern"}
	case typ.isString("number"), typ.isString("integer"):
		allowed = []string{"maximum", "minimum"}
	}
	return &scalarType{base: newBase(schema, allowed...), typ: typ}
}

func (t *scalarType) typescript(string) (string, bool, error) {
	if t.typ.isString("integer") {
		return "number", true, nil
	}
	return pyStr(t.typ), t.typ.kind == kindString, nil
}

type objectType struct {
	base
	props []*parameter
	// additional is additionalProperties: nil when absent or null, a
	// parsed type for an object, else the raw value (true, false, or one
	// that raises when printed).
	additional    *value
	additionalTyp schemaType
}

type parameter struct {
	name     string
	typ      schemaType
	optional bool
	def      *value // default, nil when absent or null
}

func parseObject(schema *value, reg *registry) (*objectType, error) {
	if schema.kind != kindDict {
		return nil, unsupported("parameters are a %s, not an object", pyTypeName(schema))
	}
	t := &objectType{base: newBase(schema)}
	if len(schema.dict) == 0 {
		return t, nil
	}
	if defs := schema.get("$defs"); defs != nil {
		if err := reg.register(defs); err != nil {
			return nil, err
		}
	}
	if ap := schema.get("additionalProperties"); ap != nil && ap.kind != kindNull {
		if ap.kind == kindDict {
			var err error
			if t.additionalTyp, err = parseType(ap, reg); err != nil {
				return nil, err
			}
		} else {
			t.additional = ap
		}
	}
	props := schema.get("properties")
	if props == nil {
		return t, nil
	}
	if props.kind != kindDict {
		return nil, unsupported("properties are a %s, not an object", pyTypeName(props))
	}
	required := map[string]bool{}
	if req := schema.get("required"); req != nil {
		names, err := pyIter(req)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			switch n.kind {
			case kindList, kindDict:
				return nil, unsupported("required holds an unhashable %s", pyTypeName(n))
			case kindString:
				required[n.s] = true
			}
		}
	}
	for _, m := range props.dict {
		p := &parameter{name: m.key, optional: !required[m.key]}
		if m.val.kind == kindDict {
			if d := m.val.get("default"); d != nil && d.kind != kindNull {
				p.def = d
			}
		}
		var err error
		if p.typ, err = parseType(m.val, reg); err != nil {
			return nil, err
		}
		t.props = append(t.props, p)
	}
	return t, nil
}

func (t *objectType) typescript(indent string) (string, bool, error) {
	inner := indent + indentStep
	var fields []string
	for _, optional := range []bool{false, true} { // required first, each group by name
		for _, p := range t.props { // already in name order
			if p.optional != optional {
				continue
			}
			s, err := p.typescript(inner)
			if err != nil {
				return "", false, err
			}
			fields = append(fields, s)
		}
	}
	if t.additionalTyp != nil || t.additional != nil {
		var ap string
		switch {
		case t.additionalTyp != nil:
			var err error
			if ap, _, err = t.additionalTyp.typescript(inner); err != nil {
				return "", false, err
			}
		case t.additional.kind == kindBool && t.additional.b:
			ap = "any"
		case t.additional.kind == kindBool:
			ap = "never"
		default:
			return "", false, unsupported("additionalProperties is a %s", pyTypeName(t.additional))
		}
		fields = append(fields, inner+"[k: string]: "+ap)
	}
	if len(fields) == 0 {
		return "{}", true, nil
	}
	return "{\n" + strings.Join(fields, ",\n") + "\n" + indent + "}", true, nil
}

func (p *parameter) typescript(indent string) (string, error) {
	doc, err := p.typ.docstring(indent)
	if err != nil {
		return "", err
	}
	if p.def != nil {
		var d []byte
		switch p.def.kind {
		case kindBool, kindInt, kindFloat:
			d = appendRepr(nil, p.def)
		default:
			d = appendPyJSON(nil, p.def)
		}
		doc += indent + "// Default: " + string(d) + "\n"
	}
	typ, _, err := p.typ.typescript(indent)
	if err != nil {
		return "", err
	}
	opt := ""
	if p.optional {
		opt = "?"
	}
	return doc + indent + p.name + opt + ": " + typ, nil
}

type arrayType struct {
	base
	item schemaType
}

func (t *arrayType) typescript(indent string) (string, bool, error) {
	inner := indent + indentStep
	doc, err := t.item.docstring(inner)
	if err != nil {
		return "", false, err
	}
	if doc == "" {
		item, _, err := t.item.typescript(indent)
		if err != nil {
			return "", false, err
		}
		return "Array<" + item + ">", true, nil
	}
	item, isStr, err := t.item.typescript(inner)
	if err != nil {
		return "", false, err
	}
	if !isStr { // "..." + item: str + int raises
		return "", false, unsupported("an array item's type is not a string")
	}
	return "Array<\n" + doc + inner + item + "\n" + indent + ">", true, nil
}

type enumType struct {
	base
	enum *value
}

func parseEnum(schema *value) (*enumType, error) {
	t := &enumType{base: newBase(schema)}
	ev := schema.get("enum")
	typ := schema.get("type")
	if typ != nil && typ.kind == kindList {
		switch len(typ.list) {
		case 1:
			typ = typ.list[0]
		case 2:
			a, b := typ.list[0], typ.list[1]
			if !a.isString("null") && !b.isString("null") {
				return nil, unsupported("enum type %s is not supported", pyStr(typ))
			}
			if !a.isString("null") {
				typ = a
			} else {
				typ = b
			}
		default:
			return nil, unsupported("enum type %s is not supported", pyStr(typ))
		}
	}
	if typ != nil {
		values, err := pyIter(ev)
		if err != nil {
			return nil, err
		}
		for _, v := range values {
			var ok bool
			switch {
			case v.kind == kindNull:
				ok = true
			case typ.isString("string"):
				ok = v.kind == kindString
			case typ.isString("number"):
				ok = v.kind == kindInt || v.kind == kindFloat || v.kind == kindBool // bool is an int in Python
			case typ.isString("integer"):
				ok = v.kind == kindInt || v.kind == kindBool
			case typ.isString("boolean"):
				ok = v.kind == kindBool
			default:
				ok = true
			}
			if !ok {
				return nil, unsupported("enum value %s is not of type %s", pyStr(v), pyStr(typ))
			}
		}
	}
	t.enum = ev
	return t, nil
}

func (t *enumType) typescript(string) (string, bool, error) {
	values, err := pyIter(t.enum) // only here when no type made the constructor iterate
	if err != nil {
		return "", false, err
	}
	parts := make([]string, len(values))
	for i, v := range values {
		if v.kind == kindString {
			parts[i] = `"` + v.s + `"`
		} else {
			parts[i] = pyStr(v)
		}
	}
	return strings.Join(parts, " | "), true, nil
}

type anyOfType struct {
	base
	types []schemaType
}

func (t *anyOfType) typescript(indent string) (string, bool, error) {
	parts := make([]string, len(t.types))
	for i, m := range t.types {
		s, isStr, err := m.typescript(indent)
		if err != nil {
			return "", false, err
		}
		if !isStr { // str.join refuses what is not a str
			return "", false, unsupported("an anyOf member's type is not a string")
		}
		parts[i] = s
	}
	return strings.Join(parts, " | "), true, nil
}

// unionType is a list of type names ("type": ["string", "null"]).
type unionType struct {
	base
	names []string
}

var unionNames = map[string]string{
	"string": "string", "number": "number", "integer": "number", "boolean": "boolean",
	"null": "null", "object": "{}", "array": "Array<any>",
}

func parseUnion(schema *value) (*unionType, error) {
	t := &unionType{base: newBase(schema)}
	for _, n := range schema.get("type").list {
		name, ok := unionNames[n.s]
		if n.kind != kindString || !ok {
			return nil, unsupported("type %s is not one of %s", pyStr(n), "string, number, integer, boolean, null, object, array")
		}
		t.names = append(t.names, name)
	}
	return t, nil
}

func (t *unionType) typescript(string) (string, bool, error) {
	return strings.Join(t.names, " | "), true, nil
}

// refType is a $ref to "#" (the parameters themselves) or to "#/$defs/NAME".
type refType struct {
	base
	name string
}

func parseRef(schema *value, reg *registry) (*refType, error) {
	t := &refType{base: newBase(schema)}
	ref := schema.get("$ref")
	if ref.isString("#") {
		reg.selfRef = true
		t.name = "parameters"
		return t, nil
	}
	if ref.kind != kindString || !strings.HasPrefix(ref.s, "#/$defs/") {
		return nil, unsupported("$ref %s is not # or #/$defs/NAME", pyStr(ref))
	}
	name := ref.s[strings.LastIndexByte(ref.s, '/')+1:]
	i, ok := reg.index[name]
	if !ok {
		return nil, unsupported("$ref %s: no such definition", ref.s)
	}
	def := reg.defs[i].schema
	if def.kind != kindDict {
		return nil, unsupported("definition %s is a %s, not an object", name, pyTypeName(def))
	}
	if s := def.get("$self_ref"); s != nil && s.truthy() {
		t.name = "parameters"
	} else {
		t.name = name
	}
	return t, nil
}

func (t *refType) typescript(string) (string, bool, error) { return t.name, true, nil }
