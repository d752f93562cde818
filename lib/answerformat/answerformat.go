// Package answerformat reads a model's answer back from its token ids into
// what a chat template renders again: reasoning, content and tool calls, in
// the model family's own output format. Conversations regenerated turn by
// turn need it: each answer becomes an assistant turn of the next prompt,
// exactly as the model wrote it.
//
// The answer is cut at the family's special tokens by id, never by
// searching decoded text, so a reasoning that quotes "</think>" as plain
// text is not taken for its end.
//
// Kimi-K2.5 (and Kimi-K2, which has no reasoning tokens) write
//
//	REASONING</think>CONTENT<|tool_calls_section_begin|>
//	<|tool_call_begin|>functions.NAME:INDEX<|tool_call_argument_begin|>{JSON}<|tool_call_end|>...
//	<|tool_calls_section_end|><|im_end|>
//
// after a prompt that ends with <think> (as SGLang's kimi_k2 reasoning
// parser and KimiK2Detector read it); the call's id is the model's own
// "functions.NAME:INDEX". Qwen3 writes <think>REASONING</think> CONTENT,
// then each call as <tool_call>{"name": ..., "arguments": {...}}</tool_call>
// (Hermes style), reasoning and content trimmed of the blank lines its
// template puts around them.
package answerformat

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/tokenizer"
)

// Answer is one answer read back.
type Answer struct {
	Reasoning string
	Content   string
	ToolCalls []ToolCall
	// Closed tells that the answer ended with the family's end-of-turn
	// token (a cut answer has none).
	Closed bool
}

// ToolCall is one call of a tool, its arguments as the model wrote them.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Format reads the answers of one model family. It is safe for concurrent
// use.
type Format struct {
	// Family names the output format: "kimi-k2.5", "kimi-k2" or "qwen3".
	Family string
	tok    *tokenizer.Tokenizer
	// thinkStart and thinkEnd are the reasoning's marks; -1 when the
	// family has none.
	thinkStart, thinkEnd int
	// ends are the end-of-turn ids.
	ends []int
	// trim: the family's template trims reasoning and content (Qwen3).
	trim  bool
	calls callGrammar
}

// callGrammar is how a family writes tool calls, by special-token id.
type callGrammar struct {
	kimi                                           bool
	sectionBegin, sectionEnd, begin, argBegin, end int // Kimi; -1 when absent
}

// Families are the formats ForTokenizer knows, for messages.
const Families = "kimi-k2.5, kimi-k2, qwen3"

// ForTokenizer picks the answer format of the model whose tokenizer tok is
// (loaded from path, named in errors) by its special tokens. A tokenizer of
// another family is refused with its family named, before any request is
// sent: its answers could not be split into turns.
func ForTokenizer(tok *tokenizer.Tokenizer, path string) (*Format, error) {
	id := func(s string) int {
		if v, ok := tok.TokenID(s); ok && isAdded(tok, v) {
			return v
		}
		return -1
	}
	f := &Format{tok: tok, thinkStart: id("<think>"), thinkEnd: id("</think>")}
	switch {
	case id("<|tool_calls_section_begin|>") >= 0 && id("<|im_end|>") >= 0:
		f.Family = "kimi-k2"
		if f.thinkEnd >= 0 {
			f.Family = "kimi-k2.5"
		}
		f.calls = callGrammar{kimi: true, sectionBegin: id("<|tool_calls_section_begin|>"), sectionEnd: id("<|tool_calls_section_end|>"),
			begin: id("<|tool_call_begin|>"), argBegin: id("<|tool_call_argument_begin|>"), end: id("<|tool_call_end|>")}
		f.addEnds(id("<|im_end|>"), id("[EOS]"))
	case id("<tool_call>") >= 0 && id("<|im_start|>") >= 0 && f.thinkEnd >= 0:
		f.Family = "qwen3"
		f.trim = true
		f.calls = callGrammar{sectionBegin: -1, sectionEnd: -1, begin: id("<tool_call>"), argBegin: -1, end: id("</tool_call>")}
		f.addEnds(id("<|im_end|>"), id("<|endoftext|>"))
	default:
		return nil, exitcode.Usagef("--turns all: the answers of the model of --tokenizer %s (%s) cannot be read back into turns: "+
			"answer formats are known for %s", path, guessFamily(id), Families)
	}
	return f, nil
}

func isAdded(tok *tokenizer.Tokenizer, id int) bool {
	for _, a := range tok.AddedTokens() {
		if a.ID == id {
			return true
		}
	}
	return false
}

func (f *Format) addEnds(ids ...int) {
	for _, id := range ids {
		if id >= 0 {
			f.ends = append(f.ends, id)
		}
	}
}

// guessFamily names a tokenizer's family by its special tokens, for the
// refusal.
func guessFamily(id func(string) int) string {
	for _, g := range []struct{ token, family string }{
		{"<|start_header_id|>", "a Llama 3 family tokenizer"},
		{"<|channel|>", "a gpt-oss (harmony) tokenizer"},
		{"<｜tool▁calls▁begin｜>", "a DeepSeek-V3 family tokenizer"},
		{"<|im_start|>", "a ChatML tokenizer without Qwen3's reasoning tokens"},
	} {
		if id(g.token) >= 0 {
			return g.family
		}
	}
	return "an unknown family"
}

// OpensReasoning tells whether a prompt leaves the model inside its
// reasoning: it ends with the think-start token (Kimi-K2.5's generation
// prompt).
func (f *Format) OpensReasoning(prompt []int) bool {
	return f.thinkStart >= 0 && len(prompt) > 0 && prompt[len(prompt)-1] == f.thinkStart
}

// Read reads output, the ids generated after prompt. An answer whose tool
// calls do not follow the family's grammar is an error: what it meant to
// call is unknown.
func (f *Format) Read(prompt, output []int) (Answer, error) {
	var a Answer
	p := parser{f: f, inReasoning: f.OpensReasoning(prompt)}
	for i, id := range output {
		if slices.Contains(f.ends, id) {
			a.Closed = true
			output = output[:i]
			break
		}
	}
	if err := p.run(output); err != nil {
		return a, err
	}
	a.Reasoning, a.Content, a.ToolCalls = p.reasoning, p.content.String(), p.calls
	if p.inReasoning { // cut inside its reasoning: all of it is reasoning
		a.Reasoning, a.Content = p.content.String(), ""
	}
	if f.trim {
		a.Reasoning, a.Content = strings.TrimSpace(a.Reasoning), strings.TrimSpace(a.Content)
	}
	return a, nil
}

// parser walks an answer's ids.
type parser struct {
	f           *Format
	inReasoning bool
	reasoning   string
	content     strings.Builder // the reasoning while inReasoning
	calls       []ToolCall
	pending     []int // plain ids not yet decoded: a run of the ids read
}

func (p *parser) run(ids []int) error {
	g := p.f.calls
	for i := 0; i < len(ids); i++ {
		id := ids[i]
		switch {
		case id == p.f.thinkStart && !p.inReasoning && p.content.Len() == 0 && len(p.pending) == 0 && p.reasoning == "":
			p.inReasoning = true
		case id == p.f.thinkEnd && p.inReasoning:
			p.flush()
			p.reasoning, p.inReasoning = p.content.String(), false
			p.content.Reset()
		case id == g.sectionBegin || (!g.kimi && id == g.begin):
			p.flush()
			n, err := p.readCalls(ids[i:])
			if err != nil {
				return err
			}
			i += n - 1
		case len(p.pending) == 0:
			p.pending = ids[i : i+1]
		default:
			// Plain ids run on until a marker flushes them: the run is a
			// view of ids, not a copy.
			p.pending = p.pending[:len(p.pending)+1]
		}
	}
	p.flush()
	return nil
}

// flush decodes the plain ids gathered into the current part.
func (p *parser) flush() {
	if len(p.pending) == 0 {
		return
	}
	s, err := p.f.tok.Decode(p.pending)
	if err != nil { // an id past the vocabulary: keep what can be kept
		s = ""
	}
	p.content.WriteString(s)
	p.pending = nil
}

// readCalls reads the tool calls at the start of ids and returns how many
// ids they took; text after them (before the end of the turn) is dropped,
// as SGLang's detectors drop it.
func (p *parser) readCalls(ids []int) (int, error) {
	if p.f.calls.kimi {
		return p.readKimiCalls(ids)
	}
	return p.readHermesCalls(ids)
}

// kimiCallID is the id of a Kimi tool call: functions.NAME:INDEX (the
// "functions." prefix optional, as SGLang's detector reads it).
var kimiCallID = regexp.MustCompile(`^(?:functions\.)?([\w.\-]+):(\d+)$`)

func (p *parser) readKimiCalls(ids []int) (int, error) {
	g := p.f.calls
	i := 1 // past the section's begin
	for i < len(ids) {
		switch ids[i] {
		case g.sectionEnd:
			return i + 1, nil
		case g.begin:
			head, n := p.until(ids[i+1:], g.argBegin)
			if n < 0 {
				return 0, fmt.Errorf("tool call %d: no <|tool_call_argument_begin|> after its id", len(p.calls))
			}
			i += 1 + n + 1
			args, m := p.until(ids[i:], g.end)
			if m < 0 {
				return 0, fmt.Errorf("tool call %d: cut before <|tool_call_end|>", len(p.calls))
			}
			i += m + 1
			callID := strings.TrimSpace(head)
			match := kimiCallID.FindStringSubmatch(callID)
			if match == nil {
				return 0, fmt.Errorf("tool call %d: id %q is not functions.NAME:INDEX", len(p.calls), callID)
			}
			p.calls = append(p.calls, ToolCall{ID: callID, Name: match[1], Arguments: strings.TrimSpace(args)})
		default:
			i++ // text between calls, as the detector skips it
		}
	}
	return 0, fmt.Errorf("the tool-call section is cut before <|tool_calls_section_end|>")
}

// until decodes ids up to the first stop and returns the text and the
// number of ids before it, or -1 when stop never comes.
func (p *parser) until(ids []int, stop int) (string, int) {
	for i, id := range ids {
		if id == stop {
			s, _ := p.f.tok.Decode(ids[:i])
			return s, i
		}
	}
	return "", -1
}

func (p *parser) readHermesCalls(ids []int) (int, error) {
	g := p.f.calls
	i := 0
	for i < len(ids) {
		if ids[i] != g.begin {
			i++ // whitespace between calls
			continue
		}
		body, n := p.until(ids[i+1:], g.end)
		if n < 0 {
			return 0, fmt.Errorf("tool call %d: cut before </tool_call>", len(p.calls))
		}
		i += n + 2
		var call struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(body)), &call); err != nil || call.Name == "" {
			return 0, fmt.Errorf("tool call %d: not {\"name\", \"arguments\"} JSON: %q", len(p.calls), body)
		}
		args := string(call.Arguments)
		if len(call.Arguments) > 0 && call.Arguments[0] == '"' {
			_ = json.Unmarshal(call.Arguments, &args) // arguments given as a string of JSON
		}
		p.calls = append(p.calls, ToolCall{ID: fmt.Sprintf("call_%d", len(p.calls)), Name: call.Name, Arguments: args})
	}
	return i, nil
}

// CallsJSON is calls as an OpenAI tool_calls array, nil for none.
func CallsJSON(calls []ToolCall) json.RawMessage {
	if len(calls) == 0 {
		return nil
	}
	type function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string   `json:"id"`
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	out := make([]call, len(calls))
	for i, c := range calls {
		out[i] = call{c.ID, "function", function{c.Name, c.Arguments}}
	}
	b, _ := json.Marshal(out) // strings only: cannot fail
	return b
}

// FromMessage is an answer an OpenAI-compatible server already split: its
// content, reasoning and tool_calls array (the provider's own call ids).
// closed is whether the answer ended of itself (not cut by the token
// limit).
func FromMessage(content, reasoning string, toolCalls json.RawMessage, closed bool) (Answer, error) {
	a := Answer{Content: content, Reasoning: reasoning, Closed: closed}
	if len(toolCalls) == 0 || string(toolCalls) == "null" {
		return a, nil
	}
	var calls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(toolCalls, &calls); err != nil {
		return a, fmt.Errorf("tool_calls is not an array of calls: %v", err)
	}
	for i, c := range calls {
		args := string(c.Function.Arguments)
		if len(c.Function.Arguments) > 0 && c.Function.Arguments[0] == '"' {
			_ = json.Unmarshal(c.Function.Arguments, &args)
		}
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		a.ToolCalls = append(a.ToolCalls, ToolCall{ID: id, Name: c.Function.Name, Arguments: args})
	}
	return a, nil
}
