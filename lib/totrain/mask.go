package totrain

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/record"
)

// trainView is a sample as a trainer sees it: its token ids and, for each,
// whether the loss is taken on it.
type trainView struct {
	id      string
	turn    int // --format turns: the turn of the conversation, from 1
	ids     []int
	trained []bool
}

// tokensView reads a --format tokens sample: its ids and loss mask as
// written.
func tokensView(sample []byte) (trainView, error) {
	r := gjson.GetManyBytes(sample, record.FieldID, record.FieldInputIDs, record.FieldLossMask, record.FieldTurn)
	v := trainView{id: r[0].String(), turn: int(r[3].Int())}
	for _, x := range r[1].Array() {
		v.ids = append(v.ids, int(x.Int()))
	}
	for _, x := range r[2].Array() {
		v.trained = append(v.trained, x.Int() != 0)
	}
	if len(v.ids) != len(v.trained) {
		return v, fmt.Errorf("sample %q: %d input_ids but %d loss_mask entries", v.id, len(v.ids), len(v.trained))
	}
	return v, nil
}

// specForgeView renders a --format specforge sample through the chat
// template, as a trainer does, with the loss on every assistant turn.
func (c *converter) specForgeView(sample []byte) (trainView, error) {
	r := gjson.GetManyBytes(sample, record.FieldID, record.FieldConversations, record.FieldTools)
	v := trainView{id: r[0].String()}
	var tools json.RawMessage
	if r[2].IsArray() {
		tools = json.RawMessage(r[2].Raw)
	}
	var msgs []json.RawMessage
	for _, m := range r[1].Array() {
		msgs = append(msgs, json.RawMessage(m.Raw))
	}
	// The sample carries the thinking setting its answer was made with, as
	// the trainer's template reads it; without one the template's default.
	model := c.model
	choice, ok, err := recordThinking(sample)
	if err != nil {
		return v, err
	}
	if ok {
		model = model.WithArgs(choice.TemplateArgs())
	}
	full, spans, err := c.assistantSpans(model, msgs, tools)
	if err != nil {
		return v, fmt.Errorf("sample %q: %w", v.id, err)
	}
	v.ids = model.Encode(full)
	start := 0
	for _, id := range v.ids {
		piece, err := c.model.Tok.Decode([]int{id})
		if err != nil {
			return v, err
		}
		v.trained = append(v.trained, spans.holds(start))
		start += len(piece)
	}
	if start != len(full) {
		return v, fmt.Errorf("sample %q: the rendered conversation's tokens decode to %d bytes, not its %d", v.id, start, len(full))
	}
	return v, nil
}

// byteSpans are half-open byte ranges of a rendered conversation.
type byteSpans [][2]int

// holds reports whether offset lies in one of the spans.
func (s byteSpans) holds(offset int) bool {
	for _, sp := range s {
		if offset >= sp[0] && offset < sp[1] {
			return true
		}
	}
	return false
}

// assistantSpans renders msgs and finds the text of each assistant turn in
// it: from where the generation prompt for that turn ends (as far as the
// whole conversation's render agrees with it) to where the turn ends. A
// template may render a turn otherwise once later turns follow (Kimi-K2.5
// drops earlier reasoning): the turn then ends at the template's
// end-of-turn text.
func (c *converter) assistantSpans(model *chat.Model, msgs []json.RawMessage, tools json.RawMessage) (string, byteSpans, error) {
	full, err := model.Render(joinMessages(msgs), tools, false)
	if err != nil {
		return "", nil, fmt.Errorf("chat template: %w", err)
	}
	var spans byteSpans
	for i, m := range msgs {
		if gjson.GetBytes(m, "role").String() != "assistant" {
			continue
		}
		from := 0 // where the turn before ended
		if n := len(spans); n > 0 {
			from = spans[n-1][1]
		}
		start, err := turnStart(model, full, msgs[:i], tools, from)
		if err != nil {
			return "", nil, err
		}
		end, err := c.turnEnd(model, full, msgs, tools, i, start)
		if err != nil {
			return "", nil, err
		}
		spans = append(spans, [2]int{start, end})
	}
	return full, spans, nil
}

// turnStart is where the assistant turn after before begins in full (at
// from or later): past the render of before and the generation prompt, as
// far as full agrees with them. A template may render earlier turns
// otherwise once the conversation goes on (Kimi-K2.5 drops all reasoning
// from a conversation that ends with an assistant turn): the turn then
// begins after the generation prompt's own text, found in full from the
// end of the turn before.
func turnStart(model *chat.Model, full string, before []json.RawMessage, tools json.RawMessage, from int) (int, error) {
	head, err := model.Render(joinMessages(before), tools, true)
	if err != nil {
		return 0, fmt.Errorf("chat template: %w", err)
	}
	base, err := model.Render(joinMessages(before), tools, false)
	if err != nil {
		return 0, fmt.Errorf("chat template: %w", err)
	}
	if !strings.HasPrefix(head, base) {
		return max(commonPrefix(full, head), from), nil
	}
	if strings.HasPrefix(full, base) {
		return len(base) + commonPrefix(full[len(base):], head[len(base):]), nil
	}
	prompt := head[len(base):]
	if k := strings.Index(full[from:], prompt); prompt != "" && k >= 0 {
		return from + k + len(prompt), nil
	}
	return 0, fmt.Errorf("cannot tell where assistant turn %d begins in the rendered conversation (the template renders the turns before it otherwise once it follows, and its generation prompt is not found after them)", len(before)+1)
}

// turnEnd is where assistant turn i of full ends.
func (c *converter) turnEnd(model *chat.Model, full string, msgs []json.RawMessage, tools json.RawMessage, i, start int) (int, error) {
	if i == len(msgs)-1 {
		return len(full), nil
	}
	upTo, err := model.Render(joinMessages(msgs[:i+1]), tools, false)
	if err != nil {
		return 0, fmt.Errorf("chat template: %w", err)
	}
	if strings.HasPrefix(full, upTo) && len(upTo) > start {
		return len(upTo), nil
	}
	eot, err := c.endOfTurn(model)
	if err != nil {
		return 0, err
	}
	if k := strings.Index(full[start:], eot); eot != "" && k >= 0 {
		return start + k + len(eot), nil
	}
	return 0, fmt.Errorf("cannot tell where assistant turn %d ends in the rendered conversation (the template renders it differently once later turns follow, and no end-of-turn text follows it)", i+1)
}

// endOfTurn is the text the template writes after an assistant message's
// content: rendered once with a probe answer.
func (c *converter) endOfTurn(model *chat.Model) (string, error) {
	if c.eot != nil {
		return *c.eot, nil
	}
	const probe = "\x01synthpipe-probe\x01" // no template writes this
	out, err := model.Render(json.RawMessage(`[{"role":"user","content":"x"},{"role":"assistant","content":"\u0001synthpipe-probe\u0001"}]`), nil, false)
	if err != nil {
		return "", fmt.Errorf("chat template: %w", err)
	}
	eot := ""
	if k := strings.LastIndex(out, probe); k >= 0 {
		eot = strings.TrimRight(out[k+len(probe):], "\n")
	}
	c.eot = &eot
	return eot, nil
}

// joinMessages is msgs as one JSON array.
func joinMessages(msgs []json.RawMessage) json.RawMessage {
	b := []byte{'['}
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	return append(b, ']')
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
