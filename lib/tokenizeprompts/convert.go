package tokenizeprompts

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/chattemplate"
	"github.com/synthpipe/synthpipe/lib/conversation"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
	"github.com/synthpipe/synthpipe/lib/thinking"
	"github.com/synthpipe/synthpipe/lib/tokenizer"
)

// converter turns one source record into one output record. It is shared
// by the workers and never changed after parse, so it needs no lock (the
// tokenizer and the template are safe for concurrent use).
type converter struct {
	tok          *tokenizer.Tokenizer
	template     *chat.Template       // nil: --template none
	render       chattemplate.Options // the settings every record shares
	shape        shapeOptions
	idPath       string
	id           record.IDPath // finds idPath's value
	idPrefix     string
	parseSpecial bool // for rendered text records; templates always parse
	maxTokens    int  // 0: no limit
	truncate     string
	withText     bool   // --with-text: write the rendered prompt as prompt_text
	dataset      string // --dataset: written as dataset on every record, "" for none
	thinking     thinking.Mode
}

// converted is the fate of one record, for the writer and the summary. Its
// output line and id are spans of the output buffer of its batch, which the
// worker appends to: a record costs no allocation of its own.
type converted struct {
	at        jsonl.Position
	line      span   // the output line, newline excluded; empty when dropped or invalid
	idJSON    span   // the id as the output writes it (a JSON string)
	id        string // the id, when it is not just idJSON decoded (a number, a derived id)
	tokens    int    // prompt tokens written (after --truncate)
	fullCount int    // prompt tokens before --truncate
	tooLong   bool
	thinking  *thinking.Choice // the setting it was rendered with, nil for none
	err       error            // the record is invalid
}

// span is a stretch of a buffer, by offsets: the buffer may still grow
// (and move) after the span is taken.
type span struct{ start, end int }

func (s span) of(buf []byte) []byte { return buf[s.start:s.end] }

// recordID is the record's id; out is its batch's output buffer.
func (r *converted) recordID(out []byte) string {
	if r.id != "" {
		return r.id
	}
	return record.DecodeID(r.idJSON.of(out))
}

// errEmptyPrompt refuses a prompt that tokenizes to nothing ({"text": ""}):
// there is nothing to answer, and a server would refuse it.
var errEmptyPrompt = errors.New("the prompt is empty (no tokens): there is nothing to answer")

var errConversationPlain = errors.New(`--template none tokenizes rendered "text" records; this record is a conversation (use --template auto or FILE)`)

// errTextTurns refuses a rendered text under --turns all: it holds no turns
// to regenerate one by one.
var errTextTurns = errors.New(`--turns all regenerates conversations turn by turn; this record is an already rendered "text" with no turns to follow (give its "messages", or use --turns last)`)

// convertScratch is working memory that a worker reuses from one record to
// the next, so that the per-record garbage (and with it the collector's
// share of the CPU, which grows with the workers) stays small.
type convertScratch struct {
	ids    []int  // the token ids of the record being converted
	fields fields // its top-level members
	prompt promptScratch
}

// convert converts one record, line, appending its output line (or, for a
// record too long, its id) to out.
func (cv *converter) convert(line []byte, sc *convertScratch, out []byte) (converted, []byte) {
	var res converted
	f, err := parseFieldsInto(&sc.fields, line)
	if err != nil {
		res.err = err
		return res, out
	}
	p, err := readPromptInto(f, cv.shape, &sc.prompt)
	if err != nil {
		res.err = err
		return res, out
	}
	var idJSON []byte
	if res.id, idJSON, err = cv.recordID(f, p); err != nil {
		res.err = err
		return res, out
	}
	var choice *thinking.Choice
	if cv.thinking.IsSet() && !p.isText() {
		if res.id == "" {
			res.id = record.DecodeID(idJSON)
		}
		choice = cv.choice(res.id, p)
	}
	var ids []int
	var msgs []byte
	var text string
	switch {
	case !p.isText() && cv.template == nil:
		err = errConversationPlain
	case p.isText() && cv.shape.turnsAll:
		err = errTextTurns
	case p.isText():
		text = p.text
		ids = cv.tok.AppendEncode(sc.ids[:0], p.text, cv.parseSpecial)
	default:
		msgs, text, ids, err = cv.renderConversation(p, choice, sc.ids[:0])
	}
	sc.ids = ids
	if err != nil {
		res.err = err
		return res, out
	}
	if len(ids) == 0 {
		res.err = errEmptyPrompt
		return res, out
	}
	res.fullCount = len(ids)
	if cv.maxTokens > 0 && len(ids) > cv.maxTokens {
		switch cv.truncate {
		case truncateLeft:
			ids = ids[len(ids)-cv.maxTokens:]
		case truncateRight:
			ids = ids[:cv.maxTokens]
		default:
			res.tooLong = true
			res.idJSON.start = len(out)
			out = append(out, idJSON...)
			res.idJSON.end = len(out)
			return res, out
		}
	}
	res.tokens = len(ids)
	if !cv.withText {
		text = ""
	}
	res.line.start = len(out)
	res.idJSON.start = len(out) + len(idMember)
	res.idJSON.end = res.idJSON.start + len(idJSON)
	out = cv.appendOutputLine(out, f, p, idJSON, msgs, text, ids, choice)
	res.line.end = len(out)
	res.thinking = choice
	return res, out
}

// choice is the thinking setting the record is rendered with: none without
// --thinking, and none for a prompt already rendered ("text"), which no
// template variable reaches.
func (cv *converter) choice(id string, p *prompt) *thinking.Choice {
	if !cv.thinking.IsSet() || p.isText() {
		return nil
	}
	c := cv.thinking.Choose(id)
	return &c
}

// renderConversation renders the messages with the template and encodes the
// text, appending the ids to dst. Special tokens are always recognised here:
// the template writes them.
func (cv *converter) renderConversation(p *prompt, choice *thinking.Choice, dst []int) (msgs []byte, text string, ids []int, err error) {
	msgs = p.messagesJSON()
	opt := cv.render
	if choice != nil {
		opt.Extra = choice.WithTemplateArgs(opt.Extra)
	}
	opt.Messages = msgs
	opt.Tools = p.tools
	// A kept final answer is rendered as a finished turn, not followed by
	// the header of another one.
	opt.AddGenerationPrompt = p.messages[len(p.messages)-1].Role != roleAssistant
	if cv.shape.turnsAll {
		// The whole conversation is kept; the prompt is its first turn's.
		src, err := conversation.Parse(msgs, p.tools)
		if err != nil {
			return nil, "", nil, err
		}
		p.turns = src.Turns()
		opt.Messages, opt.AddGenerationPrompt = src.Walk(conversation.Options{}).Messages(), true
	}
	text, err = cv.template.Render(opt)
	if err != nil {
		return nil, "", nil, fmt.Errorf("chat template: %w", err)
	}
	return msgs, text, cv.tok.AppendEncode(dst, text, true), nil
}

// recordID is the record's id, and how the output writes it: a string id
// exactly as the source spelled it (so that no two ids merge on the way), a
// number or a derived id as a new JSON string. A string id is returned as
// "": it is idJSON decoded, which only the few records that need it (the
// longest, --thinking) pay for.
func (cv *converter) recordID(f *fields, p *prompt) (id string, idJSON []byte, err error) {
	path := cv.id
	if path.String() == "" { // a converter not made by parse
		path = record.NewIDPath(cv.idPath)
	}
	var raw []byte
	if path.TopKey() != nil {
		m := path.Match()
		for _, mem := range f.members {
			m.Visit(mem)
		}
		raw, err = m.Result()
	} else {
		raw, err = path.Find(f.line)
	}
	if err != nil {
		return "", nil, err
	}
	if len(raw) > 2 && raw[0] == '"' { // a string, not "": sourceID would keep it
		return "", raw, nil
	}
	id, ok, err := sourceID(cv.idPath, raw)
	switch {
	case err != nil:
		return "", nil, err
	case !ok:
		if id, err = derivedID(cv.idPrefix, p); err != nil {
			return "", nil, err
		}
	}
	return id, jsonString(id), nil
}

// idMember starts every output line; the id's JSON follows.
const idMember = `{"` + record.FieldID + `":`

// appendOutputLine appends the record of the contract: id, messages, tools,
// input_ids, prompt_tokens, prompt_text (with --with-text), the thinking
// setting, dataset (with --dataset), then the source's other fields in their
// order.
func (cv *converter) appendOutputLine(b []byte, f *fields, p *prompt, idJSON []byte, msgs []byte, text string, ids []int, choice *thinking.Choice) []byte {
	b = append(b, idMember...)
	b = append(b, idJSON...)
	if msgs != nil {
		b = append(b, `,"`+record.FieldMessages+`":`...)
		b = append(b, msgs...)
	}
	if p.tools != nil {
		b = append(b, `,"`+record.FieldTools+`":`...)
		b = append(b, p.tools...)
	}
	b = append(b, `,"`+record.FieldInputIDs+`":`...)
	b = jsonl.AppendIntArray(b, ids)
	b = append(b, `,"`+record.FieldPromptTokens+`":`...)
	b = strconv.AppendInt(b, int64(len(ids)), 10)
	if cv.shape.turnsAll {
		b = append(b, `,"`+record.FieldConversationTurns+`":`...)
		b = strconv.AppendInt(b, int64(p.turns), 10)
	}
	if cv.withText {
		b = append(b, `,"`+record.FieldPromptText+`":`...)
		b = append(b, jsonString(text)...)
	}
	if choice != nil {
		b = choice.AppendFields(b)
	}
	if cv.dataset != "" {
		b = append(b, `,"`+record.FieldDataset+`":`...)
		b = append(b, jsonString(cv.dataset)...)
	}
	for _, m := range f.members {
		if cv.written(string(m.Key), p) {
			continue
		}
		b = append(b, ',', '"')
		b = append(b, m.Key...)
		b = append(b, '"', ':')
		b = append(b, m.Value...)
	}
	return append(b, '}')
}

// responseFields are the answer's side of the record contract. A source
// that is an earlier output (to generate again with another model) carries
// them; they are dropped, since the output is a prompt, and a stale
// completion_tokens would count against budget-cut's budget.
var responseFields = []string{record.FieldOutputIDs, record.FieldCompletionTokens, record.FieldText, record.FieldReasoning,
	record.FieldToolCalls, record.FieldFinishReason, record.FieldUsage, record.FieldGen, record.FieldError}

// written reports whether a source field is replaced or dropped in the
// output: the contract's fields and the shape's own fields. A field
// --id-path names elsewhere stays, since it may hold a number or more than
// the id.
func (cv *converter) written(key string, p *prompt) bool {
	switch key {
	case record.FieldID, record.FieldMessages, record.FieldTools, record.FieldInputIDs, record.FieldPromptTokens, record.FieldPromptText, record.FieldConversationTurns:
		return true // a prompt_text of an earlier run would not be this prompt's
	}
	if key == record.FieldDataset && cv.dataset != "" {
		return true // --dataset names the dataset the record is now in
	}
	if cv.thinking.IsSet() && !p.isText() && (key == record.FieldThinking || key == record.FieldReasoningEffort) {
		return true // this run's choice replaces the source's
	}
	return slices.Contains(p.consumed, key) || slices.Contains(responseFields, key)
}
