package conversation

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/answerformat"
	"github.com/synthpipe/synthpipe/lib/answerformat/turnstest"
	"github.com/synthpipe/synthpipe/lib/chat"
)

// sourceOf is the source conversation reference conversation c was
// regenerated from (turnstest.SourceMessages), as a JSON array.
func sourceOf(c turnstest.Conversation) json.RawMessage {
	return json.RawMessage("[" + strings.Join(turnstest.SourceMessages(c), ",") + "]")
}

// TestKimiTurnsPrompts walks every conversation of the Kimi-K2.5 reference,
// answering each turn with the reference's answer read back from its
// tokens: every prompt must be, id for id, the reference's rendering of
// the conversation so far (tool results under the model's call ids,
// earlier reasoning kept or dropped as the template decides), and
// chat.TurnPrompts, which encodes only where a prompt parts from the last
// one, must give the ids of encoding it whole.
func TestKimiTurnsPrompts(t *testing.T) {
	m, err := chat.Load(chat.BuiltinPrefix+"kimi-k2.5", chat.TemplateAuto, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := answerformat.ForTokenizer(m.Tok, "kimi")
	if err != nil {
		t.Fatal(err)
	}
	convs, err := turnstest.Read("../../" + turnstest.File)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range convs {
		t.Run(c.ID, func(t *testing.T) {
			tools := c.Tools
			if string(tools) == "null" {
				tools = nil
			}
			src, err := Parse(sourceOf(c), tools)
			if err != nil {
				t.Fatal(err)
			}
			if src.Turns() != len(c.Turns) {
				t.Fatalf("%d turns, want %d", src.Turns(), len(c.Turns))
			}
			w := src.Walk(Options{})
			var prompts chat.TurnPrompts
			for i, turn := range c.Turns {
				if w.Ended() != "" {
					t.Fatalf("ended %q before turn %d", w.Ended(), i)
				}
				text, err := m.Render(w.Messages(), w.Tools(), true)
				if err != nil {
					t.Fatal(err)
				}
				got, want := m.Encode(text), m.Encode(turn.ExpectedPromptText)
				if !slices.Equal(got, want) {
					t.Fatalf("turn %d: prompt differs\n got %q\nwant %q", i, text, turn.ExpectedPromptText)
				}
				inc, err := prompts.Next(m, w.MessageList(), w.Tools())
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(inc, got) {
					t.Fatalf("turn %d: the ids encoded from the last prompt's differ from the whole prompt's\n got %v\nwant %v", i, inc, got)
				}
				out := m.Encode(turn.AnswerText)
				a, err := f.Read(got, out)
				if err != nil {
					t.Fatal(err)
				}
				w.Add(Turn{PromptTokens: len(got), OutputIDs: out, Answer: a, FinishReason: "stop", CompletionTokens: len(out)})
			}
			if w.Ended() != EndDone {
				t.Fatalf("ended %q, want %q", w.Ended(), EndDone)
			}
			if strings.Contains(string(w.Messages()), "Another model") || strings.Contains(string(w.Messages()), "src_") {
				t.Fatalf("the source's answers reached the conversation: %s", w.Messages())
			}
		})
	}
}

// kimiAnswer is the answer of a model that called tools by these names.
func answerCalling(names ...string) answerformat.Answer {
	a := answerformat.Answer{Content: "", Reasoning: "r", Closed: true}
	for i, n := range names {
		a.ToolCalls = append(a.ToolCalls, answerformat.ToolCall{ID: fmt.Sprintf("functions.%s:%d", n, i), Name: n, Arguments: "{}"})
	}
	return a
}

const toolLoop = `[{"role":"user","content":"q"},
 {"role":"assistant","content":"","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},
 {"role":"tool","tool_call_id":"b","content":"B"},{"role":"tool","tool_call_id":"a","content":"A"},
 {"role":"assistant","content":"done"},{"role":"user","content":"more"},{"role":"assistant","content":"ok"}]`

// TestEndRules: where the model departs from the source the conversation
// ends there, with the answer kept and the reason named.
func TestEndRules(t *testing.T) {
	closed := answerformat.Answer{Content: "x", Closed: true}
	for _, tc := range []struct {
		name    string
		answers []answerformat.Answer
		finish  string
		ended   string
		turns   int
	}{
		{"follows the source", []answerformat.Answer{answerCalling("f", "g"), closed, closed}, "stop", EndDone, 3},
		{"other functions", []answerformat.Answer{answerCalling("g", "f")}, "stop", EndCallsDiffer, 1},
		{"fewer calls", []answerformat.Answer{answerCalling("f")}, "stop", EndCallsDiffer, 1},
		{"answers where the source called", []answerformat.Answer{closed}, "stop", EndAnsweredWhereSourceCalled, 1},
		{"calls where the source answered", []answerformat.Answer{answerCalling("f", "g"), answerCalling("f")}, "stop", EndCalledWhereSourceAnswered, 2},
		{"cut", []answerformat.Answer{{Reasoning: "long"}}, "length", EndLength, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := Parse(json.RawMessage(toolLoop), nil)
			if err != nil {
				t.Fatal(err)
			}
			w := src.Walk(Options{})
			for _, a := range tc.answers {
				w.Add(Turn{Answer: a, FinishReason: tc.finish, PromptTokens: 10, CompletionTokens: 2})
			}
			if w.Ended() != tc.ended || len(w.Turns()) != tc.turns {
				t.Fatalf("ended %q after %d turns, want %q after %d", w.Ended(), len(w.Turns()), tc.ended, tc.turns)
			}
			if n := strings.Count(string(w.Messages()), `"role":"assistant"`); n != tc.turns {
				t.Fatalf("%d assistant turns kept, want %d: %s", n, tc.turns, w.Messages())
			}
		})
	}
}

// TestSplicesByPosition: results given out of order go under the model's
// call ids by the position of the call they answer.
func TestSplicesByPosition(t *testing.T) {
	src, err := Parse(json.RawMessage(toolLoop), nil)
	if err != nil {
		t.Fatal(err)
	}
	w := src.Walk(Options{ReasoningAlso: []string{"reasoning"}})
	w.Add(Turn{Answer: answerCalling("f", "g"), FinishReason: "stop"})
	msgs := gjson.ParseBytes(w.Messages()).Array()
	if len(msgs) != 4 || msgs[2].Get("tool_call_id").String() != "functions.g:1" || msgs[3].Get("tool_call_id").String() != "functions.f:0" {
		t.Fatalf("spliced %s", w.Messages())
	}
	if msgs[1].Get("reasoning").String() != "r" || msgs[1].Get("reasoning_content").String() != "r" {
		t.Fatalf("reasoning not passed back under both names: %s", msgs[1].Raw)
	}
	p, c, conv := func() (int, int, int) {
		w.Add(Turn{Answer: answerformat.Answer{Closed: true}, PromptTokens: 7, CompletionTokens: 3})
		return w.Totals()
	}()
	if p != 7 || c != 3 || conv != 10 {
		t.Fatalf("totals %d %d %d", p, c, conv)
	}
}

// TestBadSources: what cannot be followed is refused with what is wrong.
func TestBadSources(t *testing.T) {
	for _, tc := range []struct{ name, messages, want string }{
		{"no user turn", `[{"role":"system","content":"s"}]`, "no user turn"},
		{"assistant first", `[{"role":"assistant","content":"hi"},{"role":"user","content":"q"}]`, "before any user turn"},
		{"result names no call", `[{"role":"user","content":"q"},{"role":"assistant","content":"","tool_calls":[{"id":"a","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"zz","content":"r"}]`, `"zz" names no call`},
		{"result without a call", `[{"role":"user","content":"q"},{"role":"tool","content":"r"}]`, "no tool call before it"},
		{"extra result", `[{"role":"user","content":"q"},{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f"}}]},{"role":"tool","content":"r"},{"role":"tool","content":"r2"}]`, "more tool results"},
		{"call never answered", `[{"role":"user","content":"q"},{"role":"assistant","content":"","tool_calls":[{"id":"a","function":{"name":"f"}},{"id":"b","function":{"name":"g"}}]},{"role":"tool","tool_call_id":"a","content":"r"},{"role":"assistant","content":"x"}]`, "tool call 1 of assistant turn messages[1] (g, id \"b\") is never answered"},
		{"call at the end never answered", `[{"role":"user","content":"q"},{"role":"assistant","content":"","tool_calls":[{"id":"a","function":{"name":"f"}}]}]`, "never answered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(json.RawMessage(tc.messages), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestTrailingRequest: a source that ends with a user turn asks for one
// more answer than it holds.
func TestTrailingRequest(t *testing.T) {
	src, err := Parse(json.RawMessage(`[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if src.Turns() != 2 {
		t.Fatalf("%d turns", src.Turns())
	}
	w := src.Walk(Options{})
	w.Add(Turn{Answer: answerformat.Answer{Content: "B", Closed: true}})
	if got := gjson.GetBytes(w.Messages(), "#.content").Raw; got != `["a","B","c"]` {
		t.Fatalf("conversation so far %s", got)
	}
	w.Add(Turn{Answer: answerformat.Answer{Content: "D", Closed: true}})
	if w.Ended() != EndDone {
		t.Fatalf("ended %q", w.Ended())
	}
}

// TestAnswerTextAsWritten: an answer's text goes into the conversation as
// a JSON string that reads back as the text (invalid UTF-8 as U+FFFD), with
// markup characters as they are, as generate writes every other string.
func TestAnswerTextAsWritten(t *testing.T) {
	src, err := Parse(json.RawMessage(toolLoop), nil)
	if err != nil {
		t.Fatal(err)
	}
	w := src.Walk(Options{})
	text := "<b>x</b> & \"q\"\n\t\x01 \xff end"
	w.Add(Turn{Answer: answerformat.Answer{Content: text, Reasoning: "<think>", Closed: true}, FinishReason: "stop"})
	msgs := gjson.ParseBytes(w.Messages()).Array()
	got := msgs[len(msgs)-1]
	if want := strings.ToValidUTF8(text, "\uFFFD"); got.Get("content").String() != want {
		t.Fatalf("content reads back as %q, want %q", got.Get("content").String(), want)
	}
	if !strings.Contains(got.Raw, `"<b>x</b> & \"q\"\n\t\u0001 \ufffd end"`) || got.Get("reasoning_content").String() != "<think>" {
		t.Fatalf("written as %s", got.Raw)
	}
	if !json.Valid(w.Messages()) {
		t.Fatalf("not valid JSON: %s", w.Messages())
	}
}
