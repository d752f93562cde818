package backend

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/thinking"
)

// everyParam sets every sampling parameter, with values that test their
// encoding: a negative and a -1, a float written with an exponent, strings
// that encoding/json escapes.
func everyParam() Params {
	return Params{MaxTokens: 2048, Sampling: Sampling{Temperature: ptr(0.7), TopP: ptr(0.95), TopK: ptr(-1), MinP: ptr(1e-7),
		Stop: []string{"</answer>", "<&>\n"}, StopTokenIDs: []int{151645, 0}, Seed: ptr(int64(-42)),
		ReasoningEffort: "high", ReasoningMaxTokens: 2000}}
}

// TestBodiesByteForByte pins the request bodies, byte for byte, with every
// sampling parameter set and with none: a parameter left out of a body, or
// written otherwise, fails it.
func TestBodiesByteForByte(t *testing.T) {
	const (
		chatHead = `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":2048,"temperature":0.7,"top_p":0.95,"top_k":-1,"min_p":1e-7,` +
			`"stop":["\u003c/answer\u003e","\u003c\u0026\u003e\n"],"stop_token_ids":[151645,0],"seed":-42,`
		usage = `"usage":{"include":true}}`
	)
	on, off, low := thinking.Choice{Thinking: true}, thinking.Choice{}, thinking.Choice{Thinking: true, Effort: "low"}
	for _, tc := range []struct {
		name     string
		params   Params
		thinking *thinking.Choice
		stream   bool
		sglang   string
		chat     string
	}{
		{name: "every parameter", params: everyParam(),
			sglang: `{"input_ids":[101,102],"rid":"r#1","sampling_params":{"max_new_tokens":2048,"temperature":0.7,"top_p":0.95,"top_k":-1,"min_p":1e-7,` +
				`"stop":["\u003c/answer\u003e","\u003c\u0026\u003e\n"],"stop_token_ids":[151645,0],"sampling_seed":-42,"skip_special_tokens":false,"no_stop_trim":true}}`,
			chat: chatHead + `"reasoning":{"effort":"high","max_tokens":2000},` + usage},
		{name: "every parameter, streamed", params: everyParam(), stream: true,
			sglang: `{"input_ids":[101,102],"rid":"r#1","sampling_params":{"max_new_tokens":2048,"temperature":0.7,"top_p":0.95,"top_k":-1,"min_p":1e-7,` +
				`"stop":["\u003c/answer\u003e","\u003c\u0026\u003e\n"],"stop_token_ids":[151645,0],"sampling_seed":-42,"skip_special_tokens":false,"no_stop_trim":true},"stream":true}`,
			chat: chatHead + `"reasoning":{"effort":"high","max_tokens":2000},"stream":true,"stream_options":{"include_usage":true},` + usage},
		{name: "thinking on", params: everyParam(), thinking: &on,
			chat: chatHead + `"reasoning":{"enabled":true,"effort":"high","max_tokens":2000},"chat_template_kwargs":{"enable_thinking":true,"thinking":true},` + usage},
		{name: "thinking off", params: everyParam(), thinking: &off,
			chat: chatHead + `"reasoning":{"enabled":false},"chat_template_kwargs":{"enable_thinking":false,"thinking":false},` + usage},
		{name: "thinking at an effort", params: everyParam(), thinking: &low,
			chat: chatHead + `"reasoning":{"enabled":true,"effort":"low","max_tokens":2000},"chat_template_kwargs":{"reasoning_effort":"low"},` + usage},
		{name: "none", params: Params{MaxTokens: 16},
			sglang: `{"input_ids":[101,102],"rid":"r#1","sampling_params":{"max_new_tokens":16,"skip_special_tokens":false,"no_stop_trim":true}}`,
			chat:   `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":16,` + usage},
		{name: "thinking alone", params: Params{MaxTokens: 16}, thinking: &on,
			chat: `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":16,"reasoning":{"enabled":true},"chat_template_kwargs":{"enable_thinking":true,"thinking":true},` + usage},
		{name: "reasoning limit alone", params: Params{MaxTokens: 16, Sampling: Sampling{ReasoningMaxTokens: 300}},
			sglang: `{"input_ids":[101,102],"rid":"r#1","sampling_params":{"max_new_tokens":16,"skip_special_tokens":false,"no_stop_trim":true}}`,
			chat:   `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":16,"reasoning":{"max_tokens":300},` + usage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &Request{ID: "r", Attempt: 1, InputIDs: []int{101, 102}, Messages: json.RawMessage(`[{"role":"user","content":"hi"}]`),
				Params: tc.params, Thinking: tc.thinking}
			if tc.sglang != "" {
				got, err := appendSGLangBody(nil, req, "r#1", tc.stream)
				if err != nil || string(got) != tc.sglang {
					t.Errorf("sglang body (%v)\n got %s\nwant %s", err, got, tc.sglang)
				}
			}
			chat := &openAI{client: client{opts: Options{Model: "m", Stream: tc.stream}}}
			got, err := chat.requestBody(req)
			if err != nil || string(got) != tc.chat {
				t.Errorf("chat body (%v)\n got %s\nwant %s", err, got, tc.chat)
			}
		})
	}
}

// everySet is a Sampling with every field set, and the JSON of each value.
func everySet(t *testing.T) (Sampling, map[int]string) {
	t.Helper()
	var s Sampling
	want := map[int]string{}
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
			setScalar(f.Elem(), i)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 2, 2))
			setScalar(f.Index(0), i)
			setScalar(f.Index(1), i+1)
		default:
			setScalar(f, i)
		}
		j, err := json.Marshal(f.Interface())
		if err != nil {
			t.Fatal(err)
		}
		want[i] = string(j)
	}
	return s, want
}

func setScalar(v reflect.Value, i int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("<v%d>&\n", i))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float64:
		v.SetFloat(0.25 + float64(i))
	default:
		v.SetInt(int64(7 + i))
	}
}

// TestEverySamplingFieldIsSent sets every field of Sampling and finds each
// in every format that names it, written as encoding/json writes it: a
// field that a body writer, gen.params or a Batch body's overrides left
// out fails it.
func TestEverySamplingFieldIsSent(t *testing.T) {
	s, want := everySet(t)
	req := &Request{ID: "r", Attempt: 1, InputIDs: []int{1}, Messages: json.RawMessage(`[]`), Params: Params{MaxTokens: 9, Sampling: s}}
	sglangBody, err := appendSGLangBody(nil, req, "r#1", false)
	if err != nil {
		t.Fatal(err)
	}
	chatBody, err := (&openAI{}).requestBody(req)
	if err != nil {
		t.Fatal(err)
	}
	record := map[string]string{}
	s.EachSet(func(name string, v any) {
		j, _ := json.Marshal(v)
		record[name] = string(j)
	})
	batch := map[string]json.RawMessage{}
	for _, f := range samplingFields {
		if f.name[wireBatch] != "" {
			batch[f.name[wireBatch]] = json.RawMessage(want[f.index])
		}
	}
	var fromBatch Sampling
	if err := fromBatch.Override(batch); err != nil {
		t.Fatal(err)
	}
	ty := reflect.TypeFor[Sampling]()
	for _, f := range samplingFields {
		name := ty.Field(f.index).Name
		path := func(w wire) string {
			if f.object[w] != "" {
				return f.object[w] + "." + f.name[w]
			}
			return f.name[w]
		}
		if n := f.name[wireSGLang]; n != "" && gjson.GetBytes(sglangBody, "sampling_params."+path(wireSGLang)).Raw != want[f.index] {
			t.Errorf("%s: not sent to SGLang as %s: %s", name, want[f.index], sglangBody)
		}
		if n := f.name[wireChat]; n != "" && gjson.GetBytes(chatBody, path(wireChat)).Raw != want[f.index] {
			t.Errorf("%s: not sent in chat completions as %s: %s", name, want[f.index], chatBody)
		}
		if n := f.name[wireRecord]; n == "" || record[n] != want[f.index] {
			t.Errorf("%s: not in gen.params as %s: %v", name, want[f.index], record)
		}
		got := reflect.ValueOf(fromBatch).Field(f.index)
		if f.name[wireBatch] != "" && !reflect.DeepEqual(got.Interface(), reflect.ValueOf(s).Field(f.index).Interface()) {
			t.Errorf("%s: a Batch body's %s gave %v", name, want[f.index], got)
		}
	}
}

// TestJSONEncodersAreMarshal checks appendJSONString and appendJSONFloat
// against encoding/json, which the servers' bodies were first written by.
func TestJSONEncodersAreMarshal(t *testing.T) {
	for _, s := range []string{"", "plain", "</answer>", "<|im_end|>", "a&b", "q\"b\\s", "\n\n", "\b\f\r\t\x00\x1f\x7f", "é", "\u2028", "\xff"} {
		checkString(t, s)
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 0.7, 1e-6, 9.99e-7, 1e-7, -1e-7, 1e20, 1e21, 1.5e300, math.SmallestNonzeroFloat64, math.MaxFloat64} {
		checkFloat(t, f)
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := appendJSONFloat(nil, f); err == nil {
			t.Errorf("%v: no error", f)
		}
	}
}

func FuzzJSONEncoders(f *testing.F) {
	f.Add("</answer>", 0.7)
	f.Add("\x01é", 1e-7)
	f.Fuzz(func(t *testing.T, s string, x float64) {
		checkString(t, s)
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			checkFloat(t, x)
		}
	})
}

func checkString(t *testing.T, s string) {
	t.Helper()
	want, _ := json.Marshal(s)
	if got := appendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
		t.Errorf("%q: got %s, want %s", s, got[1:], want)
	}
}

func checkFloat(t *testing.T, f float64) {
	t.Helper()
	want, _ := json.Marshal(f)
	if got, err := appendJSONFloat([]byte("x"), f); err != nil || string(got) != "x"+string(want) {
		t.Errorf("%v: got %s (%v), want %s", f, got, err, want)
	}
}
