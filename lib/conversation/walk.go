package conversation

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/tidwall/sjson"

	"github.com/synthpipe/synthpipe/lib/answerformat"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// Why a conversation ended: the value of its "ended" member.
const (
	// EndDone: every turn the source asks for was regenerated.
	EndDone = "done"
	// EndLength: an answer was cut by the token limit (kept, flagged).
	EndLength = "length"
	// EndCallsDiffer: the model called other tools than the source (their
	// number or the functions), so the source's results do not fit.
	EndCallsDiffer = "calls_differ"
	// EndCalledWhereSourceAnswered: the model called tools where the
	// source answered; no results exist for its calls.
	EndCalledWhereSourceAnswered = "called_where_source_answered"
	// EndAnsweredWhereSourceCalled: the model answered where the source
	// called tools; what followed in the source answers calls never made.
	EndAnsweredWhereSourceCalled = "answered_where_source_called"
	// EndUnreadable: the answer does not follow the model's own format
	// (a malformed tool call), so the next turn cannot be built on it.
	EndUnreadable = "unreadable_answer"
	// EndBudget: a budget (generate --token-budget, --cost-budget) was
	// reached before the next turn; kept with the turns paid for.
	EndBudget = "budget"
	// EndContext: the next turn's prompt leaves less of the model's
	// context length than generate --min-room; kept with the turns done.
	EndContext = "context"
)

// Turn is one regenerated turn as it was sent and answered.
type Turn struct {
	PromptTokens     int
	OutputIDs        []int // nil when the backend gave none
	Answer           answerformat.Answer
	ReadError        string // why the answer could not be read, else ""
	FinishReason     string
	CompletionTokens int
	CachedTokens     int
	Usage            json.RawMessage
	LatencyMS        int64
	Attempts         int
}

// Options shape the assistant turns a Walk writes.
type Options struct {
	// ReasoningAlso names more members that carry an answer's reasoning
	// besides reasoning_content: "reasoning" is the field OpenRouter reads
	// back from an assistant message.
	ReasoningAlso []string
}

// Walk is one conversation being regenerated. It is not safe for
// concurrent use; one worker owns it.
type Walk struct {
	src   *Source
	opts  Options
	turn  int // index into src.turns of the next turn
	msgs  []json.RawMessage
	turns []Turn
	ended string
}

// Walk starts regenerating s: the conversation so far is what comes before
// its first assistant turn.
func (s *Source) Walk(opts Options) *Walk {
	w := &Walk{src: s, opts: opts}
	for _, m := range s.messages[:s.turns[0]] {
		w.msgs = append(w.msgs, m.raw)
	}
	return w
}

// Messages is the conversation so far as a JSON array: the prompt of the
// next turn, or the regenerated conversation once it ended.
func (w *Walk) Messages() json.RawMessage {
	n := len(w.msgs) + 2 // brackets and commas
	for _, m := range w.msgs {
		n += len(m)
	}
	b := make([]byte, 0, n) // sized once: it is made again every turn
	b = append(b, '[')
	for i, m := range w.msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	return append(b, ']')
}

// MessageList is the conversation so far, message by message: what
// Messages joins into an array. A message's bytes never change once it is
// in the list, and the list only grows, so that a caller that keeps it from
// one turn to the next (chat.TurnPrompts) finds the earlier messages as
// they were, the same slices. The list is the Walk's: read it, do not
// change it.
func (w *Walk) MessageList() []json.RawMessage { return w.msgs[:len(w.msgs):len(w.msgs)] }

// Tools are the conversation's tools.
func (w *Walk) Tools() json.RawMessage { return w.src.tools }

// Ended is why the conversation ended, "" while it goes on.
func (w *Walk) Ended() string { return w.ended }

// Turns are the turns done so far.
func (w *Walk) Turns() []Turn { return w.turns }

// Add records the answer to the current turn, and either ends the
// conversation or builds the next prompt: the answer as an assistant turn,
// then the source's turns up to its next assistant turn, tool results under
// the model's own call ids.
func (w *Walk) Add(t Turn) {
	w.turns = append(w.turns, t)
	at := w.src.turns[w.turn]
	w.turn++
	if t.ReadError != "" {
		w.ended = EndUnreadable
		return
	}
	w.msgs = append(w.msgs, w.assistant(t.Answer))
	if t.FinishReason == "length" || !t.Answer.Closed && t.FinishReason != "stop" && t.FinishReason != "tool_calls" {
		w.ended = EndLength
		return
	}
	if at == len(w.src.messages) { // the source's last turn was a request
		w.ended = EndDone
		if len(t.Answer.ToolCalls) > 0 {
			w.ended = EndCalledWhereSourceAnswered
		}
		return
	}
	source := w.src.messages[at]
	if reason := compareCalls(source, t.Answer.ToolCalls); reason != "" {
		w.ended = reason
		return
	}
	end := len(w.src.messages)
	if w.turn < len(w.src.turns) {
		end = w.src.turns[w.turn]
	}
	for _, m := range w.src.messages[at+1 : end] {
		raw := m.raw
		if m.role == "tool" {
			raw, _ = sjson.SetBytes(bytes.Clone(raw), "tool_call_id", t.Answer.ToolCalls[m.answers].ID)
		}
		w.msgs = append(w.msgs, raw)
	}
	if w.turn == len(w.src.turns) {
		w.ended = EndDone
	}
}

// compareCalls says why the model's calls cannot take the source's
// results, "" when they can.
func compareCalls(source sourceMessage, calls []answerformat.ToolCall) string {
	switch {
	case len(source.callNames) == 0 && len(calls) > 0:
		return EndCalledWhereSourceAnswered
	case len(source.callNames) > 0 && len(calls) == 0:
		return EndAnsweredWhereSourceCalled
	case len(source.callNames) != len(calls):
		return EndCallsDiffer
	}
	for i, c := range calls {
		if c.Name != source.callNames[i] {
			return EndCallsDiffer
		}
	}
	return ""
}

// End ends the conversation before its turns are done (the run stops, a
// budget is reached), with why.
func (w *Walk) End(reason string) {
	if w.ended == "" {
		w.ended = reason
	}
}

// assistant is the answer as an assistant message, as chat templates read
// it: content, reasoning_content, tool_calls.
func (w *Walk) assistant(a answerformat.Answer) json.RawMessage {
	// Room for the members unescaped, and some escapes: a message made
	// at every turn is one array, not a series of doublings.
	names := append([]string{"reasoning_content"}, w.opts.ReasoningAlso...)
	n := len(a.Content) + 64
	if a.Reasoning != "" {
		n += len(names) * (len(a.Reasoning) + 32)
	}
	b := make([]byte, 0, n+n/16)
	b = append(b, `{"role":"assistant","content":`...)
	b = jsonl.AppendString(b, a.Content)
	if a.Reasoning != "" {
		for _, name := range names {
			b = append(b, ',')
			b = jsonl.AppendString(b, name)
			b = append(b, ':')
			b = jsonl.AppendString(b, a.Reasoning)
		}
	}
	if calls := answerformat.CallsJSON(a.ToolCalls); calls != nil {
		b = append(b, `,"tool_calls":`...)
		b = append(b, calls...)
	}
	return append(b, '}')
}

// Member is one member generate adds to the conversation's output line.
type Member struct {
	Key string
	Raw []byte
}

// Output fields of a regenerated conversation (see synthpipe-records(7)):
// lib/record owns them, and the rule that counts their tokens.
const (
	FieldConversation       = record.FieldConversation
	FieldTurns              = record.FieldTurns
	FieldEnded              = record.FieldEnded
	FieldConversationTokens = record.FieldConversationTokens
)

// Counts are the turns' token counts, as lib/record reads them back.
func (w *Walk) Counts() []record.TurnCount {
	c := make([]record.TurnCount, len(w.turns))
	for i, t := range w.turns {
		c[i] = record.TurnCount{Prompt: int64(t.PromptTokens), Completion: int64(t.CompletionTokens), FinishReason: t.FinishReason}
	}
	return c
}

// Totals are the conversation's token counts by record.ConversationTotals:
// prompt and completion tokens summed over its turns (what was spent), and
// its own length (what a trainer sees).
func (w *Walk) Totals() (prompt, completion, conversation int) {
	p, c, t := record.ConversationTotals(w.Counts())
	return int(p), int(c), int(t)
}

// Members are what the output line adds to the source record: the
// regenerated conversation, its turns, why it ended and its token counts
// (prompt_tokens and completion_tokens as Totals counts them).
func (w *Walk) Members(promptField, completionField string) []Member {
	prompt, completion, conv := w.Totals()
	turns := []byte{'['}
	for i, t := range w.turns {
		if i > 0 {
			turns = append(turns, ',')
		}
		turns = appendTurn(turns, t)
	}
	turns = append(turns, ']')
	return []Member{
		{FieldConversation, w.Messages()},
		{FieldTurns, turns},
		{FieldEnded, jsonl.AppendString(nil, w.ended)},
		{promptField, strconv.AppendInt(nil, int64(prompt), 10)},
		{completionField, strconv.AppendInt(nil, int64(completion), 10)},
		{FieldConversationTokens, strconv.AppendInt(nil, int64(conv), 10)},
	}
}

// appendTurn writes one turn of the "turns" member.
func appendTurn(b []byte, t Turn) []byte {
	b = append(b, `{"`+record.FieldPromptTokens+`":`...)
	b = strconv.AppendInt(b, int64(t.PromptTokens), 10)
	if t.OutputIDs != nil {
		b = append(b, `,"`+record.FieldOutputIDs+`":`...)
		b = jsonl.AppendIntArray(b, t.OutputIDs)
	}
	b = append(b, `,"`+record.FieldText+`":`...)
	b = jsonl.AppendString(b, t.Answer.Content)
	if t.Answer.Reasoning != "" {
		b = append(b, `,"`+record.FieldReasoning+`":`...)
		b = jsonl.AppendString(b, t.Answer.Reasoning)
	}
	if calls := answerformat.CallsJSON(t.Answer.ToolCalls); calls != nil {
		b = append(b, `,"`+record.FieldToolCalls+`":`...)
		b = append(b, calls...)
	}
	if t.ReadError != "" {
		b = append(b, `,"read_error":`...)
		b = jsonl.AppendString(b, t.ReadError)
	}
	b = append(b, `,"`+record.FieldFinishReason+`":`...)
	b = jsonl.AppendString(b, t.FinishReason)
	b = append(b, `,"`+record.FieldCompletionTokens+`":`...)
	b = strconv.AppendInt(b, int64(t.CompletionTokens), 10)
	b = append(b, `,"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(t.CachedTokens), 10)
	if len(t.Usage) > 0 {
		b = append(b, `,"`+record.FieldUsage+`":`...)
		b = append(b, t.Usage...)
	}
	b = append(b, `,"latency_ms":`...)
	b = strconv.AppendInt(b, t.LatencyMS, 10)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(t.Attempts), 10)
	return append(b, '}')
}
