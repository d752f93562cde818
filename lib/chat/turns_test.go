package chat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/bundle"
)

// turnTemplates pairs each conformance template with the tokenizer folders
// (in lib/tokenizer's test data) of its model family.
var turnTemplates = map[string][]string{
	"qwen3":              {"qwen3"},
	"deepseek_v3":        {"deepseek_v3"},
	"llama3_1":           {"llama3_1"},
	"llama3_2":           {"llama3_1"},
	"gptoss":             {"gptoss"},
	"kimi_k2_instruct":   {"kimi_k2", "kimi_shared"},
	"kimi_k2_thinking":   {"kimi_k2", "kimi_shared"},
	"kimi_k25_like_kite": {"kimi_k25", "kimi_shared"},
}

// TestTurnPromptsEqualFullEncoding renders the conformance cases and a
// long conversation with tools, reasoning and tool calls turn after turn,
// each prompt the conversation up to the next assistant message, and checks
// that TurnPrompts gives exactly the ids of encoding each prompt whole, and
// that it reused ids and decoded messages where the prompts share their
// beginning, and (Kimi-K2.5) the text of loop iterations. The template
// arguments change now and then from turn to turn.
func TestTurnPromptsEqualFullEncoding(t *testing.T) {
	const testdata = "../chattemplate/testdata/conformance"
	raw, err := os.ReadFile(filepath.Join(testdata, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases struct {
		Cases []struct {
			Name     string            `json:"name"`
			Messages []json.RawMessage `json:"messages"`
			Tools    json.RawMessage   `json:"tools"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	tools := cases.Cases[4].Tools // tools_dict_args
	long := longConversation()
	for tmpl, folders := range turnTemplates {
		t.Run(tmpl, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range folders {
				if err := bundle.UnpackDir(os.DirFS(filepath.Join("../tokenizer/testdata/tokenizers", f)), dir); err != nil {
					t.Fatal(err)
				}
			}
			m, err := Load(dir, filepath.Join(testdata, tmpl+".jinja"), nil)
			if err != nil {
				t.Fatal(err)
			}
			reused, total, msgsReused, replayed := 0, 0, 0, 0
			walk := func(name string, msgs []json.RawMessage, tools json.RawMessage) {
				var p TurnPrompts
				for i := 1; i <= len(msgs); i++ {
					if i < len(msgs) && !isAssistant(msgs[i]) {
						continue // a prompt is the conversation up to an answer
					}
					arr, _ := json.Marshal(msgs[:i])
					m := m.WithArgs(turnArgs[i%len(turnArgs)])
					text, err := m.Render(arr, tools, true)
					if err != nil {
						return // a case this template refuses
					}
					got, err := p.Next(m, msgs[:i], tools)
					if err != nil {
						t.Fatalf("%s, %d messages: %v", name, i, err)
					}
					if want := m.Encode(text); !slices.Equal(got, want) {
						t.Fatalf("%s, %d messages: ids differ from the whole prompt's:\n got %v\nwant %v", name, i, got, want)
					}
					reused, total = reused+p.last.Reused, total+len(got)
					msgsReused += p.msgs.Reused
					replayed += p.msgs.Replayed
				}
			}
			for _, c := range cases.Cases {
				walk(c.Name, c.Messages, c.Tools)
			}
			walk("long conversation", long, tools)
			if reused == 0 {
				t.Errorf("no ids reused from one turn to the next")
			}
			if msgsReused == 0 {
				t.Errorf("no decoded messages reused from one turn to the next")
			}
			if strings.HasPrefix(tmpl, "kimi_k25") && replayed == 0 {
				t.Errorf("no loop iteration replayed from one turn to the next")
			}
			t.Logf("%s: %d of %d prompt ids reused", tmpl, reused, total)
		})
	}
}

// turnArgs are template arguments that differ from turn to turn, as a
// record's thinking setting makes them: the thinking switches are read
// inside Kimi's message loops.
var turnArgs = []map[string]json.RawMessage{
	nil, nil, nil,
	{"thinking": json.RawMessage(`false`), "enable_thinking": json.RawMessage(`false`)},
	{"preserve_thinking": json.RawMessage(`true`)},
	nil, nil,
}

func isAssistant(msg json.RawMessage) bool {
	var m struct{ Role string }
	return json.Unmarshal(msg, &m) == nil && m.Role == "assistant"
}

// longConversation is ten turns of a tool-using agent: reasoning, tool
// calls with their results, plain answers.
func longConversation() []json.RawMessage {
	msgs := []json.RawMessage{
		json.RawMessage(`{"role":"system","content":"You are a careful assistant with tools."}`),
		json.RawMessage(`{"role":"user","content":"What is the weather in Paris and in 東京?"}`),
	}
	for k := range 10 {
		n := string(rune('0' + k))
		calls := json.RawMessage(`[{"id":"call_` + n + `","type":"function","function":{"name":"get_weather","arguments":{"city":"Paris","days":` + n + `}}}]`)
		msgs = append(msgs,
			AssistantTurn("Let me look that up ("+n+").", "The user asks about weather; call the tool "+n+".", calls),
			json.RawMessage(`{"role":"tool","tool_call_id":"call_`+n+`","content":"{\"temp\": 2`+n+`, \"sky\": \"clear\"}"}`),
			AssistantTurn("It is 2"+n+" degrees and clear.\n\nAnything else?", "", nil),
			json.RawMessage(`{"role":"user","content":"And tomorrow, point `+n+`?  \n"}`),
		)
	}
	return msgs
}
