package tokenizeprompts

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestReadPrompt(t *testing.T) {
	tests := []struct {
		name     string
		opt      shapeOptions
		line     string
		shape    string
		messages string // JSON of the normalized messages
		tools    string
		consumed string // comma-separated
	}{
		{
			name:     "openai keeps other members of a turn after role and content",
			line:     `{"messages":[{"content":"Hi","role":"user","weight":0}],"dataset":"x"}`,
			shape:    shapeOpenAI,
			messages: `[{"role":"user","content":"Hi","weight":0}]`,
			consumed: "messages,tools",
		},
		{
			name:     "a missing content stays missing and null stays null",
			line:     `{"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":null,"tool_calls":[]},{"role":"tool"}]}`,
			shape:    shapeOpenAI,
			messages: `[{"role":"user","content":"Hi"},{"role":"assistant","content":null,"tool_calls":[]},{"role":"tool"}]`,
			consumed: "messages,tools",
		},
		{
			name:     "text parts are joined with a newline",
			line:     `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"<b>"}]}]}`,
			shape:    shapeOpenAI,
			messages: `[{"role":"user","content":"a\n<b>"}]`,
			consumed: "messages,tools",
		},
		{
			name:     "sharegpt roles, top-level system, answer dropped",
			line:     `{"system":"S","conversations":[{"from":"human","value":"Q"},{"from":"gpt","value":"A"}]}`,
			shape:    shapeShareGPT,
			messages: `[{"role":"system","content":"S"},{"role":"user","content":"Q"}]`,
			consumed: "conversations,system,tools",
		},
		{
			name:     "sharegpt function_call and observation",
			line:     `{"conversations":[{"from":"human","value":"Q"},{"from":"function_call","value":"{\"name\":\"f\",\"arguments\":\"{}\"}"},{"from":"observation","value":"R"}]}`,
			shape:    shapeShareGPT,
			messages: `[{"role":"user","content":"Q"},{"role":"assistant","content":"","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","content":"R"}]`,
			consumed: "conversations,system,tools",
		},
		{
			name:     "specforge leaves a top-level system alone",
			line:     `{"system":"kept","conversations":[{"role":"user","content":"Q"}]}`,
			shape:    shapeSpecForge,
			messages: `[{"role":"user","content":"Q"}]`,
			consumed: "conversations,tools",
		},
		{
			name:     "prompt and system",
			line:     `{"prompt":"Q","system":"S"}`,
			shape:    shapePrompt,
			messages: `[{"role":"system","content":"S"},{"role":"user","content":"Q"}]`,
			consumed: "prompt,system,tools",
		},
		{
			name:     "alpaca with input and history, output kept on request",
			opt:      shapeOptions{keepLastAssistant: true},
			line:     `{"instruction":"I","input":"X","output":"O","history":[["q","a"]]}`,
			shape:    shapeAlpaca,
			messages: `[{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"user","content":"I\n\nX"},{"role":"assistant","content":"O"}]`,
			consumed: "instruction,input,output,system,history,tools",
		},
		{
			name:     "alpaca with an empty input",
			line:     `{"instruction":"I","input":""}`,
			shape:    shapeAlpaca,
			messages: `[{"role":"user","content":"I"}]`,
			consumed: "instruction,input,output,system,history,tools",
		},
		{
			name:     "--system only where there is none",
			opt:      shapeOptions{system: "D"},
			line:     `{"prompt":"Q"}`,
			shape:    shapePrompt,
			messages: `[{"role":"system","content":"D"},{"role":"user","content":"Q"}]`,
			consumed: "prompt,system,tools",
		},
		{
			name:     "--messages-path wins over the usual fields",
			opt:      shapeOptions{messagesPath: "alt"},
			line:     `{"messages":[{"role":"user","content":"no"}],"alt":[{"from":"human","value":"yes"}]}`,
			shape:    shapePath,
			messages: `[{"role":"user","content":"yes"}]`,
			consumed: "alt,tools",
		},
		{
			name:     "bare tool schemas in a string are wrapped, key order kept",
			line:     `{"prompt":"Q","tools":"[{\"name\":\"f\",\"description\":\"d\"}]"}`,
			shape:    shapePrompt,
			messages: `[{"role":"user","content":"Q"}]`,
			tools:    `[{"type":"function","function":{"name":"f","description":"d"}}]`,
			consumed: "prompt,system,tools",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseFields([]byte(tc.line), nil)
			if err != nil {
				t.Fatal(err)
			}
			p, err := readPrompt(f, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			msgs, err := marshal(p.messages)
			if err != nil {
				t.Fatal(err)
			}
			if p.shape != tc.shape || string(msgs) != tc.messages || string(p.tools) != tc.tools || strings.Join(p.consumed, ",") != tc.consumed {
				t.Errorf("got shape %s, messages %s, tools %s, consumed %v\nwant shape %s, messages %s, tools %s, consumed %s",
					p.shape, msgs, p.tools, p.consumed, tc.shape, tc.messages, tc.tools, tc.consumed)
			}
		})
	}
}

func TestReadPromptErrors(t *testing.T) {
	tests := []struct{ line, want string }{
		{`{"x":1}`, "no prompt found"},
		{`{"messages":{}}`, `"messages" is an object, not an array of messages`},
		{`{"messages":[]}`, `"messages" is an empty array`},
		{`{"messages":["hi"]}`, `messages[0] is a string, not a message object`},
		{`{"messages":[{"content":"hi"}]}`, `messages[0] has neither "role" nor "from"`},
		{`{"messages":[{"role":"robot","content":"hi"}]}`, `unknown role "robot"`},
		{`{"messages":[{"role":"user","content":7}]}`, `content is a number`},
		{`{"messages":[{"role":"user","content":[{"text":"a"}]}]}`, `messages[0].content[0] has no "type"`},
		{`{"messages":[{"role":"user","content":[{"type":"input_audio"}]}]}`, `parts of type "input_audio" cannot be tokenized`},
		{`{"messages":[{"role":"assistant","content":"a"}]}`, `no user or tool turn`},
		{`{"prompt":["a"]}`, `"prompt" is an array, not a string`},
		{`{"instruction":"a","history":[["q"]]}`, `"history" must be a list of [request, answer] string pairs`},
		{`{"prompt":"a","tools":[1]}`, `tools[0] is a number, not a tool object`},
		{`{"text":null}`, `"text" is null, not a string`},
	}
	for _, tc := range tests {
		f, err := parseFields([]byte(tc.line), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = readPrompt(f, shapeOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got error %v, want one containing %q", tc.line, err, tc.want)
		}
	}
}

// FuzzReadPrompt checks that any object is either refused or normalized into
// messages that are valid JSON and end in a turn to answer.
func FuzzReadPrompt(f *testing.F) {
	for _, seed := range []string{
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}`,
		`{"conversations":[{"from":"human","value":"q"},{"from":"function_call","value":"{\"name\":\"f\"}"}]}`,
		`{"instruction":"i","input":"x","history":[["a","b"]],"tools":"[{\"name\":\"f\"}]"}`,
		`{"prompt":"p","system":"s"}`,
		`{"text":"t"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		fields, err := parseFields([]byte(line), nil)
		if err != nil {
			return
		}
		p, err := readPrompt(fields, shapeOptions{system: "s"})
		if err != nil || p.isText() {
			return
		}
		msgs, err := marshal(p.messages)
		if err != nil || !json.Valid(msgs) {
			t.Fatalf("messages %s: %v", msgs, err)
		}
		if p.tools != nil && !json.Valid(p.tools) {
			t.Fatalf("tools %s are not JSON", p.tools)
		}
		if last := p.messages[len(p.messages)-1].Role; last != roleUser && last != roleTool {
			t.Fatalf("the conversation ends with %s", last)
		}
	})
}

// TestArrayElements checks the element splitter against encoding/json on
// arrays whose strings hold the characters that delimit elements.
func TestArrayElements(t *testing.T) {
	for _, raw := range []string{
		`[]`, `[ ]`, `[1]`, `[ {"a": [1, 2]} , "x,]\"}" ,null,[[]], {} ]`,
		`[{"role":"user","content":"a \\\"quoted\\\" [comma], {brace}"},{"role":"assistant","content":""}]`,
	} {
		var want []json.RawMessage
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		got, ok := arrayElements([]byte(raw))
		if !ok || len(got) != len(want) {
			t.Fatalf("%s: got %q (ok %v), want %q", raw, got, ok, want)
		}
		for i := range got {
			if string(got[i]) != string(want[i]) {
				t.Fatalf("%s: element %d is %s, want %s", raw, i, got[i], want[i])
			}
		}
	}
	if _, ok := arrayElements([]byte(`{"a":1}`)); ok {
		t.Fatal("an object passed for an array")
	}
}
