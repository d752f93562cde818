package sim

import (
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/answerformat"
	"github.com/synthpipe/synthpipe/lib/chat"
)

// Answers in Kimi-K2.5's format read back, by synthpipe's reader of the
// model's own format, into reasoning, content and the calls the user asked
// for, the same for the same prompt.
func TestKimiAnswerFormat(t *testing.T) {
	model, err := chat.Load(chat.BuiltinPrefix+"kimi-k2.5", "auto", nil)
	if err != nil {
		t.Fatal(err)
	}
	format, err := answerformat.ForTokenizer(model.Tok, "builtin:kimi-k2.5")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Default()
	cfg.AnswerFormat = AnswerKimiK25
	cfg.Lengths = LengthDist{Kind: LengthFixed, Fixed: 10}
	_, url := startSim(t, cfg)
	tools := json.RawMessage(`[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{}}}},` +
		`{"type":"function","function":{"name":"search","parameters":{"type":"object","properties":{}}}}]`)
	ask := func(messages string, tools json.RawMessage) (answerformat.Answer, string) {
		t.Helper()
		text, err := model.Render(json.RawMessage(messages), tools, true)
		if err != nil {
			t.Fatal(err)
		}
		ids := model.Encode(text)
		code, _, body := post(t, url+"/generate", map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 100}})
		if code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		a, err := format.Read(ids, ints(gjson.GetBytes(body, "output_ids")))
		if err != nil {
			t.Fatalf("answer unreadable: %v (%s)", err, body)
		}
		return a, gjson.GetBytes(body, "text").String()
	}

	a, text := ask(`[{"role":"user","content":"hello"}]`, nil)
	if a.Reasoning == "" || a.Content == "" || len(a.ToolCalls) > 0 || !a.Closed || text != a.Reasoning+a.Content {
		t.Errorf("plain answer %+v, text %q: want reasoning, then content, closed by <|im_end|>", a, text)
	}
	again, _ := ask(`[{"role":"user","content":"hello"}]`, nil)
	if again.Content != a.Content || again.Reasoning != a.Reasoning {
		t.Error("the same prompt got another answer")
	}

	a, _ = ask(`[{"role":"user","content":"first search, then get_weather"}]`, tools)
	if len(a.ToolCalls) != 2 || a.ToolCalls[0].ID != "functions.search:0" || a.ToolCalls[1].ID != "functions.get_weather:1" ||
		!json.Valid([]byte(a.ToolCalls[0].Arguments)) || a.Content != "" {
		t.Errorf("calls %+v: want search then get_weather, in the order named", a.ToolCalls)
	}
	a, _ = ask(`[{"role":"user","content":"use search"},{"role":"assistant","content":"","tool_calls":[{"id":"functions.search:0","type":"function","function":{"name":"search","arguments":"{}"}}]},`+
		`{"role":"tool","tool_call_id":"functions.search:0","content":"found"}]`, tools)
	if len(a.ToolCalls) != 0 || a.Content == "" {
		t.Errorf("after a tool result: %+v, want an answer in words", a)
	}
	a, _ = ask(`[{"role":"user","content":"no tool named here"}]`, tools)
	if len(a.ToolCalls) != 0 {
		t.Errorf("called %+v though the user named no tool", a.ToolCalls)
	}
}
