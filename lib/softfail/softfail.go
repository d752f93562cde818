// Package softfail names the answers that were written without an error
// yet would teach a draft model the wrong thing: the one owner of the rules
// that tokstat counts by and to-train --strict drops by. Each rule reads the
// token ids where a record has them and its text where it does not.
//
// The rules follow SpecForge's scripts/validate_regenerated_data.py where it
// has one: --strict-think-markers (MarkerLeak), --expect-reasoning
// (EmptyReasoning), --expect-non-reasoning (ReasoningWhenOff); the others
// (BadToolCall, NoEndToken, Repetition, Empty) are failures seen in
// regenerated data that it does not check.
package softfail

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// The soft failure kinds, as tokstat names them (soft_KIND in --tsv) and
// to-train --strict counts them.
const (
	// MarkerLeak: "<think>" or "</think>" in the answer's content, or in
	// its reasoning (SpecForge --strict-think-markers). Where the reasoning
	// is not a field of its own (SGLang's text), the text up to its first
	// "</think>" is the reasoning and the rest the content.
	MarkerLeak = "marker_leak"
	// EmptyReasoning: the record was generated with thinking on
	// ("thinking": true) and its reasoning is empty or blank (SpecForge
	// --expect-reasoning).
	EmptyReasoning = "empty_reasoning"
	// ReasoningWhenOff: thinking was off ("thinking": false) and the answer
	// has reasoning anyway (SpecForge --expect-non-reasoning).
	ReasoningWhenOff = "reasoning_when_off"
	// BadToolCall: a tool_calls entry without a function name or whose
	// arguments are not a JSON object, or a tool-call section in the text
	// that is not closed or whose call is not JSON (Kimi's
	// <|tool_calls_section_begin|> ... <|tool_calls_section_end|>, Hermes'
	// and Qwen's <tool_call> ... </tool_call>).
	BadToolCall = "bad_tool_call"
	// NoEndToken: finish_reason "stop" with output_ids whose last id is not
	// an end token: the id the server says it matched
	// (native_finish_reason.matched), a stop_token_ids of gen.params, or
	// one the caller knows (tokstat --end-id, to-train's tokenizer). Not
	// checked when none is known, or the server matched a stop string.
	NoEndToken = "no_end_token"
	// Repetition: an answer cut at its token limit (finish_reason "length")
	// whose last max(MinLoop, LoopRepeats*p) tokens repeat with a period p
	// of at most MaxPeriod: a loop that ran to max_tokens. Tokens are the
	// output_ids, else the text's whitespace-separated words.
	Repetition = "repetition"
	// Empty: no content (blank after the reasoning) and no tool call, in an
	// answer that was not cut at its limit; a record with no "text" (token
	// counts only) is not checked.
	Empty = "empty"
)

// Kinds lists every kind, in the order the documentation gives them.
var Kinds = []string{MarkerLeak, EmptyReasoning, ReasoningWhenOff, BadToolCall, NoEndToken, Repetition, Empty}

// MaxPeriod, MinLoop and LoopRepeats shape the Repetition rule: a period
// of at most MaxPeriod tokens, repeated over the last max(MinLoop,
// LoopRepeats*period) tokens. tokstat's help states them.
const (
	MaxPeriod   = 64
	MinLoop     = 32
	LoopRepeats = 4
)

// Options is what a caller knows beyond the record.
type Options struct {
	// EndIDs are the model's end tokens (its EOS and end-of-turn ids).
	EndIDs []int
}

// Check returns the soft failures of one record (a line of generate's
// output), nil when it has none or is an error record. A conversation
// (generate --turns all) is checked turn by turn: a kind is named once
// when any turn has it.
//
// The line must be a JSON object that a validating scanner (record.Scan,
// jsonl.ScanObject) has accepted: Check reads it in one pass over its
// top-level members without validating it again (jsonl.EachMember), and
// decodes none of its token ids but the last output id.
func Check(line []byte, opt Options) []string {
	return check(answerOf(line), opt)
}

// Members collects a record's top-level members that Check reads, as a
// scan that validates the record visits them (record.Scanner.ScanVisit):
// CheckMembers then checks the record without a second pass over its line.
// Its zero value is ready; Reset it before the next record.
type Members struct{ a answer }

// Visit takes one top-level member (in the order of the line, the first of
// duplicate keys kept, as Check does).
func (m *Members) Visit(mem jsonl.Member) { m.a.visit(mem) }

// Reset empties m for the next record (keeping its buffers).
func (m *Members) Reset() { m.a = answer{decoded: m.a.decoded} }

// CheckMembers is Check on the record whose members m has seen: the line
// they view must not have changed.
func CheckMembers(m *Members, opt Options) []string { return check(m.a, opt) }

// check applies the rules to a record's members.
func check(a answer, opt Options) []string {
	if a.err.Exists() {
		return nil
	}
	if a.turns.IsArray() {
		var out []string
		for _, t := range a.turns.Array() {
			turn := answerOf(unsafe.Slice(unsafe.StringData(t.Raw), len(t.Raw)))
			for _, k := range checkAnswer(turn, a.thinking, opt) {
				if !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
		}
		return out
	}
	return checkAnswer(a, a.thinking, opt)
}

// answer is the members of a record (or of a turn) that the rules read.
type answer struct {
	err, thinking, turns                gjson.Result // the record's only
	reasoning, text, finish, calls, ids gjson.Result
	native, gen                         gjson.Result // native_finish_reason, gen
	// decoded holds the reasoning and the text as decoded (Members reuses
	// it from record to record: an answer's text is most of its bytes).
	decoded [2][]byte
}

// answerOf picks the members of obj the rules read, in one pass: the first
// of duplicate keys, as gjson's Get would.
func answerOf(obj []byte) answer {
	var a answer
	jsonl.EachMember(obj, func(m jsonl.Member) bool {
		a.visit(m)
		return true
	})
	return a
}

// visit takes one member of an answer, if the rules read it.
func (a *answer) visit(m jsonl.Member) {
	var r *gjson.Result
	buf := -1 // the decoded buffer of a text member
	switch string(record.MemberKey(m.Key)) {
	case record.FieldError:
		r = &a.err
	case record.FieldThinking:
		r = &a.thinking
	case record.FieldTurns:
		r = &a.turns
	case record.FieldReasoning:
		r, buf = &a.reasoning, 0
	case record.FieldText:
		r, buf = &a.text, 1
	case record.FieldFinishReason:
		r = &a.finish
	case record.FieldToolCalls:
		r = &a.calls
	case record.FieldOutputIDs:
		r = &a.ids
	case record.FieldNativeFinishReason:
		r = &a.native
	case record.FieldGen:
		r = &a.gen
	default:
		return
	}
	if r.Exists() {
		return
	}
	// zero-copy: the results view the line, and Check keeps none
	raw := unsafe.String(unsafe.SliceData(m.Value), len(m.Value))
	if buf < 0 || len(m.Value) < 2 || m.Value[0] != '"' || strings.IndexByte(raw, '\\') < 0 {
		*r = gjson.Parse(raw)
		return
	}
	// A text with escapes, decoded into the answer's own buffer rather
	// than a new string (gjson's): a lone surrogate reads as U+FFFD, as
	// gjson has it.
	d, _, _ := jsonl.AppendUnquoted(a.decoded[buf][:0], m.Value, func(dst []byte, _ rune) []byte {
		return utf8.AppendRune(dst, utf8.RuneError)
	})
	a.decoded[buf] = d
	*r = gjson.Result{Type: gjson.String, Raw: raw, Str: unsafe.String(unsafe.SliceData(d), len(d))}
}

// checkAnswer applies the rules to one answer: a record or a turn.
func checkAnswer(a answer, thinking gjson.Result, opt Options) []string {
	var out []string
	add := func(kind string, bad bool) {
		if bad {
			out = append(out, kind)
		}
	}
	reasoning, content := a.reasoning.String(), a.text.String()
	finish := a.finish.String()
	if !a.reasoning.Exists() {
		if i := strings.Index(content, "</think>"); i >= 0 {
			reasoning, content = content[:i], content[i+len("</think>"):]
		} else if thinking.Type == gjson.True && finish == "length" {
			reasoning, content = content, "" // cut before its reasoning ended
		}
	}
	add(MarkerLeak, hasMarker(content) || hasMarker(reasoning))
	add(EmptyReasoning, thinking.Type == gjson.True && strings.TrimSpace(reasoning) == "")
	add(ReasoningWhenOff, thinking.Type == gjson.False && strings.TrimSpace(reasoning) != "")
	add(BadToolCall, badCalls(a.calls) || badSection(content))
	add(NoEndToken, finish == "stop" && noEnd(a, opt))
	add(Repetition, finish == "length" && looping(tokens(a.ids, content)))
	add(Empty, a.text.Exists() && finish != "length" && strings.TrimSpace(content) == "" && len(a.calls.Array()) == 0)
	return out
}

func hasMarker(s string) bool {
	return strings.Contains(s, "<think>") || strings.Contains(s, "</think>")
}

// badCalls reports a tool_calls entry without a function name or with
// arguments that are not a JSON object.
func badCalls(calls gjson.Result) bool {
	bad := false
	calls.ForEach(func(_, c gjson.Result) bool {
		f := c.Get("function")
		args := f.Get("arguments")
		switch {
		case f.Get("name").String() == "":
			bad = true
		case args.Type == gjson.String:
			bad = !isObject(args.Str)
		case args.Exists():
			bad = !args.IsObject()
		}
		return !bad
	})
	return bad
}

func isObject(s string) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &v) == nil
}

// sections are the tool-call sections models write in their text.
var sections = []struct{ begin, end string }{
	{"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"},
	{"<tool_call>", "</tool_call>"},
}

// badSection reports a tool-call section in the text that is not closed,
// or (Hermes, Qwen) whose call is not a JSON object.
func badSection(text string) bool {
	for _, s := range sections {
		rest := text
		for {
			i := strings.Index(rest, s.begin)
			if i < 0 {
				break
			}
			rest = rest[i+len(s.begin):]
			j := strings.Index(rest, s.end)
			if j < 0 {
				return true
			}
			if s.begin == "<tool_call>" && !isObject(strings.TrimSpace(rest[:j])) {
				return true
			}
			rest = rest[j+len(s.end):]
		}
	}
	return false
}

// noEnd reports output ids whose last is none of the known end tokens;
// false when no end token is known or there are no ids.
func noEnd(a answer, opt Options) bool {
	last, ok := lastElement(a.ids)
	if !ok {
		return false
	}
	ends := append([]int(nil), opt.EndIDs...)
	matched := a.native.Get("matched")
	switch matched.Type {
	case gjson.Number:
		ends = append(ends, int(matched.Int()))
	case gjson.String:
		return false // a stop string: the text was trimmed, the ids need not end in a token
	}
	for _, v := range a.gen.Get("params.stop_token_ids").Array() {
		ends = append(ends, int(v.Int()))
	}
	if len(ends) == 0 {
		return false
	}
	id := int(last.Int())
	for _, e := range ends {
		if e == id {
			return false
		}
	}
	return true
}

// lastElement is the last of ids' elements (gjson's Array, whose last it
// is), false when there is none. An array whose last element is a number
// is read from its end, without decoding the thousands of ids before it.
func lastElement(ids gjson.Result) (gjson.Result, bool) {
	raw := strings.TrimRight(ids.Raw, " \t\r\n")
	if ids.IsArray() && strings.HasSuffix(raw, "]") {
		body := strings.TrimRight(raw[:len(raw)-1], " \t\r\n")
		i := strings.LastIndexAny(body, ",[")
		if el := strings.TrimSpace(body[i+1:]); el != "" && isNumber(el) {
			return gjson.Parse(el), true
		}
	}
	list := ids.Array()
	if len(list) == 0 {
		return gjson.Result{}, false
	}
	return list[len(list)-1], true
}

// isNumber reports whether s holds only the bytes of a JSON number.
func isNumber(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
		default:
			return false
		}
	}
	return true
}

// tokens are the answer's output ids, else its words, as strings.
func tokens(ids gjson.Result, text string) []string {
	if ids.IsArray() {
		var out []string
		ids.ForEach(func(_, v gjson.Result) bool {
			out = append(out, v.Raw)
			return true
		})
		return out
	}
	return strings.Fields(text)
}

// looping reports whether the last max(MinLoop, LoopRepeats*p) tokens
// repeat with a period p <= MaxPeriod.
func looping(toks []string) bool {
	n := len(toks)
	for p := 1; p <= MaxPeriod; p++ {
		w := max(MinLoop, LoopRepeats*p)
		if w > n {
			break
		}
		periodic := true
		for i := n - w + p; i < n; i++ {
			if toks[i] != toks[i-p] {
				periodic = false
				break
			}
		}
		if periodic {
			return true
		}
	}
	return false
}
