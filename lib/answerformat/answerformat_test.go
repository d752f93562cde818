package answerformat

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/answerformat/turnstest"
	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/exitcode"
)

func loadFormat(t *testing.T, path string) (*Format, *chat.Model) {
	t.Helper()
	m, err := chat.Load(path, chat.TemplateAuto, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ForTokenizer(m.Tok, path)
	if err != nil {
		t.Fatal(err)
	}
	return f, m
}

// message is an assistant turn as the reference writes it.
type message struct {
	Content          string          `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        json.RawMessage `json:"tool_calls"`
}

// TestKimiTurnsReadBack reads every answer of the Kimi-K2.5 reference from
// its token ids: reasoning, content and tool calls with the model's own ids
// must be the reference's message.
func TestKimiTurnsReadBack(t *testing.T) {
	f, m := loadFormat(t, chat.BuiltinPrefix+"kimi-k2.5")
	if f.Family != "kimi-k2.5" {
		t.Fatalf("family %q, want kimi-k2.5", f.Family)
	}
	convs, err := turnstest.Read("../../" + turnstest.File)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, c := range convs {
		for i, turn := range c.Turns {
			prompt := m.Encode(turn.ExpectedPromptText)
			a, err := f.Read(prompt, m.Encode(turn.AnswerText))
			if err != nil {
				t.Fatalf("%s turn %d: %v", c.ID, i, err)
			}
			var want message
			if err := json.Unmarshal(turn.AnswerMessage, &want); err != nil {
				t.Fatal(err)
			}
			if !a.Closed || a.Content != want.Content || a.Reasoning != want.ReasoningContent {
				t.Errorf("%s turn %d: read %+v, want %s", c.ID, i, a, turn.AnswerMessage)
			}
			if !sameJSON(t, CallsJSON(a.ToolCalls), want.ToolCalls) {
				t.Errorf("%s turn %d: tool calls %s, want %s", c.ID, i, CallsJSON(a.ToolCalls), want.ToolCalls)
			}
			calls += len(a.ToolCalls)
		}
	}
	if calls != 3 {
		t.Fatalf("%d tool calls read, want the reference's 3", calls)
	}
}

func sameJSON(t *testing.T, a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		t.Fatalf("not JSON: %s / %s", a, b)
	}
	return reflect.DeepEqual(x, y)
}

// TestKimiAnswers covers what the reference does not: a literal "</think>"
// inside the reasoning, an answer cut inside its reasoning or its tool
// calls, and a malformed call id.
func TestKimiAnswers(t *testing.T) {
	f, m := loadFormat(t, chat.BuiltinPrefix+"kimi-k2.5")
	prompt := m.Encode("<|im_assistant|>assistant<|im_middle|><think>")
	plain := func(s string) []int { return m.Tok.Encode(s, false) }
	special := func(s string) []int { return m.Encode(s) }
	cat := func(parts ...[]int) []int {
		var out []int
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		name               string
		output             []int
		reasoning, content string
		calls              int
		closed             bool
		err                string
	}{
		{"quoted end of reasoning", cat(plain("I write </think> as text."), special("</think>Done.<|im_end|>")), "I write </think> as text.", "Done.", 0, true, ""},
		{"cut in reasoning", plain("Still thinking"), "Still thinking", "", 0, false, ""},
		{"no reasoning asked", special("</think>Plain.<|im_end|>"), "", "Plain.", 0, true, ""},
		{"cut in calls", special("</think><|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{\"a\""), "", "", 0, false, "cut before <|tool_call_end|>"},
		{"bad call id", special("</think><|tool_calls_section_begin|><|tool_call_begin|>f<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|><|im_end|>"), "", "", 0, true, "not functions.NAME:INDEX"},
		{"two calls", special("r</think>c<|tool_calls_section_begin|><|tool_call_begin|>functions.a:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_call_begin|>functions.b.c:1<|tool_call_argument_begin|>{\"x\":1}<|tool_call_end|><|tool_calls_section_end|><|im_end|>"), "r", "c", 2, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := f.Read(prompt, tc.output)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Reasoning != tc.reasoning || a.Content != tc.content || len(a.ToolCalls) != tc.calls || a.Closed != tc.closed {
				t.Fatalf("read %+v", a)
			}
		})
	}
}

// TestQwen3Answers reads Qwen3's format: trimmed reasoning and content,
// Hermes-style calls with arguments as an object or a string.
func TestQwen3Answers(t *testing.T) {
	f, m := loadFormat(t, "../tokenizer/testdata/tokenizers/qwen3")
	if f.Family != "qwen3" {
		t.Fatalf("family %q, want qwen3", f.Family)
	}
	out := m.Encode("<think>\nLook it up.\n</think>\n\nChecking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": \"{\\\"tz\\\": \\\"CET\\\"}\"}\n</tool_call><|im_end|>")
	a, err := f.Read(m.Encode("<|im_start|>assistant\n"), out)
	if err != nil {
		t.Fatal(err)
	}
	want := Answer{Reasoning: "Look it up.", Content: "Checking.", Closed: true, ToolCalls: []ToolCall{
		{"call_0", "get_weather", `{"city": "Oslo"}`}, {"call_1", "get_time", `{"tz": "CET"}`}}}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("read %+v\nwant %+v", a, want)
	}
	if _, err := f.Read(nil, m.Encode("<tool_call>\nnot json\n</tool_call>")); err == nil {
		t.Fatal("a call that is not JSON was read")
	}
}

// TestUnknownFamily: a tokenizer whose answers cannot be read is refused
// with its family named, as a usage error.
func TestUnknownFamily(t *testing.T) {
	m, err := chat.Load("../tokenizer/testdata/tokenizers/llama3_1", chat.TemplateNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ForTokenizer(m.Tok, "llama")
	var ec *exitcode.Error
	if err == nil || !strings.Contains(err.Error(), "Llama 3") || !strings.Contains(err.Error(), Families) {
		t.Fatalf("error %v", err)
	}
	if !errors.As(err, &ec) || ec.Code != exitcode.Usage {
		t.Fatalf("%v: not a usage error", err)
	}
}

// BenchmarkRead reads a Kimi-K2.5 answer of ~400 ids, reasoning then
// content, as generate --turns all reads every turn's answer.
func BenchmarkRead(b *testing.B) {
	m, err := chat.Load(chat.BuiltinPrefix+"kimi-k2.5", chat.TemplateAuto, nil)
	if err != nil {
		b.Fatal(err)
	}
	f, err := ForTokenizer(m.Tok, chat.BuiltinPrefix+"kimi-k2.5")
	if err != nil {
		b.Fatal(err)
	}
	prompt := m.Encode("<|im_assistant|>assistant<|im_middle|><think>")
	text := strings.Repeat("The draft proposes tokens and the target checks them in one pass. ", 12)
	output := append(m.Tok.Encode(text, false), m.Encode("</think>")...)
	output = append(output, m.Tok.Encode(text, false)...)
	output = append(output, m.Encode("<|im_end|>")...)
	b.ReportAllocs()
	for b.Loop() {
		if a, err := f.Read(prompt, output); err != nil || !a.Closed || a.Content == "" {
			b.Fatalf("read %+v, %v", a, err)
		}
	}
}
