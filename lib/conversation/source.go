// Package conversation regenerates a conversation turn by turn, on policy:
// every assistant turn is the model's own answer to the conversation so
// far, which holds the source's system, user and tool turns and the model's
// earlier answers (never the source's). Where the model calls tools and the
// source holds the results of the calls at that point, the source's results
// are spliced in by position, under the model's own call ids; where the
// model departs from the source (other calls, a call where the source
// answered, an answer where it called, a cut answer), the conversation ends
// there and keeps what was made.
//
// The package knows nothing of servers: generate asks a Walk for the
// conversation so far, renders and sends it, and hands the answer back.
package conversation

import (
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"
)

// Source is a source conversation, checked: it has a user turn, every tool
// result answers a call of the assistant turn before it, and every call is
// answered.
type Source struct {
	messages []sourceMessage
	tools    json.RawMessage
	// turns are the indexes of the assistant turns to regenerate; a
	// conversation that ends with a user or tool turn has one more turn, at
	// len(messages).
	turns []int
}

type sourceMessage struct {
	raw  json.RawMessage
	role string
	// calls are an assistant turn's tool calls: their ids (may be "") and
	// function names.
	callIDs, callNames []string
	// answers is, for a tool result, the position of the call it answers
	// in the assistant turn before it.
	answers int
}

// Parse reads the source conversation messages (a JSON array of OpenAI
// messages) and its tools (a JSON array, or nil).
func Parse(messages, tools json.RawMessage) (*Source, error) {
	arr := gjson.ParseBytes(messages)
	if !arr.IsArray() {
		return nil, fmt.Errorf(`"messages" is not an array of messages`)
	}
	s := &Source{tools: tools}
	sawUser := false
	// pending is the latest assistant turn with calls, and which of its
	// calls have their result.
	pending, answered := -1, []bool(nil)
	for i, m := range arr.Array() {
		if !m.IsObject() {
			return nil, fmt.Errorf("messages[%d] is not an object", i)
		}
		msg := sourceMessage{raw: json.RawMessage(m.Raw), role: m.Get("role").String()}
		switch msg.role {
		case "user":
			sawUser = true
		case "assistant":
			if err := unanswered(s, pending, answered); err != nil {
				return nil, err
			}
			if !sawUser {
				return nil, fmt.Errorf("messages[%d]: an assistant turn before any user turn: there is nothing for the model to answer there", i)
			}
			for _, c := range m.Get("tool_calls").Array() {
				msg.callIDs = append(msg.callIDs, c.Get("id").String())
				msg.callNames = append(msg.callNames, c.Get("function.name").String())
			}
			pending, answered = -1, nil
			if len(msg.callIDs) > 0 {
				pending, answered = len(s.messages), make([]bool, len(msg.callIDs))
			}
			s.turns = append(s.turns, len(s.messages))
		case "tool":
			pos, err := answeredCall(s, i, m, pending, answered)
			if err != nil {
				return nil, err
			}
			answered[pos], msg.answers = true, pos
		}
		s.messages = append(s.messages, msg)
	}
	if !sawUser {
		return nil, fmt.Errorf("the conversation has no user turn: there is nothing for the model to answer")
	}
	if err := unanswered(s, pending, answered); err != nil {
		return nil, err
	}
	if last := s.messages[len(s.messages)-1].role; last != "assistant" {
		s.turns = append(s.turns, len(s.messages))
	}
	return s, nil
}

// answeredCall finds the call a tool result (messages[i], m) answers: the
// call its tool_call_id names, else the first call still without a result.
func answeredCall(s *Source, i int, m gjson.Result, pending int, answered []bool) (int, error) {
	if pending < 0 {
		return 0, fmt.Errorf("messages[%d]: a tool result with no tool call before it: it answers no call", i)
	}
	calls := s.messages[pending].callIDs
	if id := m.Get("tool_call_id").String(); id != "" {
		for pos, c := range calls {
			if c == id {
				if answered[pos] {
					return 0, fmt.Errorf("messages[%d]: a second result for tool call %q", i, id)
				}
				return pos, nil
			}
		}
		return 0, fmt.Errorf("messages[%d]: tool result for %q names no call of messages[%d] (its calls: %q)", i, id, pending, calls)
	}
	for pos, done := range answered {
		if !done {
			return pos, nil
		}
	}
	return 0, fmt.Errorf("messages[%d]: more tool results than messages[%d] made calls (%d): it answers no call", i, pending, len(calls))
}

// unanswered refuses an assistant turn whose calls did not all get their
// result: the model's turn after it would have no result to read.
func unanswered(s *Source, pending int, answered []bool) error {
	for pos, done := range answered {
		if !done {
			m := s.messages[pending]
			return fmt.Errorf("tool call %d of assistant turn messages[%d] (%s, id %q) is never answered by a tool result: the source cannot be followed past it",
				pos, pending, m.callNames[pos], m.callIDs[pos])
		}
	}
	return nil
}

// Turns is how many assistant turns the source asks for: its assistant
// turns, plus one when it ends with a user or tool turn.
func (s *Source) Turns() int { return len(s.turns) }

// Tools are the conversation's tools, as given to Parse.
func (s *Source) Tools() json.RawMessage { return s.tools }

// BytesPerToken is about how many bytes of a message's JSON make a token,
// its markers included: what generate sizes a prompt without token ids by,
// and estimate's help states.
const BytesPerToken = 3

// Growth is the tokens the source's user and tool turns are expected to add
// to each later prompt, besides the model's answers: LaterBytes at about
// BytesPerToken bytes a token, spread evenly over the turns after the first (0 for a
// conversation of one turn). generate's budgets and estimate expect a
// conversation's prompts to grow by it.
func (s *Source) Growth() float64 {
	later := s.Turns() - 1
	if later <= 0 {
		return 0
	}
	return float64(s.LaterBytes()) / BytesPerToken / float64(later)
}

// LaterBytes is the size in bytes of the source's turns that later prompts
// add besides the model's answers: its user and tool turns after the first
// assistant turn. Budgets read it to expect how a conversation's prompts grow.
func (s *Source) LaterBytes() int {
	n := 0
	for _, m := range s.messages[s.turns[0]:] {
		if m.role != "assistant" {
			n += len(m.raw)
		}
	}
	return n
}
