package record

import (
	"strings"
	"testing"
)

// A regenerated conversation is counted from its turns, by
// ConversationTotals: what was spent (every prompt, every answer) for the
// budgets, and its last prompt and answer for training.
func TestScanConversation(t *testing.T) {
	line := `{"id":"c1","input_ids":[1,2,3],"prompt_tokens":3,"completion_tokens":1,` +
		`"turns":[{"prompt_tokens":10,"completion_tokens":5,"finish_reason":"tool_calls"},` +
		`{"prompt_tokens":25,"completion_tokens":7,"finish_reason":"stop"},` +
		`{"prompt_tokens":40,"completion_tokens":9,"finish_reason":"length"}],"ended":"length"}`
	in, err := NewScanner("id", true, "").Scan([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if in.PromptTokens != 75 || in.CompletionTokens != 21 {
		t.Errorf("counts %d + %d, want 75 + 21: every turn's prompt and answer, not the top-level fields", in.PromptTokens, in.CompletionTokens)
	}
	c := in.Conversation
	if c == nil || len(c.Turns) != 3 || c.Ended != "length" || c.Trained != 49 {
		t.Fatalf("conversation %+v, want 3 turns ended by length, 49 trained tokens", c)
	}
	if c.Turns[1] != (TurnCount{Prompt: 25, Completion: 7, FinishReason: "stop"}) {
		t.Errorf("turn 2 = %+v", c.Turns[1])
	}
	if !in.Truncated() {
		t.Error("a conversation whose last turn was cut is truncated")
	}
	if got := in.Tokens(CountCompletion); got != 21 {
		t.Errorf("completion count %d, want 21", got)
	}
}

// A source record with "turns" of its own (a list of questions) and no
// "ended" is not a conversation.
func TestScanTurnsOfASource(t *testing.T) {
	in, err := NewScanner("id", true, "").Scan([]byte(`{"id":"q","turns":["a?","b?"],"prompt_tokens":4}`))
	if err != nil || in.Conversation != nil || in.PromptTokens != 4 {
		t.Fatalf("Scan = %+v, %v; want a plain record of 4 prompt tokens", in, err)
	}
}

func TestScanConversationBadTurn(t *testing.T) {
	for line, want := range map[string]string{
		`{"id":"c","turns":[{"prompt_tokens":3}],"ended":"done"}`:                        `turns[0]: no "completion_tokens"`,
		`{"id":"c","turns":[{"prompt_tokens":3,"completion_tokens":-1}],"ended":"done"}`: `turns[0]: "completion_tokens" is -1, not a non-negative integer`,
		`{"id":"c","turns":[1],"ended":"done"}`:                                          `turns[0]: is a number, want an object`,
	} {
		_, err := NewScanner("id", true, "").Scan([]byte(line))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Scan(%s) = %v, want %q", line, err, want)
		}
	}
}
