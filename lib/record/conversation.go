package record

import (
	"bytes"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// TurnCount is what one generated turn of a conversation counts: the
// prompt it sent (the whole conversation so far), its answer, and how the
// answer ended.
type TurnCount struct {
	Prompt, Completion int64
	FinishReason       string
}

// ConversationTotals is the one rule by which every tool counts a
// conversation's tokens. What was spent: every turn sends the conversation
// so far again, so prompt and completion are summed over the turns, and
// budgets (generate --token-budget, budget-cut, tokstat --budget) count
// these. What training sees is the conversation once: its last prompt and
// its last answer (trained).
func ConversationTotals(turns []TurnCount) (prompt, completion, trained int64) {
	for _, t := range turns {
		prompt += t.Prompt
		completion += t.Completion
	}
	if n := len(turns); n > 0 {
		trained = turns[n-1].Prompt + turns[n-1].Completion
	}
	return prompt, completion, trained
}

// isConversation reports whether a record is a regenerated conversation:
// it has an "ended" string and a "turns" array. Both are needed, since
// source datasets carry "turns" of their own (lists of questions).
func isConversation(turns, ended []byte) bool {
	return len(turns) > 0 && turns[0] == '[' && len(ended) > 0 && ended[0] == '"'
}

// ReadTurns reads the counts of a conversation's "turns" array: each turn's
// prompt_tokens, completion_tokens and finish_reason.
func ReadTurns(raw []byte) ([]TurnCount, error) {
	var turns []TurnCount
	var err error
	i := 0
	gjson.ParseBytes(raw).ForEach(func(_, v gjson.Result) bool {
		t, terr := readTurn([]byte(v.Raw))
		if terr != nil {
			err = fmt.Errorf("%s[%d]: %w", FieldTurns, i, terr)
			return false
		}
		turns = append(turns, t)
		i++
		return true
	})
	return turns, err
}

func readTurn(raw []byte) (TurnCount, error) {
	var t TurnCount
	if len(raw) == 0 || raw[0] != '{' {
		return t, fmt.Errorf("is %s, want an object", jsonl.Kind(raw))
	}
	var prompt, completion, finish []byte
	jsonl.ScanObject(raw, func(m jsonl.Member) {
		switch string(MemberKey(m.Key)) {
		case FieldPromptTokens:
			prompt = m.Value
		case FieldCompletionTokens:
			completion = m.Value
		case FieldFinishReason:
			finish = m.Value
		}
	}) // the record was validated whole
	var err error
	if t.Prompt, err = turnCount(FieldPromptTokens, prompt); err != nil {
		return t, err
	}
	if t.Completion, err = turnCount(FieldCompletionTokens, completion); err != nil {
		return t, err
	}
	if len(finish) > 0 && finish[0] == '"' {
		t.FinishReason = finishReason(finish)
	}
	return t, nil
}

func turnCount(field string, raw []byte) (int64, error) {
	if isNull(raw) {
		return 0, fmt.Errorf("no %q: every turn counts its tokens", field)
	}
	n, err := parseCount(raw)
	if err != nil {
		return 0, fmt.Errorf("%q is %s, %w", field, bytes.TrimSpace(raw), err)
	}
	return n, nil
}
