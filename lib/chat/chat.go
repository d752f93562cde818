// Package chat turns a conversation into what a model sees: its chat template
// rendered as transformers' apply_chat_template does, then its tokenizer's
// ids. tokenize-prompts, generate and to-train share it, so that a prompt, a
// re-tokenized answer and a training sample agree token for token.
package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/synthpipe/synthpipe/lib/chattemplate"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/tokenizer"
)

// Model is a loaded tokenizer with its chat template and template arguments.
// It is safe for concurrent use.
type Model struct {
	Tok      *tokenizer.Tokenizer
	Template *Template // nil with --template none
	Extra    map[string]json.RawMessage
	// Now is the clock behind the template's strftime_now; nil means the
	// real one. A sample re-rendered later must see the day its prompt was
	// rendered on, or templates that print the date change the prompt.
	Now      func() time.Time
	bos, eos string
}

// TemplateNone and TemplateAuto are the special values of --template.
const (
	TemplateNone = "none"
	TemplateAuto = "auto"
)

// Load loads the tokenizer at tokPath (a model folder, a file, or builtin:NAME)
// and the chat template named by template: "auto" (the folder's own), "none",
// or a file.
// args are --template-arg values, "key=value" with value read as JSON when it
// parses (true, 3, "x", {...}) and as a string otherwise.
func Load(tokPath, template string, args []string) (*Model, error) {
	tok, err := LoadTokenizer(tokPath)
	if err != nil {
		return nil, err
	}
	extra, err := ParseTemplateArgs(args)
	if err != nil {
		return nil, err
	}
	m := &Model{Tok: tok, Extra: extra, bos: tok.Config().BOSToken, eos: tok.Config().EOSToken}
	if m.Template, err = LoadTemplate(template, tokPath, tok.Config().ChatTemplate); err != nil {
		return nil, err
	}
	return m, nil
}

// ParseTemplateArgs reads --template-arg key=value pairs.
func ParseTemplateArgs(args []string) (map[string]json.RawMessage, error) {
	if len(args) == 0 {
		return nil, nil
	}
	extra := make(map[string]json.RawMessage, len(args))
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, exitcode.Usagef("--template-arg %q: want key=value, e.g. enable_thinking=false", a)
		}
		if json.Valid([]byte(v)) {
			extra[k] = json.RawMessage(v)
		} else {
			quoted, _ := json.Marshal(v)
			extra[k] = quoted
		}
	}
	return extra, nil
}

// ParseDate reads a --date value, YYYY-MM-DD, as the clock templates see
// through strftime_now: always that day. An empty value gives nil, the real
// clock. Fixing the day keeps a prompt rendered on one day identical when it
// is rendered again on another (tokenize-prompts, then to-train).
func ParseDate(date string) (func() time.Time, error) {
	if date == "" {
		return nil, nil
	}
	day, err := time.ParseInLocation(time.DateOnly, date, time.Local)
	if err != nil {
		return nil, fmt.Errorf("%q: expected YYYY-MM-DD", date)
	}
	return func() time.Time { return day }, nil
}

// Render renders a conversation (a JSON array of messages) and its tools.
func (m *Model) Render(messages, tools json.RawMessage, addGenerationPrompt bool) (string, error) {
	return m.render(chattemplate.Options{Messages: messages, Tools: tools, AddGenerationPrompt: addGenerationPrompt})
}

// options are o with m's template variables.
func (m *Model) options(o chattemplate.Options) chattemplate.Options {
	o.BOSToken, o.EOSToken, o.Extra, o.Now = m.bos, m.eos, m.Extra, m.Now
	return o
}

// render renders o's messages, tools and generation prompt with m's
// template and variables.
func (m *Model) render(o chattemplate.Options) (string, error) {
	if m.Template == nil {
		return "", errNoTemplate
	}
	return m.Template.Render(m.options(o))
}

var errNoTemplate = fmt.Errorf("no chat template (--template none)")

// WithArgs returns a copy of m whose template sees args as well as its
// own variables (args win): a record's thinking setting, for one render.
// m is not changed, since workers share it.
func (m *Model) WithArgs(args map[string]json.RawMessage) *Model {
	if len(args) == 0 {
		return m
	}
	c := *m
	c.Extra = make(map[string]json.RawMessage, len(m.Extra)+len(args))
	for k, v := range m.Extra {
		c.Extra[k] = v
	}
	for k, v := range args {
		c.Extra[k] = v
	}
	return &c
}

// Encode tokenizes rendered template output. Special-token strings are
// recognised: the template writes them on purpose, and apply_chat_template
// encodes its output the same way.
func (m *Model) Encode(rendered string) []int {
	return m.Tok.Encode(rendered, true)
}

// TurnPrompts renders and encodes the prompts of one conversation, turn
// after turn. A conversation's next prompt is mostly its last one: the last
// prompt, the model's answer and the next message, when the template renders
// the earlier turns alike (templates that drop earlier reasoning part from
// the last prompt sooner). Only what follows the part they share is encoded
// again (tokenizer.Extend), so that a conversation of n turns costs about
// one encoding of its text, not n; the ids are exactly those of encoding
// each prompt whole. Each prompt is rendered whole (templates rewrite
// earlier turns), but the messages it shares with the last prompt are not
// decoded again, and a template loop's iteration over such a message writes
// the text it wrote last time when nothing else it reads has changed
// (chattemplate.MessageCache), in place over the last prompt's text where
// it lies there already (RenderOver), so that rendering too costs about
// the new messages, not the whole conversation. The zero value is ready
// for a conversation's first turn.
type TurnPrompts struct {
	last *tokenizer.Encoding
	msgs chattemplate.MessageCache
}

// Next renders the conversation so far, its messages one by one, with the
// generation prompt and returns its ids. The messages the last call was
// given are found again message by message, at once when a message is the
// same slice (a conversation grows by appending): their bytes must not have
// changed since. m may differ from turn to turn in its template arguments
// only, never in its tokenizer. The ids are the caller's until the next
// call, which writes the next prompt's ids over them (tokenizer.ExtendOver):
// a turn's prompt is sent, and done with, before the next is asked for.
func (p *TurnPrompts) Next(m *Model, messages []json.RawMessage, tools json.RawMessage) ([]int, error) {
	if messages == nil {
		messages = []json.RawMessage{} // no messages, not none
	}
	if m.Template == nil {
		return nil, errNoTemplate
	}
	o := m.options(chattemplate.Options{MessageList: messages, Tools: tools, AddGenerationPrompt: true, Cache: &p.msgs})
	// The text is written over the last one, in the cache's array, which
	// last.Text reads: the tokenizer is told how much of it is the last
	// text's rather than compare the two, and keeps no part of it but the
	// Encoding's Text (its caches copy the pieces they keep).
	text, err := m.Template.RenderOver(o)
	if err != nil {
		return nil, err
	}
	p.last = m.Tok.ExtendOverShared(p.last, text, p.msgs.Shared)
	return p.last.IDs, nil
}

// AssistantTurn is the JSON of the assistant message that holds an answer:
// its text as content, its reasoning under both names chat templates read it
// by (reasoning_content: Qwen3, DeepSeek, Kimi; thinking: gpt-oss), and its
// tool calls (a JSON array, or nil for none).
func AssistantTurn(text, reasoning string, toolCalls json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"role":"assistant","content":`)
	writeJSONString(&b, text)
	if reasoning != "" {
		b.WriteString(`,"reasoning_content":`)
		writeJSONString(&b, reasoning)
		b.WriteString(`,"thinking":`)
		writeJSONString(&b, reasoning)
	}
	if len(toolCalls) > 0 {
		b.WriteString(`,"tool_calls":`)
		b.Write(toolCalls)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func writeJSONString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s) // a string cannot fail
	b.Write(q)
}

// AppendMessage returns the JSON array messages with msg appended, without
// decoding either: numbers and key order stay as they were.
func AppendMessage(messages, msg json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(messages)
	out := make([]byte, 0, len(trimmed)+len(msg)+1)
	out = append(out, trimmed[:len(trimmed)-1]...)
	if len(bytes.TrimSpace(trimmed[1:len(trimmed)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, msg...)
	return append(out, ']')
}

// SetToolDeclaration applies --tool-declaration (see Template).
func (m *Model) SetToolDeclaration(mode string) error {
	return m.Template.SetToolDeclaration(mode)
}
