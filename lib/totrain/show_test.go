package totrain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/tokenizer"
)

const kimi = chat.BuiltinPrefix + "kimi-k2.5"

// showRecords are generated records of every shape --show meets: an
// OpenAI-compatible text answer with reasoning, a multi-turn prompt, a tool
// call, and SGLang's token ids (built by the test from the template).
func showRecords(t *testing.T, model *chat.Model) string {
	t.Helper()
	prompt := json.RawMessage(`[{"role":"user","content":"Say ok, naïvely 😀"}]`)
	head, err := model.Render(prompt, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(model.Encode(head))
	out, _ := json.Marshal(model.Encode("</think>ok 😀<|im_end|>"))
	return `{"id":"text","thinking":true,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"2+2?"}],"text":"It is 4.\n\nSure.","reasoning":"add them","finish_reason":"stop"}
{"id":"multi","thinking":true,"messages":[{"role":"user","content":"one"},{"role":"assistant","content":"first answer","reasoning_content":"hmm"},{"role":"user","content":"two"}],"text":"second","finish_reason":"stop"}
{"id":"call","thinking":true,"messages":[{"role":"user","content":"weather?"}],"tools":[{"type":"function","function":{"name":"w","parameters":{"type":"object","properties":{}}}}],"text":"","tool_calls":[{"id":"functions.w:0","type":"function","function":{"name":"w","arguments":"{}"}}],"finish_reason":"tool_calls"}
{"id":"ids","thinking":true,"messages":` + string(prompt) + `,"input_ids":` + string(in) + `,"output_ids":` + string(out) + `,"text":"ok 😀","finish_reason":"stop"}
`
}

// tokensSample is one --format tokens sample.
type tokensSample struct {
	ID       string `json:"id"`
	Turn     int    `json:"turn"` // --format turns
	InputIDs []int  `json:"input_ids"`
	LossMask []int  `json:"loss_mask"`
}

func runToTrain(t *testing.T, stdin string, args ...string) (string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := Main(append([]string{"to-train"}, args...), strings.NewReader(stdin), &stdout, &stderr); code != 0 {
		t.Fatalf("to-train %v: exit %d: %s", args, code, stderr.String())
	}
	return stdout.String(), stderr.String()
}

// shownSamples splits --show's output into each sample's body (the text
// and the span list), by id.
func shownSamples(t *testing.T, out string) map[string]string {
	t.Helper()
	bodies := map[string]string{}
	header := regexp.MustCompile(`(?m)^=== (\S+(?: turn \d+)?) \((tokens|specforge|turns)\): .*\n`)
	locs := header.FindAllStringSubmatchIndex(out, -1)
	for i, loc := range locs {
		end := len(out)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		bodies[out[loc[2]:loc[3]]] = out[loc[1]:end]
	}
	return bodies
}

// checkMarks walks a shown sample token by token: each token's text must
// come next, inside [[ ]] exactly when its loss mask is 1; then one span
// line per run of equal mask, with its token count.
func checkMarks(t *testing.T, tok *tokenizer.Tokenizer, body string, s tokensSample) {
	t.Helper()
	rest, trained := body, false
	expect := func(what, text string) bool {
		if !strings.HasPrefix(rest, text) {
			t.Errorf("%s: at byte %d want %s %q, got %q", s.ID, len(body)-len(rest), what, text, rest[:min(len(rest), 40)])
			return false
		}
		rest = rest[len(text):]
		return true
	}
	var runs []string
	for i, id := range s.InputIDs {
		m := s.LossMask[i] == 1
		if m != trained || i == 0 {
			if i > 0 && trained && !expect("the end of a trained span", closeTrained) {
				return
			}
			if m && !expect("the start of a trained span", openTrained) {
				return
			}
			runs = append(runs, "")
			trained = m
		}
		piece, err := tok.Decode([]int{id})
		if err != nil {
			t.Fatal(err)
		}
		if !expect(fmt.Sprintf("token %d (id %d, mask %d)", i, id, s.LossMask[i]), piece) {
			return
		}
		runs[len(runs)-1] += "x"
	}
	if trained && !expect("the end of a trained span", closeTrained) {
		return
	}
	want := "\n---"
	for i, r := range runs {
		kind := "context"
		if s.LossMask[len(strings.Join(runs[:i], ""))] == 1 {
			kind = "trained"
		}
		want += fmt.Sprintf("\n  span %d: %s, %d token", i+1, kind, len(r))
		if len(r) != 1 {
			want += "s"
		}
	}
	expect("the span list", want+"\n\n")
	if rest != "" {
		t.Errorf("%s: more after the span list: %q", s.ID, rest)
	}
}

// TestShowMarksTheLossMask: --show prints every token of every sample in
// order, inside the brackets of a trained span exactly where its loss mask
// is 1, with each span's token count: for --format tokens the mask as
// written, and for --format specforge the same mask where the conversation
// has one assistant turn (the answer).
func TestShowMarksTheLossMask(t *testing.T) {
	model, err := chat.Load(kimi, chat.TemplateAuto, nil)
	if err != nil {
		t.Fatal(err)
	}
	records := showRecords(t, model)
	jsonlOut, _ := runToTrain(t, records, "-q", "-f", "tokens", "--tokenizer", kimi)
	var samples []tokensSample
	for _, line := range strings.Split(strings.TrimSpace(jsonlOut), "\n") {
		var s tokensSample
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatal(err)
		}
		samples = append(samples, s)
	}
	if len(samples) != 4 {
		t.Fatalf("%d samples, want 4", len(samples))
	}
	shown, stderr := runToTrain(t, records, "-f", "tokens", "--tokenizer", kimi, "--show", "4")
	if !strings.Contains(stderr, "showed 4 samples") {
		t.Errorf("stderr %q", stderr)
	}
	bodies := shownSamples(t, shown)
	for _, s := range samples {
		checkMarks(t, model.Tok, bodies[s.ID], s)
	}

	shown, _ = runToTrain(t, records, "-q", "--tokenizer", kimi, "--show", "text", "--show", "call", "--show", "ids")
	bodies = shownSamples(t, shown)
	for _, s := range samples {
		if s.ID == "multi" {
			continue
		}
		checkMarks(t, model.Tok, bodies[s.ID], s)
	}
}

// key is the sample's name in --show's header: its id, and its turn under
// --format turns.
func (s tokensSample) key() string {
	if s.Turn > 0 {
		return fmt.Sprintf("%s turn %d", s.ID, s.Turn)
	}
	return s.ID
}

// TestShowConversation: a regenerated conversation (generate --turns all)
// shows in every format, each token inside [[ ]] exactly where the loss
// mask of the written samples is 1: --format tokens and specforge the whole
// conversation with the loss on every assistant turn (specforge rendered by
// the template, against the tokens sample's mask), --format turns each
// turn's prompt and its output, and --show ID every turn of that record.
func TestShowConversation(t *testing.T) {
	model, err := chat.Load(kimi, chat.TemplateAuto, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := string(conversationRecord(t))
	args := []string{"--tokenizer", kimi, "--template-arg", "thinking=true"}
	written := map[string][]tokensSample{}
	for _, format := range []string{formatTokens, formatTurns} {
		out, _ := runToTrain(t, rec, append([]string{"-q", "-f", format}, args...)...)
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var s tokensSample
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatal(err)
			}
			written[format] = append(written[format], s)
		}
	}
	if len(written[formatTokens]) != 1 || len(written[formatTurns]) != 2 {
		t.Fatalf("%d tokens and %d turns samples, want 1 and 2", len(written[formatTokens]), len(written[formatTurns]))
	}
	written[formatSpecForge] = written[formatTokens]
	for _, format := range []string{formatSpecForge, formatTokens, formatTurns} {
		shown, stderr := runToTrain(t, rec, append([]string{"-f", format, "--show", "tools"}, args...)...)
		want := len(written[format])
		if !strings.Contains(stderr, "showed "+cliutil.Count(int64(want), "sample")) {
			t.Errorf("--format %s: stderr %q, want %d shown", format, stderr, want)
		}
		bodies := shownSamples(t, shown)
		if len(bodies) != want {
			t.Errorf("--format %s: %d samples shown, want %d:\n%s", format, len(bodies), want, shown)
		}
		for _, s := range written[format] {
			checkMarks(t, model.Tok, bodies[s.key()], s)
		}
	}
}

// TestShowEveryAssistantTurn: --format specforge trains on every assistant
// turn of the conversation, earlier ones included, and on nothing else.
func TestShowEveryAssistantTurn(t *testing.T) {
	model, err := chat.Load(kimi, chat.TemplateAuto, nil)
	if err != nil {
		t.Fatal(err)
	}
	shown, _ := runToTrain(t, showRecords(t, model), "-q", "--tokenizer", kimi, "--show", "multi")
	spans := regexp.MustCompile(`\[\[(.*?)\]\]`).FindAllStringSubmatch(shown, -1)
	var got []string
	for _, s := range spans {
		got = append(got, s[1])
	}
	want := []string{"</think>first answer<|im_end|>", "</think>second<|im_end|>"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("trained spans %q, want %q\n%s", got, want, shown)
	}
}

// TestShowColours: on a terminal the trained text is green and special
// tokens bold, without brackets; NO_COLOR and dumb terminals get brackets.
func TestShowColours(t *testing.T) {
	for _, tc := range []struct {
		terminal      bool
		term, noColor string
		want          bool
	}{
		{true, "xterm-256color", "", true},
		{true, "xterm", "1", false},
		{true, "dumb", "", false},
		{false, "xterm", "", false},
	} {
		if got := colourOn(tc.terminal, tc.term, tc.noColor); got != tc.want {
			t.Errorf("colourOn(%v, %q, %q) = %v", tc.terminal, tc.term, tc.noColor, got)
		}
	}
	model, err := chat.Load(kimi, chat.TemplateAuto, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	conv := &converter{format: formatTokens, model: model}
	t.Setenv("TERM", "xterm")
	t.Setenv("NO_COLOR", "")
	sw := newShowWriter(conv, &showFilter{count: 1}, &out, true) // stdout a terminal
	end, _ := model.Tok.TokenID("<|im_end|>")
	ok := model.Encode("ok")
	ids := append(append([]int{}, ok...), ok[0], end)
	mask := make([]bool, len(ids))
	mask[len(ok)], mask[len(ok)+1] = true, true
	if err := sw.print(trainView{id: "c", ids: ids, trained: mask}); err != nil {
		t.Fatal(err)
	}
	sw.Flush()
	want := "ok\x1b[0m" + sgrTrained + "ok" + sgrTrainedSpecial + "<|im_end|>" + sgrReset + sgrTrained + sgrReset
	if !strings.Contains(out.String(), want) || strings.Contains(out.String(), openTrained) {
		t.Errorf("coloured output %q, want it to hold %q and no brackets", out.String(), want)
	}
}

// TestShowRefusals: --show needs the tokenizer and no -o, counts from 1,
// and names the ids it found no sample for.
func TestShowRefusals(t *testing.T) {
	records := `{"id":"a","input_ids":[1,2],"output_ids":[3],"finish_reason":"stop"}
{"id":"cut","input_ids":[1,2],"output_ids":[3],"finish_reason":"length"}
`
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-f", "tokens", "--show", "1"}, 64, "--show needs --tokenizer"},
		{[]string{"-f", "tokens", "--tokenizer", kimi, "--show", "0"}, 64, "--show 0: show at least 1 sample"},
		{[]string{"-f", "tokens", "--tokenizer", kimi, "--show", "1", "-o", "x.jsonl"}, 64, "-o does not go with it"},
		{[]string{"-f", "tokens", "--tokenizer", kimi, "--show", "a", "--show", "cut", "--show", "zz"}, 0, `showed 1 sample; no sample for "cut", "zz"`},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(append([]string{"to-train"}, tc.args...), strings.NewReader(records), &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
}

// TestShowControlsAsText: the text --show prints never holds a control
// character but newlines and tabs: escape sequences a model or a user wrote
// are printed as text, a C1 control split across two tokens too.
func TestShowControlsAsText(t *testing.T) {
	pieces := []string{"ok\x1b[2J", "\r\x07", "a\u009bb", "\xc2", "\x9b31m", "é\n\tend"}
	var got string
	after := false
	for _, p := range pieces {
		var s string
		s, after = controlsAsText(p, after)
		got += s
	}
	if want := `ok\x1b[2J\x0d\x07a\x9bb\x9b31mé` + "\n\tend"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
