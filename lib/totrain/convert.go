package totrain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/draftvocab"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
	"github.com/synthpipe/synthpipe/lib/thinking"
)

const (
	formatSpecForge = "specforge"
	formatTokens    = "tokens"
	// formatTurns is one sample per generated turn: the exact prompt sent
	// and the exact answer, the loss on the answer (speculators' layout).
	formatTurns = "turns"
)

// checkFormat checks --format.
func checkFormat(f string) error {
	if f != formatSpecForge && f != formatTokens && f != formatTurns {
		return cliutil.Usagef("--format %q: want specforge, tokens or turns", f)
	}
	return nil
}

// errNoAnswer marks a record with nothing generated: no text, no tool call,
// no output ids.
var errNoAnswer = errors.New("no generated answer (no text, tool_calls or output_ids)")

// errNoConversation marks a record whose prompt was pre-rendered text (no
// messages): it has token ids but no conversation to write out.
var errNoConversation = errors.New("no messages: the prompt was pre-rendered text")

// errNeedsTokenizer marks an answer without output_ids (an OpenAI-compatible
// backend's) under --format tokens without --tokenizer: the run lacks a
// flag, the record is fine.
var errNeedsTokenizer = errors.New("no output_ids to join to the prompt's (an OpenAI-compatible backend answers in text)")

// converter turns one generated record into one training sample.
type converter struct {
	format string
	model  *chat.Model // nil when no --tokenizer was given
	idPath string
	// templateArgs are the --template-arg values, for telling a record's
	// thinking setting from one set for all records.
	templateArgs map[string]json.RawMessage
	eot          *string // the template's end-of-turn text, once found (mask.go)
	// vocab counts the loss-masked tokens of the samples written, for
	// --draft-vocab; nil without it.
	vocab *draftvocab.Counter
	// answer is the last sample's loss-masked ids, while vocab is counted.
	answer []int
	// keepTruncated keeps answers cut at the token limit, and a
	// conversation's last turn so cut.
	keepTruncated bool
	// strict drops the records with soft failures (--strict).
	strict bool
}

// recordThinking reads the thinking setting rec was generated with (see
// synthpipe-records(7)); ok is false when the record has none.
func recordThinking(rec []byte) (c thinking.Choice, ok bool, err error) {
	c, ok, err = thinking.FromRecord(rec)
	if err != nil {
		err = fmt.Errorf("%v: the setting the answer was generated with cannot be told, so the record is not rendered either way", err)
	}
	return c, ok, err
}

// renderModel is the model as it renders rec: with the template variables
// of the record's thinking setting. A record without one is rendered as
// the template and --template-arg say only when that cannot be the other
// way: when the template reads no thinking switch, or --template-arg sets
// it for every record. A --template-arg that contradicts the record's own
// setting is refused for that record.
func (c *converter) renderModel(rec []byte) (*chat.Model, error) {
	choice, ok, err := recordThinking(rec)
	if err != nil {
		return nil, err
	}
	set := thinking.ConflictingTemplateArg(c.templateArgs)
	if !ok {
		if sw := c.thinkingSwitch(); sw != "" && set == "" {
			return nil, fmt.Errorf(`no %q on the record, and the chat template reads %s: the setting the answer was generated with cannot be told, so the record is not rendered either way (generate and tokenize-prompts --thinking record it; for an input made all one way, say which with --template-arg %s=%s)`,
				record.FieldThinking, sw, sw, thinking.ArgValues(sw))
		}
		return c.model, nil
	}
	args := choice.TemplateArgs()
	if set != "" {
		if v, both := args[set]; !both || !bytes.Equal(v, c.templateArgs[set]) {
			return nil, fmt.Errorf("the record was generated with %s but --template-arg sets %s=%s: drop that --template-arg (each record carries its own setting)", choice, set, c.templateArgs[set])
		}
	}
	return c.model.WithArgs(args), nil
}

// samples are the training samples of rec: one, or for a regenerated
// conversation under --format turns one per generated turn.
func (c *converter) samples(rec []byte) ([][]byte, error) {
	id := gjson.GetBytes(rec, c.idPath)
	if id.Type != gjson.String {
		return nil, fmt.Errorf("no string id at %q (pick another field with --id-path)", c.idPath)
	}
	g, err := readRegenerated(rec, c.keepTruncated)
	if err != nil {
		return nil, err
	}
	if g != nil {
		return c.conversationSamples(id.Raw, rec, g)
	}
	var one []byte
	if c.format == formatSpecForge {
		one, err = c.specForge(nil, id.Raw, rec)
	} else { // a record of one answer is one turn
		one, err = c.tokens(nil, id.Raw, rec)
	}
	if err != nil {
		return nil, err
	}
	return [][]byte{one}, nil
}

// answerTurn builds the assistant message of the generated answer.
func answerTurn(rec []byte) (json.RawMessage, error) {
	r := gjson.GetManyBytes(rec, record.FieldText, record.FieldReasoning, record.FieldToolCalls)
	text, reasoning, calls := r[0], r[1], r[2]
	var toolCalls json.RawMessage
	if calls.IsArray() && len(calls.Array()) > 0 {
		toolCalls = json.RawMessage(calls.Raw)
	}
	if text.String() == "" && toolCalls == nil {
		if ids := gjson.GetBytes(rec, record.FieldOutputIDs); !ids.IsArray() || len(ids.Array()) == 0 {
			return nil, errNoAnswer
		}
	}
	return chat.AssistantTurn(text.String(), reasoning.String(), toolCalls), nil
}

// withAnswer returns the record's messages with the answer appended.
func withAnswer(rec []byte) (json.RawMessage, error) {
	msgs := gjson.GetBytes(rec, record.FieldMessages)
	if !msgs.IsArray() {
		return nil, errNoConversation
	}
	answer, err := answerTurn(rec)
	if err != nil {
		return nil, err
	}
	return chat.AppendMessage(json.RawMessage(msgs.Raw), answer), nil
}

func (c *converter) specForge(dst []byte, idRaw string, rec []byte) ([]byte, error) {
	conv, err := withAnswer(rec)
	if err != nil {
		return dst, err
	}
	var tools json.RawMessage
	if t := gjson.GetBytes(rec, record.FieldTools); t.IsArray() {
		tools = json.RawMessage(t.Raw)
	}
	return c.specForgeSample(dst, idRaw, conv, tools, rec)
}

// specForgeSample writes a SpecForge sample of conv, with the thinking
// setting rec was generated with.
func (c *converter) specForgeSample(dst []byte, idRaw string, conv, tools json.RawMessage, rec []byte) ([]byte, error) {
	choice, hasChoice, err := recordThinking(rec)
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"`+record.FieldID+`":`...)
	dst = append(dst, idRaw...)
	dst = append(dst, `,"`+record.FieldConversations+`":`...)
	dst = append(dst, conv...)
	if tools != nil {
		dst = append(dst, `,"`+record.FieldTools+`":`...)
		dst = append(dst, tools...)
	}
	if hasChoice { // for the trainer's template: the setting the answer was made with
		dst = choice.AppendFields(dst)
	}
	return append(dst, '}'), nil
}

func (c *converter) tokens(dst []byte, idRaw string, rec []byte) ([]byte, error) {
	in, out := gjson.GetBytes(rec, record.FieldInputIDs), gjson.GetBytes(rec, record.FieldOutputIDs)
	var prompt, answer int
	var ids []byte
	for _, side := range []struct {
		field string
		v     gjson.Result
	}{{record.FieldInputIDs, in}, {record.FieldOutputIDs, out}} {
		if side.v.Exists() && side.v.Type != gjson.Null && !side.v.IsArray() {
			return dst, record.TokenIDsError(side.field, []byte(side.v.Raw))
		}
	}
	if in.IsArray() && out.IsArray() {
		// Token ids straight from the server: join them without decoding.
		var ok1, ok2 bool
		prompt, ok1 = jsonl.IntArrayLen([]byte(in.Raw))
		answer, ok2 = jsonl.IntArrayLen([]byte(out.Raw))
		if !ok1 {
			return dst, record.TokenIDsError(record.FieldInputIDs, []byte(in.Raw))
		}
		if !ok2 {
			return dst, record.TokenIDsError(record.FieldOutputIDs, []byte(out.Raw))
		}
		if c.model != nil { // the vocabulary is known: ids past it are not this model's
			vocab := c.model.Tok.VocabSize()
			if err := record.CheckVocab(record.FieldInputIDs, []byte(in.Raw), vocab); err != nil {
				return dst, err
			}
			if err := record.CheckVocab(record.FieldOutputIDs, []byte(out.Raw), vocab); err != nil {
				return dst, err
			}
		}
		if answer == 0 {
			return dst, errNoAnswer
		}
		ids = joinArrays(in.Raw, out.Raw)
		if c.vocab != nil {
			c.answer = c.answer[:0]
			if err := json.Unmarshal([]byte(out.Raw), &c.answer); err != nil {
				return dst, record.TokenIDsError(record.FieldOutputIDs, []byte(out.Raw))
			}
		}
	} else {
		if c.model == nil {
			return dst, errNeedsTokenizer
		}
		all, p, err := c.renderTokens(rec)
		if err != nil {
			return dst, err
		}
		prompt, answer = p, len(all)-p
		ids = jsonl.AppendIntArray(nil, all)
		c.answer = append(c.answer[:0], all[p:]...)
	}
	dst = append(dst, `{"`+record.FieldID+`":`...)
	dst = append(dst, idRaw...)
	dst = append(dst, `,"`+record.FieldInputIDs+`":`...)
	dst = append(dst, ids...)
	dst = append(dst, `,"`+record.FieldLossMask+`":[`...)
	for i := 0; i < prompt+answer; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		if i < prompt {
			dst = append(dst, '0')
		} else {
			dst = append(dst, '1')
		}
	}
	return append(dst, "]}"...), nil
}

// renderTokens renders the conversation with its answer and returns its ids
// and how many of them are the prompt (the render with the generation
// prompt). The prompt must be a prefix of the whole, in text and in ids:
// otherwise the mask could not say which tokens are the answer's.
func (c *converter) renderTokens(rec []byte) (ids []int, prompt int, err error) {
	conv, err := withAnswer(rec)
	if err != nil {
		return nil, 0, err
	}
	msgs := json.RawMessage(gjson.GetBytes(rec, record.FieldMessages).Raw)
	var tools json.RawMessage
	if t := gjson.GetBytes(rec, record.FieldTools); t.IsArray() {
		tools = json.RawMessage(t.Raw)
	}
	model, err := c.renderModel(rec)
	if err != nil {
		return nil, 0, err
	}
	full, err := model.Render(conv, tools, false)
	if err != nil {
		return nil, 0, fmt.Errorf("chat template: %w", err)
	}
	head, err := model.Render(msgs, tools, true)
	if err != nil {
		return nil, 0, fmt.Errorf("chat template: %w", err)
	}
	if !strings.HasPrefix(full, head) {
		return nil, 0, fmt.Errorf("the chat template renders the conversation with its answer differently from the prompt it was generated from, so the answer's tokens cannot be told apart")
	}
	ids = model.Encode(full)
	headIDs := model.Encode(head)
	if len(headIDs) > len(ids) || !equalInts(ids[:len(headIDs)], headIDs) {
		return nil, 0, fmt.Errorf("the prompt's tokens are not a prefix of the whole conversation's (a token spans the start of the answer)")
	}
	return ids, len(headIDs), nil
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// joinArrays joins two raw JSON arrays into one.
func joinArrays(a, b string) []byte {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	out := make([]byte, 0, len(a)+len(b))
	out = append(out, a[:len(a)-1]...)
	inner := strings.TrimSpace(b[1:])
	if inner != "]" && strings.TrimSpace(a[1:len(a)-1]) != "" {
		out = append(out, ',')
	}
	return append(out, b[1:]...)
}

// thinkingSwitch is the thinking variable the chat template reads, "" for
// none (or no template).
func (c *converter) thinkingSwitch() string {
	if c.model.Template == nil {
		return ""
	}
	return c.model.Template.ThinkingSwitch
}
