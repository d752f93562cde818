package engine

import (
	"encoding/json"
	"strings"
	"sync/atomic"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/chat"
)

// retokenizer gives OpenAI-style answers the output_ids the model generated,
// as nearly as the text allows: the conversation is rendered by the model's
// chat template with the answer as the last assistant turn (reasoning,
// content and tool calls where the template puts them) and without it (with
// the generation prompt); the ids of what the answer added are the output.
type retokenizer struct {
	model *chat.Model
	// fallbacks counts answers whose rendering did not extend the prompt's
	// (a template that rewrites earlier turns): those are the answer text's
	// own ids.
	fallbacks atomic.Int64
}

// outputIDs returns the ids of res as an answer to j.
func (r *retokenizer) outputIDs(j *job, res *backend.Result) []int {
	model := modelFor(r.model, j)
	prompt, err := model.Render(j.req.Messages, j.req.Tools, true)
	if err == nil {
		var full string
		if full, err = model.Render(withAnswer(j.req.Messages, res), j.req.Tools, false); err == nil && strings.HasPrefix(full, prompt) {
			// The template closes the turn with a newline the model never
			// generates: the answer ends at its end-of-turn token.
			return model.Encode(strings.TrimRight(full[len(prompt):], "\n"))
		}
	}
	r.fallbacks.Add(1)
	return r.model.Encode(res.Reasoning + res.Text)
}

// modelFor is model as it renders j: with the template variables of j's
// thinking setting, so that an answer generated with thinking off is
// rendered with it off.
func modelFor(model *chat.Model, j *job) *chat.Model {
	if j.req.Thinking == nil {
		return model
	}
	return model.WithArgs(j.req.Thinking.TemplateArgs())
}

// withAnswer is messages with the answer appended as an assistant turn,
// built as chat builds it for to-train, so that both render the same turn.
func withAnswer(messages json.RawMessage, res *backend.Result) json.RawMessage {
	toolCalls := res.ToolCalls
	if string(toolCalls) == "null" {
		toolCalls = nil
	}
	return chat.AppendMessage(messages, chat.AssistantTurn(res.Text, res.Reasoning, toolCalls))
}
