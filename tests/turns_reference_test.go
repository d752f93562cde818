package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/synthpipe/synthpipe/lib/answerformat/turnstest"
	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/sim"
)

// The acceptance test of conversations regenerated turn by turn: every
// prompt generate --turns all sends must be, id for id (SGLang) or message
// for message (OpenAI-compatible), the independent Kimi-K2.5 rendering of
// the conversation so far (lib/answerformat/testdata/kimi_turns.jsonl.zst,
// rendered by Python-side tooling, see its LICENSES.md). A scripted server
// answers each turn with the reference model's answer, so the regenerated
// conversation is the reference's: a plain three-turn chat (earlier
// reasoning dropped by the template), a tool loop of one call then two calls
// (reasoning kept inside the loop), and conversations that end early: the
// model calls where the source answered, calls other functions than the
// source, or is cut by the token limit.

// refServer answers /generate and /v1/chat/completions with the reference
// answers of the turns whose prompts it receives, and records which turn
// each request's prompt was; everything else goes to a simulator (server
// info, models).
type refServer struct {
	convs    []turnstest.Conversation
	byIDs    map[string][2]int // prompt ids, joined → conversation, turn
	answers  [][][]int         // the answers' ids by conversation, turn
	model    *chat.Model
	fallback http.Handler

	mu       sync.Mutex
	received map[string][][2]int // record id → the turns its prompts were, in order
	unknown  []string            // prompts that are no reference rendering
}

func newRefServer(t *testing.T, model *chat.Model, convs []turnstest.Conversation) *refServer {
	s, err := sim.New(sim.Default())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r := &refServer{convs: convs, byIDs: map[string][2]int{}, model: model, fallback: s.Handler(), received: map[string][][2]int{}}
	for ci, c := range convs {
		var answers [][]int
		for ti, turn := range c.Turns {
			r.byIDs[joinIDs(model.Encode(turn.ExpectedPromptText))] = [2]int{ci, ti}
			answers = append(answers, model.Encode(turn.AnswerText))
		}
		r.answers = append(r.answers, answers)
	}
	return r
}

func joinIDs(ids []int) string { return fmt.Sprint(ids) }

// ServeHTTP routes a request. The chat API carries no record id, so a
// test that runs one record names it in the base URL: /rec/ID/v1/...
func (r *refServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if rest, ok := strings.CutPrefix(req.URL.Path, "/rec/"); ok {
		id, path, _ := strings.Cut(rest, "/")
		req.Header.Set("X-Test-Record", id)
		req.URL.Path = "/" + path
	}
	switch req.URL.Path {
	case "/generate":
		r.generate(w, req)
	case "/v1/chat/completions":
		r.chat(w, req)
	default:
		r.fallback.ServeHTTP(w, req)
	}
}

// record notes which reference turn a record's request was, or that it
// was none, and says which.
func (r *refServer) record(id string, at [2]int, ok bool, prompt string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !ok {
		r.unknown = append(r.unknown, fmt.Sprintf("%s: %.300s", id, prompt))
		return
	}
	r.received[id] = append(r.received[id], at)
}

// recordID is the record id leading an SGLang rid ("<id>#<attempt>.<nonce>",
// the turn's "#turnN" before it).
func recordID(rid string) string {
	id, _, _ := strings.Cut(rid, "#")
	return id
}

func (r *refServer) generate(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var in struct {
		RID      string `json:"rid"`
		InputIDs []int  `json:"input_ids"`
		Sampling struct {
			MaxNew int `json:"max_new_tokens"`
		} `json:"sampling_params"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	at, ok := r.byIDs[joinIDs(in.InputIDs)]
	text, _ := r.model.Tok.Decode(in.InputIDs)
	r.record(recordID(in.RID), at, ok, text)
	if !ok {
		http.Error(w, `{"error":{"message":"the prompt is no reference rendering"}}`, http.StatusBadRequest)
		return
	}
	out := r.answers[at[0]][at[1]]
	finish := map[string]any{"type": "stop", "matched": out[len(out)-1]}
	if in.Sampling.MaxNew > 0 && len(out) > in.Sampling.MaxNew {
		out = out[:in.Sampling.MaxNew]
		finish = map[string]any{"type": "length", "length": in.Sampling.MaxNew}
	}
	writeJSONBody(w, map[string]any{"text": "", "output_ids": out, "meta_info": map[string]any{
		"id": in.RID, "finish_reason": finish, "prompt_tokens": len(in.InputIDs), "completion_tokens": len(out), "cached_tokens": 0}})
}

func (r *refServer) chat(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	doc := gjson.ParseBytes(body)
	// The record's id is not on the wire; the first user turn tells the
	// conversations apart, and the test's records carry it as their id.
	at, ok := [2]int{}, false
	for ci, c := range r.convs {
		for ti, turn := range c.Turns {
			if sameMessages(doc.Get("messages").Raw, string(turn.PromptMessages)) && sameJSON(doc.Get("tools").Raw, string(c.Tools)) {
				at, ok = [2]int{ci, ti}, true
			}
		}
	}
	r.record(req.Header.Get("X-Test-Record"), at, ok, doc.Get("messages").Raw)
	if !ok {
		http.Error(w, `{"error":{"message":"the messages are no reference conversation"}}`, http.StatusBadRequest)
		return
	}
	answer := gjson.Parse(string(r.convs[at[0]].Turns[at[1]].AnswerMessage))
	msg := map[string]any{"role": "assistant", "content": answer.Get("content").String(),
		"reasoning": answer.Get("reasoning_content").String()}
	finish := "stop"
	if calls := answer.Get("tool_calls"); calls.Exists() {
		msg["tool_calls"] = json.RawMessage(calls.Raw)
		finish = "tool_calls"
	}
	writeJSONBody(w, map[string]any{"id": "ref", "object": "chat.completion", "model": "m",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
}

func writeJSONBody(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// sameMessages compares two message arrays as JSON values, reading the
// reasoning generate passes back under "reasoning" as the
// reasoning_content the reference writes.
func sameMessages(got, want string) bool {
	var g, w []map[string]any
	if json.Unmarshal([]byte(got), &g) != nil || json.Unmarshal([]byte(want), &w) != nil {
		return false
	}
	for _, m := range g {
		if m["reasoning"] == m["reasoning_content"] {
			delete(m, "reasoning")
		}
	}
	return reflect.DeepEqual(g, w)
}

func sameJSON(a, b string) bool {
	if a == "" {
		a = "null"
	}
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// refSource is a source record for reference conversation c: its user,
// system and tool turns, and another model's answers in its assistant
// turns, under other call ids. edit changes the messages (an early end).
func refSource(t *testing.T, id string, c turnstest.Conversation, edit func(msgs []string) []string) string {
	t.Helper()
	msgs := turnstest.SourceMessages(c)
	if edit != nil {
		msgs = edit(msgs)
	}
	line := fmt.Sprintf(`{"id":%q,"messages":[%s]}`, id, strings.Join(msgs, ","))
	if tools := string(c.Tools); tools != "null" && tools != "" {
		line, _ = sjson.SetRaw(line, "tools", tools)
	}
	return line
}

// turnsCase is one source conversation and what regenerating it must do:
// the reference turns its prompts are, in order, and why it ends.
type turnsCase struct {
	id    string
	conv  int
	edit  func([]string) []string
	turns int // the reference turns sent, from the first
	ended string
}

func TestTurnsAllPromptsMatchReference(t *testing.T) {
	t.Parallel()
	requireTools(t, "tokenize-prompts", "generate")
	model, err := chat.Load(chat.BuiltinPrefix+"kimi-k2.5", chat.TemplateAuto, nil)
	if err != nil {
		t.Fatal(err)
	}
	convs, err := turnstest.Read(filepath.Join("..", turnstest.File))
	if err != nil {
		t.Fatal(err)
	}
	if len(convs) != 2 || convs[0].ID != "pub-chat" || convs[1].ID != "pub-tools" {
		t.Fatalf("the reference holds %d conversations, want pub-chat and pub-tools", len(convs))
	}
	cases := []turnsCase{
		{id: "chat", conv: 0, turns: 3, ended: "done"},
		{id: "tools", conv: 1, turns: 4, ended: "done"},
		// The source answered where the model calls (turn 1).
		{id: "calls-where-answered", conv: 1, turns: 1, ended: "called_where_source_answered", edit: func(m []string) []string {
			a, _ := sjson.Delete(m[1], "tool_calls")
			return []string{m[0], a, `{"role":"user","content":"Thanks."}`}
		}},
		// The source called another function (turn 1).
		{id: "calls-differ", conv: 1, turns: 1, ended: "calls_differ", edit: func(m []string) []string {
			m[1], _ = sjson.Set(m[1], "tool_calls.0.function.name", "book_hotel")
			return m
		}},
		// The source called where the model answers (turn 2).
		{id: "answers-where-called", conv: 1, turns: 2, ended: "answered_where_source_called", edit: func(m []string) []string {
			call := `{"role":"assistant","content":"","tool_calls":[{"id":"src_x","type":"function","function":{"name":"search_flights","arguments":"{}"}}]}`
			return append(m[:3:3], call, `{"role":"tool","tool_call_id":"src_x","content":"[]"}`)
		}},
	}
	dir := t.TempDir()
	var src bytes.Buffer
	for _, c := range cases {
		src.WriteString(refSource(t, c.id, convs[c.conv], c.edit) + "\n")
	}
	code, convsOut, stderr := runTool(t, 2*time.Minute, nil, &src, "tokenize-prompts", "--tokenizer", "builtin:kimi-k2.5", "--turns", "all")
	if code != 0 {
		t.Fatalf("tokenize-prompts: %d\n%s", code, stderr)
	}
	convsPath := filepath.Join(dir, "convs.jsonl")
	if err := os.WriteFile(convsPath, convsOut, 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("sglang", func(t *testing.T) {
		ref := newRefServer(t, model, convs)
		srv := httptest.NewServer(ref)
		defer srv.Close()
		out := runTurns(t, "--backend", "sglang", "--url", srv.URL, "--tokenizer", "builtin:kimi-k2.5", convsPath)
		checkTurns(t, ref, cases, out)
	})
	t.Run("sglang-cut", func(t *testing.T) {
		// An answer cut by --max-tokens ends the conversation, kept.
		ref := newRefServer(t, model, convs)
		srv := httptest.NewServer(ref)
		defer srv.Close()
		cut := len(model.Encode(convs[0].Turns[0].AnswerText)) - 1
		out := runTurns(t, "--backend", "sglang", "--url", srv.URL, "--tokenizer", "builtin:kimi-k2.5", "--max-tokens", fmt.Sprint(cut), convsPath)
		checkTurns(t, ref, []turnsCase{{id: "chat", conv: 0, turns: 1, ended: "length"}}, out)
	})
	t.Run("openai", func(t *testing.T) {
		ref := newRefServer(t, model, convs)
		srv := httptest.NewServer(ref)
		defer srv.Close()
		for _, c := range cases {
			one := filepath.Join(dir, c.id+".jsonl")
			writeRecord(t, convsPath, c.id, one)
			out := runTurns(t, "--backend", "openai", "--model", "m", "--url", srv.URL+"/rec/"+c.id+"/v1", one)
			checkTurns(t, ref, []turnsCase{c}, out)
		}
	})
}

// runTurns runs generate --turns all and returns its output lines by id.
func runTurns(t *testing.T, args ...string) map[string]gjson.Result {
	t.Helper()
	code, stdout, stderr := runTool(t, 2*time.Minute, nil, nil, "generate", append([]string{"--turns", "all", "--progress-interval", "0"}, args...)...)
	if code != 0 {
		t.Fatalf("generate: %d\n%s", code, stderr)
	}
	out := map[string]gjson.Result{}
	for _, line := range strings.Split(strings.TrimSpace(string(stdout)), "\n") {
		r := gjson.Parse(line)
		out[r.Get("id").String()] = r
	}
	return out
}

// checkTurns checks that every prompt was a reference rendering, that each
// record's prompts were its conversation's turns in order, and why each
// conversation ended.
func checkTurns(t *testing.T, ref *refServer, cases []turnsCase, out map[string]gjson.Result) {
	t.Helper()
	ref.mu.Lock()
	defer ref.mu.Unlock()
	if len(ref.unknown) > 0 {
		t.Errorf("%d prompts are no reference rendering of the conversation so far:\n%s", len(ref.unknown), strings.Join(ref.unknown, "\n"))
	}
	for _, c := range cases {
		var want [][2]int
		for i := 0; i < c.turns; i++ {
			want = append(want, [2]int{c.conv, i})
		}
		if got := ref.received[c.id]; !slices.Equal(got, want) {
			t.Errorf("%s: the prompts sent were reference turns %v, want %v", c.id, got, want)
		}
		line := out[c.id]
		if got := line.Get("ended").String(); got != c.ended {
			t.Errorf("%s: ended %q, want %q", c.id, got, c.ended)
		}
		if n := len(line.Get("turns").Array()); n != c.turns {
			t.Errorf("%s: %d turns in the output, want %d", c.id, n, c.turns)
		}
		if strings.Contains(line.Get("conversation").Raw, "Another model") || strings.Contains(line.Get("conversation").Raw, "src_") {
			t.Errorf("%s: the source's answers reached the conversation: %s", c.id, line.Get("conversation").Raw)
		}
	}
}

// writeRecord copies the line of record id from src to dst.
func writeRecord(t *testing.T, src, id, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if gjson.Get(line, "id").String() == id {
			if err := os.WriteFile(dst, []byte(line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no record %q in %s", id, src)
}
