package chat

import (
	"encoding/json"
	"testing"
)

func TestAppendMessage(t *testing.T) {
	msg := json.RawMessage(`{"role":"assistant","content":"4"}`)
	tests := []struct {
		name, messages, want string
	}{
		{"empty", `[]`, `[{"role":"assistant","content":"4"}]`},
		{"empty with spaces", " [ \n ] \n", "[ \n " + `{"role":"assistant","content":"4"}]`},
		{"one turn kept byte for byte", `[{"role":"user","content":"2+2?","n":1.50}]`,
			`[{"role":"user","content":"2+2?","n":1.50},{"role":"assistant","content":"4"}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(AppendMessage(json.RawMessage(tc.messages), msg)); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestAssistantTurn(t *testing.T) {
	tests := []struct {
		name, text, reasoning, toolCalls, want string
	}{
		{"text", "4", "", "", `{"role":"assistant","content":"4"}`},
		{"reasoning under both names", "4", "2+2", "",
			`{"role":"assistant","content":"4","reasoning_content":"2+2","thinking":"2+2"}`},
		{"tool calls", "", "", `[{"id":"c0"}]`, `{"role":"assistant","content":"","tool_calls":[{"id":"c0"}]}`},
		{"escaped", "a\"<b>\n", "", "", `{"role":"assistant","content":"a\"\u003cb\u003e\n"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls json.RawMessage
			if tc.toolCalls != "" {
				calls = json.RawMessage(tc.toolCalls)
			}
			if got := string(AssistantTurn(tc.text, tc.reasoning, calls)); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
