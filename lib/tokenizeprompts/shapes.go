package tokenizeprompts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// Shape names: what a record was read as.
const (
	shapeOpenAI    = "messages"
	shapeShareGPT  = "sharegpt"
	shapeSpecForge = "conversations"
	shapePrompt    = "prompt"
	shapeAlpaca    = "alpaca"
	shapeText      = "text"
	shapePath      = "--messages-path"
)

// Roles a message may have. developer is gpt-oss's second system role.
const (
	roleSystem    = "system"
	roleDeveloper = "developer"
	roleUser      = "user"
	roleAssistant = "assistant"
	roleTool      = "tool"
)

// message is one turn in the OpenAI form that tokenize-prompts writes and
// hands to the chat template: role and content, then every other member of
// the source turn (tool_calls, tool_call_id, name, reasoning_content, and
// what a template may read, such as gpt-oss's thinking) as the source wrote
// it. Raw JSON is kept because templates tell a missing content from null
// from "", and a string of arguments from an object.
type message struct {
	Role    string
	Content json.RawMessage // a JSON string or null; nil when absent
	Others  []jsonl.Member  // in source order
}

// MarshalJSON writes role, content, then the other members.
func (m message) MarshalJSON() ([]byte, error) { return m.appendJSON(nil), nil }

// appendJSON is MarshalJSON without encoding/json's reflection and
// re-validation: the parts are valid JSON already (role is one of the known
// names), and this runs for every record.
func (m message) appendJSON(b []byte) []byte {
	b = append(b, `{"role":"`...)
	b = append(b, m.Role...)
	b = append(b, '"')
	if m.Content != nil {
		b = append(b, `,"content":`...)
		b = append(b, m.Content...)
	}
	for _, o := range m.Others {
		b = append(b, ',', '"')
		b = append(b, o.Key...)
		b = append(b, '"', ':')
		b = appendCompact(b, o.Value)
	}
	return append(b, '}')
}

// messagesJSON writes the messages as a JSON array.
func messagesJSON(msgs []message) []byte {
	b := []byte{'['}
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = m.appendJSON(b)
	}
	return append(b, ']')
}

// appendCompact appends a raw JSON value without the spaces a source may
// have put between its tokens.
func appendCompact(b, raw []byte) []byte {
	if !bytes.ContainsAny(raw, " \t\r\n") {
		return append(b, raw...)
	}
	buf := bytes.NewBuffer(b)
	if json.Compact(buf, raw) != nil {
		return append(b, raw...) // not reached: the scanner validated raw
	}
	return buf.Bytes()
}

// prompt is what a source record asks the model for, whatever its shape:
// either a conversation (messages and tools) or an already rendered text.
type prompt struct {
	shape    string
	messages []message
	tools    json.RawMessage // a JSON array, or nil
	text     string          // the rendered prompt of a text record
	// consumed lists the top-level fields the shape was read from; they are
	// not copied to the output, which carries messages instead.
	consumed []string
	// turns is how many assistant turns a --turns all conversation asks for.
	turns int
	// messagesRaw is messagesJSON(messages) once asked for: the template,
	// the output and a derived id all need it.
	messagesRaw []byte
}

// messagesJSON returns the messages as a JSON array, written once. The
// messages must not change after the first call.
func (p *prompt) messagesJSON() []byte {
	if p.messagesRaw == nil {
		p.messagesRaw = messagesJSON(p.messages)
	}
	return p.messagesRaw
}

// isText reports whether the record was an already rendered text.
func (p *prompt) isText() bool { return p.shape == shapeText }

// fields gives the top-level members of one record by name.
type fields struct {
	line    []byte
	members []jsonl.Member
}

// parseFields validates line as one JSON object and indexes its members,
// appending them to members (which may be a reused buffer).
func parseFields(line []byte, members []jsonl.Member) (*fields, error) {
	return parseFieldsInto(&fields{members: members}, line)
}

// parseFieldsInto is parseFields into f, whose members' buffer is reused.
func parseFieldsInto(f *fields, line []byte) (*fields, error) {
	f.line, f.members = line, f.members[:0]
	err := jsonl.ScanObject(line, f.add)
	return f, err
}

func (f *fields) add(m jsonl.Member) { f.members = append(f.members, m) }

// get returns the raw value of the member named key, or nil. Keys are
// compared as written: one spelled with escapes ("\u0069d") is not found.
func (f *fields) get(key string) []byte {
	for _, m := range f.members {
		if string(m.Key) == key {
			return m.Value
		}
	}
	return nil
}

// path returns the raw value at a gjson path, or nil.
func (f *fields) path(p string) []byte {
	if isTopLevelKey(p) {
		return f.get(p)
	}
	if r := gjson.GetBytes(f.line, p); r.Exists() {
		return []byte(r.Raw)
	}
	return nil
}

// isTopLevelKey reports whether a gjson path names a top-level member
// directly, so that the member itself can be looked up (and consumed).
func isTopLevelKey(p string) bool {
	return p != "" && !strings.ContainsAny(p, `.*?|#@\!=<>%[]{}()`)
}

// shapeOptions are the flags that change how a record is read.
type shapeOptions struct {
	messagesPath      string // --messages-path, or ""
	keepLastAssistant bool
	turnsAll          bool   // --turns all: the whole conversation, for generate --turns all
	system            string // --system, or ""
}

// errNoShape explains a record in none of the known shapes.
var errNoShape = errors.New(`no prompt found: expected "messages", "conversations", "prompt", "instruction" or "text" (name another field with --messages-path)`)

// readPrompt finds the record's shape and normalizes it. The first shape
// present wins, in this order: --messages-path, messages, conversations,
// prompt, instruction, text; so a file that mixes shapes needs no flag.
func readPrompt(f *fields, opt shapeOptions) (*prompt, error) {
	return readPromptInto(f, opt, nil)
}

// promptScratch is a worker's memory for the prompt of a rendered text
// record, the shape whose reading is most of its cost: the prompt and its
// decoded text are reused from one record to the next.
type promptScratch struct {
	p    prompt
	text []byte
}

// consumedText is what a text record consumes; shared, never appended to.
var consumedText = []string{record.FieldText}

// textPrompt reads a text record's prompt. With sc, the prompt and its text
// are sc's, valid until its next use: the text is only tokenized and written
// before then.
func (sc *promptScratch) textPrompt(raw []byte) (*prompt, error) {
	if sc == nil {
		text, err := stringField(record.FieldText, raw)
		return &prompt{shape: shapeText, text: text, consumed: consumedText}, err
	}
	sc.p = prompt{shape: shapeText, consumed: consumedText}
	var err error
	sc.p.text, sc.text, err = decodeString(record.FieldText, raw, sc.text[:0])
	return &sc.p, err
}

// decodeString is stringField without a copy: the text is decoded into buf
// (returned, to be reused) and the string refers to it. It decodes as
// stringField does: lone surrogate escapes and invalid UTF-8 become U+FFFD.
func decodeString(name string, raw, buf []byte) (string, []byte, error) {
	if len(raw) > 0 && raw[0] == '"' {
		b, _, err := jsonl.AppendUnquoted(buf, raw, appendReplacement)
		if err == nil && utf8.Valid(b) {
			return unsafe.String(unsafe.SliceData(b), len(b)), b, nil
		}
	}
	s, err := stringField(name, raw) // an error, or invalid UTF-8 to replace
	return s, buf, err
}

// appendReplacement writes a lone surrogate escape as encoding/json does.
func appendReplacement(b []byte, _ rune) []byte { return utf8.AppendRune(b, utf8.RuneError) }

// readPromptInto is readPrompt with a worker's scratch memory (nil: none).
func readPromptInto(f *fields, opt shapeOptions, sc *promptScratch) (*prompt, error) {
	p, err := detect(f, opt.messagesPath, sc)
	if err != nil {
		return nil, err
	}
	if p.isText() {
		return p, nil
	}
	if p.tools, err = readTools(f.get(record.FieldTools)); err != nil {
		return nil, err
	}
	p.consumed = append(p.consumed, record.FieldTools)
	if p.messages, err = cutAtLastRequest(p.messages, opt.keepLastAssistant || opt.turnsAll); err != nil {
		return nil, err
	}
	if opt.system != "" && !hasSystem(p.messages) {
		p.messages = append([]message{{Role: roleSystem, Content: jsonString(opt.system)}}, p.messages...)
	}
	return p, nil
}

func detect(f *fields, messagesPath string, sc *promptScratch) (*prompt, error) {
	if messagesPath != "" {
		if raw := f.path(messagesPath); raw != nil {
			p := &prompt{shape: shapePath}
			if isTopLevelKey(messagesPath) {
				p.consumed = []string{messagesPath}
			}
			var err error
			p.messages, err = readTurns(messagesPath, raw)
			return p, err
		}
	}
	if raw := f.get(record.FieldMessages); raw != nil {
		msgs, err := readTurns(record.FieldMessages, raw)
		return &prompt{shape: shapeOpenAI, messages: msgs, consumed: []string{record.FieldMessages}}, err
	}
	if raw := f.get(record.FieldConversations); raw != nil {
		return readConversations(f, raw)
	}
	if raw := f.get(record.FieldPrompt); raw != nil {
		return readPromptShape(f, raw)
	}
	if raw := f.get(record.FieldInstruction); raw != nil {
		return readAlpaca(f, raw)
	}
	if raw := f.get(record.FieldText); raw != nil {
		return sc.textPrompt(raw)
	}
	if messagesPath != "" {
		return nil, fmt.Errorf("%w; nothing at --messages-path %q either", errNoShape, messagesPath)
	}
	return nil, errNoShape
}

// Members of a turn in its two spellings: OpenAI and SpecForge role and
// content, ShareGPT from and value.
const (
	memberRole    = "role"
	memberContent = "content"
	memberFrom    = "from"
	memberValue   = "value"
)

// readTurns reads an array of turns in either spelling, each turn on its own
// (a list may mix them, as converted datasets sometimes do).
// raw is a value of a record the reader validated, so its elements are
// found without decoding it again.
func readTurns(field string, raw []byte) ([]message, error) {
	turns, ok := arrayElements(raw)
	if !ok {
		return nil, fmt.Errorf("%q is %s, not an array of messages", field, jsonl.Kind(raw))
	}
	if len(turns) == 0 {
		return nil, fmt.Errorf("%q is an empty array", field)
	}
	msgs := make([]message, 0, len(turns))
	for i, t := range turns {
		m, err := readTurn(field+"["+strconv.Itoa(i)+"]", t)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// arrayElements returns the elements of raw, a valid JSON array, as raw
// values without the white space around them; ok is false when raw is not
// an array. Being valid, raw needs no checks: strings are skipped over
// their escapes, and a comma separates elements only outside any nesting.
func arrayElements(raw []byte) (elems [][]byte, ok bool) {
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		return nil, false
	}
	depth, start := 0, 1
	for i := 1; i < len(raw)-1; i++ {
		switch raw[i] {
		case '"':
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 0 {
				elems = append(elems, bytes.TrimSpace(raw[start:i]))
				start = i + 1
			}
		}
	}
	if last := bytes.TrimSpace(raw[start : len(raw)-1]); len(last) > 0 {
		elems = append(elems, last)
	}
	return elems, depth == 0
}

func readTurn(where string, raw []byte) (message, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return message{}, fmt.Errorf("%s is %s, not a message object", where, jsonl.Kind(raw))
	}
	var role, content, from, value []byte
	var others []jsonl.Member
	err := jsonl.ScanObject(raw, func(m jsonl.Member) {
		switch string(m.Key) {
		case memberRole:
			role = m.Value
		case memberContent:
			content = m.Value
		case memberFrom:
			from = m.Value
		case memberValue:
			value = m.Value
		default:
			others = append(others, m)
		}
	})
	switch {
	case err != nil:
		return message{}, fmt.Errorf("%s: %v", where, err)
	case role != nil:
		return openAITurn(where, role, content, others)
	case from != nil:
		return shareGPTTurn(where, from, value, others)
	}
	return message{}, fmt.Errorf(`%s has neither "role" nor "from"`, where)
}

func openAITurn(where string, role, content []byte, others []jsonl.Member) (message, error) {
	name, err := stringField(where+"."+memberRole, role)
	if err != nil {
		return message{}, err
	}
	switch name {
	case roleSystem, roleDeveloper, roleUser, roleAssistant, roleTool:
	default:
		return message{}, fmt.Errorf("%s: unknown role %q (expected system, developer, user, assistant or tool)", where, name)
	}
	m := message{Role: name, Others: others}
	m.Content, err = readContent(where, content)
	return m, err
}

// shareGPTRoles maps ShareGPT's "from" to OpenAI roles. function_call and
// observation are the tool-call turns of the ShareGPT variant that
// LLaMA-Factory reads.
var shareGPTRoles = map[string]string{
	"system":        roleSystem,
	"human":         roleUser,
	"user":          roleUser,
	"gpt":           roleAssistant,
	"assistant":     roleAssistant,
	"chatgpt":       roleAssistant,
	"tool":          roleTool,
	"observation":   roleTool,
	"function_call": roleAssistant,
}

func shareGPTTurn(where string, from, value []byte, others []jsonl.Member) (message, error) {
	name, err := stringField(where+"."+memberFrom, from)
	if err != nil {
		return message{}, err
	}
	role, ok := shareGPTRoles[name]
	if !ok {
		return message{}, fmt.Errorf("%s: unknown \"from\" %q (expected human, gpt, system, tool, function_call or observation)", where, name)
	}
	if name == "function_call" {
		calls, err := shareGPTToolCalls(where, value)
		others = append([]jsonl.Member{{Key: []byte("tool_calls"), Value: calls}}, others...)
		return message{Role: role, Content: jsonString(""), Others: others}, err
	}
	content, err := readContent(where, value)
	return message{Role: role, Content: content, Others: others}, err
}

// shareGPTToolCalls turns a function_call turn's value, a JSON string (or
// object, or list of them) of {"name","arguments"}, into OpenAI tool_calls.
func shareGPTToolCalls(where string, value json.RawMessage) (json.RawMessage, error) {
	raw := []byte(value)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		raw = []byte(s)
	}
	type call struct {
		Name      json.RawMessage `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	var calls []call
	if err := json.Unmarshal(raw, &calls); err != nil {
		var one call
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, fmt.Errorf(`%s: a function_call value must be {"name","arguments"} as JSON`, where)
		}
		calls = []call{one}
	}
	type function struct {
		Name      json.RawMessage `json:"name"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
	}
	type toolCall struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	out := make([]toolCall, len(calls))
	for i, c := range calls {
		if len(c.Name) == 0 || c.Name[0] != '"' {
			return nil, fmt.Errorf(`%s: a function_call has no "name"`, where)
		}
		out[i] = toolCall{Type: "function", Function: function(c)}
	}
	return marshal(out)
}

// readContent normalizes a message's content: a string or null is kept as
// it is; a list of parts becomes the string of its text parts joined with
// "\n" (as vLLM joins them), since templates and token counts need text.
func readContent(where string, raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || raw[0] == '"' || bytes.Equal(raw, nullJSON) {
		return raw, nil
	}
	if raw[0] != '[' {
		return nil, fmt.Errorf("%s: content is %s, not a string or a list of parts", where, jsonl.Kind(raw))
	}
	var parts []struct {
		Type *string `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, fmt.Errorf("%s: content is not a list of {type, text} parts: %v", where, err)
	}
	texts := make([]string, len(parts))
	for i, part := range parts {
		switch {
		case part.Type == nil:
			return nil, fmt.Errorf("%s.content[%d] has no \"type\"", where, i)
		case *part.Type != "text":
			return nil, fmt.Errorf("%s.content[%d]: parts of type %q cannot be tokenized (only \"text\")", where, i, *part.Type)
		case part.Text == nil:
			return nil, fmt.Errorf("%s.content[%d]: a text part without \"text\"", where, i)
		}
		texts[i] = *part.Text
	}
	return jsonString(strings.Join(texts, "\n")), nil
}

// readConversations reads the "conversations" shapes: ShareGPT (from/value,
// with an optional top-level "system") and SpecForge (role/content).
func readConversations(f *fields, raw []byte) (*prompt, error) {
	msgs, err := readTurns(record.FieldConversations, raw)
	if err != nil {
		return nil, err
	}
	p := &prompt{shape: shapeSpecForge, messages: msgs, consumed: []string{record.FieldConversations}}
	if gjson.GetBytes(raw, "0.from").Exists() {
		p.shape = shapeShareGPT
		p.consumed = append(p.consumed, record.FieldSystem)
		if err := prependSystem(p, f.get(record.FieldSystem)); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// readPromptShape reads {"prompt": TEXT, "system": TEXT}.
func readPromptShape(f *fields, raw []byte) (*prompt, error) {
	text, err := stringField(record.FieldPrompt, raw)
	if err != nil {
		return nil, err
	}
	p := &prompt{shape: shapePrompt, consumed: []string{record.FieldPrompt, record.FieldSystem},
		messages: []message{{Role: roleUser, Content: jsonString(text)}}}
	return p, prependSystem(p, f.get(record.FieldSystem))
}

// readAlpaca reads Alpaca records: the request is the instruction, followed
// by "\n\n" and the input when the input is not empty; "output" is the
// answer (a trailing assistant turn); LLaMA-Factory's "system" and
// "history" ([[request, answer], ...]) come before.
func readAlpaca(f *fields, raw []byte) (*prompt, error) {
	instruction, err := stringField(record.FieldInstruction, raw)
	if err != nil {
		return nil, err
	}
	p := &prompt{shape: shapeAlpaca, consumed: []string{record.FieldInstruction, record.FieldInput, record.FieldOutput, record.FieldSystem, record.FieldHistory}}
	if h := f.get(record.FieldHistory); h != nil && !bytes.Equal(h, nullJSON) {
		var pairs [][]string
		if err := json.Unmarshal(h, &pairs); err != nil {
			return nil, fmt.Errorf(`"history" must be a list of [request, answer] string pairs`)
		}
		for _, pair := range pairs {
			if len(pair) != 2 {
				return nil, fmt.Errorf(`"history" must be a list of [request, answer] string pairs`)
			}
			p.messages = append(p.messages,
				message{Role: roleUser, Content: jsonString(pair[0])},
				message{Role: roleAssistant, Content: jsonString(pair[1])})
		}
	}
	request := instruction
	if in := f.get(record.FieldInput); in != nil && !bytes.Equal(in, nullJSON) {
		input, err := stringField(record.FieldInput, in)
		if err != nil {
			return nil, err
		}
		if input != "" {
			request += "\n\n" + input
		}
	}
	p.messages = append(p.messages, message{Role: roleUser, Content: jsonString(request)})
	if out := f.get(record.FieldOutput); out != nil && !bytes.Equal(out, nullJSON) {
		answer, err := stringField(record.FieldOutput, out)
		if err != nil {
			return nil, err
		}
		p.messages = append(p.messages, message{Role: roleAssistant, Content: jsonString(answer)})
	}
	return p, prependSystem(p, f.get(record.FieldSystem))
}

// prependSystem puts a top-level "system" string in front of the messages.
func prependSystem(p *prompt, raw []byte) error {
	if raw == nil || bytes.Equal(raw, nullJSON) {
		return nil
	}
	text, err := stringField(record.FieldSystem, raw)
	if err != nil || text == "" {
		return err
	}
	p.messages = append([]message{{Role: roleSystem, Content: jsonString(text)}}, p.messages...)
	return nil
}

// readTools normalizes "tools": an OpenAI array is kept; a string holding
// JSON (as LLaMA-Factory stores it) is decoded; bare function schemas
// ({"name", "parameters"}) are wrapped as {"type":"function","function":...}.
// An empty list is the same as none.
func readTools(raw []byte) (json.RawMessage, error) {
	if raw == nil || bytes.Equal(raw, nullJSON) {
		return nil, nil
	}
	if raw[0] == '"' {
		s, _ := stringField(record.FieldTools, raw)
		if strings.TrimSpace(s) == "" {
			return nil, nil
		}
		raw = []byte(s)
	}
	var tools []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &tools) != nil {
		return nil, fmt.Errorf(`"tools" must be an array of tool objects (or a string holding one)`)
	}
	if len(tools) == 0 {
		return nil, nil
	}
	for i, t := range tools {
		if len(t) == 0 || t[0] != '{' {
			return nil, fmt.Errorf("tools[%d] is %s, not a tool object", i, jsonl.Kind(t))
		}
		if !gjson.GetBytes(t, "type").Exists() {
			// Built by hand to keep the schema's key order, which templates
			// show when they print the tools as JSON.
			tools[i] = slices.Concat([]byte(`{"type":"function","function":`), t, []byte("}"))
		}
	}
	return marshal(tools)
}

// cutAtLastRequest drops what follows the last user or tool turn: the
// answer a generator is to write again. keepLast keeps the conversation whole.
func cutAtLastRequest(msgs []message, keepLast bool) ([]message, error) {
	last := -1
	for i, m := range msgs {
		if m.Role == roleUser || m.Role == roleTool {
			last = i
		}
	}
	if last < 0 {
		return nil, errors.New("the conversation has no user or tool turn to answer")
	}
	if keepLast {
		return msgs, nil
	}
	return msgs[:last+1], nil
}

func hasSystem(msgs []message) bool {
	for _, m := range msgs {
		if m.Role == roleSystem {
			return true
		}
	}
	return false
}

var nullJSON = []byte("null")

func stringField(name string, raw []byte) (string, error) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", fmt.Errorf("%q is %s, not a string", name, jsonl.Kind(raw))
	}
	// Most strings (roles, names) hold no escape: their text is between
	// the quotes, and decoding them would cost more than the rest of the
	// record's reading. Invalid UTF-8 goes the long way, which replaces it.
	if n := len(raw); n >= 2 && raw[n-1] == '"' {
		if inner := raw[1 : n-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
			return string(inner), nil
		}
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// jsonString encodes s as a JSON string, leaving <, > and & as they are:
// special-token strings stay readable in the output.
func jsonString(s string) json.RawMessage {
	b, _ := marshal(s)
	return b
}

// marshal encodes v without HTML escaping and without the final newline.
func marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
