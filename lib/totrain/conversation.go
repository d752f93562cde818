package totrain

import (
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// regenerated is a conversation that generate --turns all regenerated (see
// synthpipe-records(7), CONVERSATIONS): every assistant turn in it is the
// model's own answer.
type regenerated struct {
	// sent are its messages as generate sent them; a turn's prompt is the
	// messages before its assistant turn, rendered.
	sent []json.RawMessage
	// at is the index in sent of each generated turn's assistant message.
	at    []int
	turns []gjson.Result
	tools json.RawMessage
}

// readRegenerated reads rec as a regenerated conversation: nil when it is
// not one. A last turn cut at the token limit is dropped unless
// keepTruncated; a conversation left with no turn has no answer.
func readRegenerated(rec []byte, keepTruncated bool) (*regenerated, error) {
	r := gjson.GetManyBytes(rec, record.FieldConversation, record.FieldTurns, record.FieldEnded, record.FieldTools)
	if !r[1].IsArray() || r[2].Type != gjson.String {
		return nil, nil
	}
	if !r[0].IsArray() {
		return nil, fmt.Errorf(`a regenerated conversation ("turns", "ended") without its "conversation" array`)
	}
	g := &regenerated{turns: r[1].Array()}
	if r[3].IsArray() {
		g.tools = json.RawMessage(r[3].Raw)
	}
	for _, m := range r[0].Array() {
		if m.Get("role").String() == "assistant" {
			g.at = append(g.at, len(g.sent))
		}
		g.sent = append(g.sent, json.RawMessage(m.Raw))
	}
	// An unreadable last answer is a turn without its assistant message.
	if len(g.at) > len(g.turns) {
		return nil, fmt.Errorf("%d assistant turns in the conversation but %d in turns", len(g.at), len(g.turns))
	}
	g.turns = g.turns[:len(g.at)]
	if n := len(g.turns); n > 0 && !keepTruncated && g.turns[n-1].Get(record.FieldFinishReason).String() == "length" {
		g.sent, g.at, g.turns = g.sent[:g.at[n-1]], g.at[:n-1], g.turns[:n-1]
	}
	if len(g.turns) == 0 {
		return nil, errNoAnswer
	}
	return g, nil
}

// forSpecForge is the conversation with its assistant turns as SpecForge
// reads them (reasoning as reasoning_content and thinking, tool_calls).
func (g *regenerated) forSpecForge() json.RawMessage {
	msgs := make([]json.RawMessage, len(g.sent))
	copy(msgs, g.sent)
	for _, i := range g.at {
		r := gjson.GetManyBytes(g.sent[i], "content", "reasoning_content", "tool_calls")
		var calls json.RawMessage
		if r[2].IsArray() && len(r[2].Array()) > 0 {
			calls = json.RawMessage(r[2].Raw)
		}
		msgs[i] = chat.AssistantTurn(r[0].String(), r[1].String(), calls)
	}
	return joinMessages(msgs)
}

// conversationSamples are the samples of a regenerated conversation:
// SpecForge's conversation with every regenerated assistant turn; its
// tokens as the template renders it for training, the loss on every
// assistant turn; or one sample per turn, the exact prompt sent and the
// exact answer, the loss on the answer.
func (c *converter) conversationSamples(idRaw string, rec []byte, g *regenerated) ([][]byte, error) {
	sample, err := c.specForgeSample(nil, idRaw, g.forSpecForge(), g.tools, rec)
	if err != nil {
		return nil, err
	}
	switch c.format {
	case formatSpecForge:
		return [][]byte{sample}, nil
	case formatTokens:
		if c.model == nil {
			return nil, errNeedsTokenizer
		}
		v, err := c.specForgeView(sample)
		if err != nil {
			return nil, err
		}
		c.answer = c.answer[:0] // the trained ids, for --draft-vocab
		for i, id := range v.ids {
			if v.trained[i] {
				c.answer = append(c.answer, id)
			}
		}
		return [][]byte{appendTokensSample(nil, idRaw, -1, jsonl.AppendIntArray(nil, v.ids), v.trained)}, nil
	}
	return c.turnSamples(idRaw, rec, g)
}

// turnSamples are --format turns: one sample per generated turn, the
// prompt generate sent (rendered again, and checked against the length it
// sent and, for the first turn, against the record's input_ids) followed by
// the exact output_ids, the loss on the output.
func (c *converter) turnSamples(idRaw string, rec []byte, g *regenerated) ([][]byte, error) {
	if c.model == nil {
		return nil, errNeedsTokenizer
	}
	model, err := c.renderModel(rec)
	if err != nil {
		return nil, err
	}
	var samples [][]byte
	for n, t := range g.turns {
		out := t.Get(record.FieldOutputIDs)
		if !out.IsArray() {
			return nil, fmt.Errorf("turn %d has no output_ids (an OpenAI-compatible backend answers in text): --format turns writes the exact ids, which SGLang's native API returns", n+1)
		}
		text, err := model.Render(joinMessages(g.sent[:g.at[n]]), g.tools, true)
		if err != nil {
			return nil, fmt.Errorf("chat template: %w", err)
		}
		prompt := model.Encode(text)
		if err := checkSentPrompt(rec, n, prompt, t); err != nil {
			return nil, err
		}
		if err := record.CheckVocab(fmt.Sprintf("turns[%d].output_ids", n), []byte(out.Raw), model.Tok.VocabSize()); err != nil {
			return nil, err
		}
		answer, ok := jsonl.IntArrayLen([]byte(out.Raw))
		if !ok {
			return nil, record.TokenIDsError(fmt.Sprintf("turns[%d].output_ids", n), []byte(out.Raw))
		}
		mask := make([]bool, len(prompt)+answer)
		for i := len(prompt); i < len(mask); i++ {
			mask[i] = true
		}
		ids := joinArrays(string(jsonl.AppendIntArray(nil, prompt)), out.Raw)
		samples = append(samples, appendTokensSample(nil, idRaw, n+1, ids, mask))
	}
	return samples, nil
}

// checkSentPrompt refuses a rendered prompt that is not the one generate
// sent for turn n: another length than the turn's prompt_tokens, or for
// the first turn other ids than the record's input_ids. The flags that
// shape the rendering (--tokenizer, --template-arg, --date,
// --tool-declaration) must be those of the run.
func checkSentPrompt(rec []byte, n int, prompt []int, t gjson.Result) error {
	const fix = "give to-train the --tokenizer, --template-arg, --date and --tool-declaration the conversation was generated with"
	if sent := t.Get(record.FieldPromptTokens).Int(); int(sent) != len(prompt) {
		return fmt.Errorf("turn %d's prompt renders to %d tokens, but generate sent %d: %s", n+1, len(prompt), sent, fix)
	}
	if in := gjson.GetBytes(rec, record.FieldInputIDs); n == 0 && in.IsArray() {
		for i, v := range in.Array() {
			if i >= len(prompt) || int(v.Int()) != prompt[i] {
				return fmt.Errorf("turn 1's prompt renders to other tokens than the record's input_ids (from token %d): %s", i, fix)
			}
		}
	}
	return nil
}

// appendTokensSample writes a token sample: its id (and turn, when above
// 0), its ids (a JSON array) and the loss mask.
func appendTokensSample(dst []byte, idRaw string, turn int, ids []byte, mask []bool) []byte {
	dst = append(dst, `{"`+record.FieldID+`":`...)
	dst = append(dst, idRaw...)
	if turn > 0 {
		dst = append(dst, `,"`+record.FieldTurn+`":`...)
		dst = append(dst, fmt.Sprint(turn)...)
	}
	dst = append(dst, `,"`+record.FieldInputIDs+`":`...)
	dst = append(dst, ids...)
	dst = append(dst, `,"`+record.FieldLossMask+`":[`...)
	for i, on := range mask {
		if i > 0 {
			dst = append(dst, ',')
		}
		if on {
			dst = append(dst, '1')
		} else {
			dst = append(dst, '0')
		}
	}
	return append(dst, "]}"...)
}
