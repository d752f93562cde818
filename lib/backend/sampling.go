package backend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Sampling are the sampling parameters sent only when set, so that the
// server's defaults apply otherwise: a nil pointer, an empty string or
// slice and a zero number are not set.
//
// Adding one touches this struct and lib/flaggroup/sampling.go (its flag)
// only. Nothing else names the fields: the request bodies, gen.params and
// the overrides of an OpenAI Batch body go through samplingFields, read
// from the tags below once. A field's json tag is its name in gen.params
// and, unless its own tag says otherwise, in every request body: sglang
// in SGLang's sampling_params, chat in the chat completions body (a dotted
// name is a member of an object: reasoning.effort is {"reasoning":
// {"effort": ...}}), batch in an OpenAI Batch body (which then overrides
// the flag's value). "-" leaves the field out of that one (json must
// name it: gen.params holds every parameter).
type Sampling struct {
	Temperature        *float64 `json:"temperature"`
	TopP               *float64 `json:"top_p"`
	TopK               *int     `json:"top_k"`
	MinP               *float64 `json:"min_p"`
	Stop               []string `json:"stop"` // a Batch body may give one string
	StopTokenIDs       []int    `json:"stop_token_ids"`
	Seed               *int64   `json:"seed" sglang:"sampling_seed"`
	ReasoningEffort    string   `json:"reasoning_effort" sglang:"-" chat:"reasoning.effort"`
	ReasoningMaxTokens int      `json:"reasoning_max_tokens" sglang:"-" chat:"reasoning.max_tokens" batch:"-"` // no chat completions body has it: a Batch body's goes along as an extra field
}

// wire is a format that names the sampling parameters.
type wire int

const (
	wireRecord wire = iota // gen.params (and the default name)
	wireSGLang             // SGLang's sampling_params
	wireChat               // the chat completions body
	wireBatch              // an OpenAI Batch body, read
	numWires
)

// wireTags are the struct tags that name a field in each wire.
var wireTags = [numWires]string{"json", "sglang", "chat", "batch"}

// samplingField is one field of Sampling, as the wires name it.
type samplingField struct {
	index int
	// object and name place the field in each wire: name "" leaves it
	// out; object "" is the top level (of sampling_params for SGLang).
	object, name [numWires]string
}

// samplingFields are Sampling's fields in their order, read from its tags
// once: the one place the body writers learn what there is to send.
var samplingFields = readSamplingFields(reflect.TypeFor[Sampling]())

func readSamplingFields(t reflect.Type) []samplingField {
	fields := make([]samplingField, t.NumField())
	for i := range fields {
		sf := t.Field(i)
		if !encodable(sf.Type) {
			panic(fmt.Sprintf("backend.Sampling.%s: cannot send a %s", sf.Name, sf.Type))
		}
		f := samplingField{index: i}
		base, _, _ := strings.Cut(sf.Tag.Get(wireTags[wireRecord]), ",")
		if base == "" || base == "-" {
			panic(fmt.Sprintf("backend.Sampling.%s: no json name", sf.Name))
		}
		for w, tag := range wireTags {
			name, ok := sf.Tag.Lookup(tag)
			if !ok {
				name = base
			}
			if name == "-" {
				continue
			}
			f.object[w], f.name[w] = "", name
			if obj, member, dotted := strings.Cut(name, "."); dotted {
				if wire(w) != wireChat {
					panic(fmt.Sprintf("backend.Sampling.%s: %s name %q: only chat names may be dotted", sf.Name, tag, name))
				}
				f.object[w], f.name[w] = obj, member
			}
		}
		fields[i] = f
	}
	return fields
}

// encodable reports that appendValue writes a value of type t.
func encodable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		return scalar(t.Elem().Kind())
	}
	return scalar(t.Kind())
}

func scalar(k reflect.Kind) bool {
	switch k {
	case reflect.Bool, reflect.String, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return true
	}
	return false
}

// field is the value of f in s, and whether s sets it.
func (s *Sampling) field(f *samplingField) (reflect.Value, bool) {
	v := reflect.ValueOf(s).Elem().Field(f.index)
	switch v.Kind() {
	case reflect.Pointer:
		return v, !v.IsNil()
	case reflect.Slice:
		return v, v.Len() > 0
	}
	return v, !v.IsZero()
}

// appendMembers appends `,"name":value` for each parameter that s sets
// and w places in object ("" for the top level), in field order, as
// encoding/json writes them, without its reflection per call: this runs
// for every request.
func (s *Sampling) appendMembers(dst []byte, w wire, object string) ([]byte, error) {
	for i := range samplingFields {
		f := &samplingFields[i]
		if f.name[w] == "" || f.object[w] != object {
			continue
		}
		v, set := s.field(f)
		if !set {
			continue
		}
		dst = append(dst, ',')
		dst = appendJSONString(dst, f.name[w])
		dst = append(dst, ':')
		var err error
		if dst, err = appendValue(dst, v); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name[w], err)
		}
	}
	return dst, nil
}

// appendValue appends v as encoding/json writes it: a pointer as what it
// points to, a slice as an array.
func appendValue(dst []byte, v reflect.Value) ([]byte, error) {
	switch v.Kind() {
	case reflect.Pointer:
		return appendValue(dst, v.Elem())
	case reflect.Slice:
		dst = append(dst, '[')
		for i := range v.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, v.Index(i)); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case reflect.String:
		return appendJSONString(dst, v.String()), nil
	case reflect.Bool:
		return strconv.AppendBool(dst, v.Bool()), nil
	case reflect.Float64:
		return appendJSONFloat(dst, v.Float())
	}
	return strconv.AppendInt(dst, v.Int(), 10), nil // encodable leaves only the ints
}

// EachSet calls put with the gen.params name and the value of each
// parameter that s sets, in field order.
func (s *Sampling) EachSet(put func(name string, value any)) {
	for i := range samplingFields {
		f := &samplingFields[i]
		if v, set := s.field(f); set && f.name[wireRecord] != "" {
			put(f.name[wireRecord], v.Interface())
		}
	}
}

// IsBatchSamplingKey reports that an OpenAI Batch body's member key is a
// sampling parameter that Override reads, rather than a field to pass
// along.
func IsBatchSamplingKey(key string) bool {
	for i := range samplingFields {
		if key != "" && samplingFields[i].name[wireBatch] == key {
			return true
		}
	}
	return false
}

// Override sets the parameters that an OpenAI Batch body gives (a null is
// not given) to the body's values, each in memory of its own: s is often a
// copy of parameters that other requests share. A string where the field
// is an array of strings (stop) is that one string.
func (s *Sampling) Override(body map[string]json.RawMessage) error {
	for i := range samplingFields {
		f := &samplingFields[i]
		if f.name[wireBatch] == "" {
			continue
		}
		raw := bytes.TrimSpace(body[f.name[wireBatch]])
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		field := reflect.ValueOf(s).Elem().Field(f.index)
		v := reflect.New(field.Type())
		err := json.Unmarshal(raw, v.Interface())
		if err != nil && field.Type() == reflect.TypeFor[[]string]() {
			var one string
			if json.Unmarshal(raw, &one) != nil {
				return fmt.Errorf("%q must be a string or an array of strings", f.name[wireBatch])
			}
			v.Elem().Set(reflect.ValueOf([]string{one}))
		} else if err != nil {
			return fmt.Errorf("%q: %v", f.name[wireBatch], err)
		}
		field.Set(v.Elem())
	}
	return nil
}
