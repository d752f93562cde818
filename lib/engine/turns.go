package engine

import (
	"errors"
	"fmt"

	"github.com/synthpipe/synthpipe/lib/answerformat"
	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/conversation"
	"github.com/synthpipe/synthpipe/lib/record"
)

// Values of --turns.
const (
	TurnsLast = "last"
	TurnsAll  = "all"
)

// parseConversation reads a record's source conversation for --turns all.
func parseConversation(messages, tools []byte) (*conversation.Source, error) {
	if len(messages) == 0 || messages[0] != '[' {
		return nil, fmt.Errorf(`no "messages" array: --%s all regenerates the conversation in it (tokenize-prompts --turns all writes it)`, FlagTurns)
	}
	if len(tools) == 0 || tools[0] != '[' {
		tools = nil
	}
	return conversation.Parse(messages, tools)
}

// turnRunner regenerates conversations: it renders each turn's prompt
// (token-id backends) or sends the conversation as messages, and reads
// each answer back into the next turn.
type turnRunner struct {
	model    *chat.Model          // nil on a messages backend without --tokenizer
	format   *answerformat.Format // reads answers from token ids; nil on messages backends
	tokenIDs bool                 // the backend takes token ids
	opts     conversation.Options
	fit      contextFit // caps each turn's max tokens at what its prompt leaves of the context
}

// newTurnRunner builds the runner of --turns all, nil without it. A model
// whose answers cannot be read is refused here, before anything is sent.
func newTurnRunner(cfg *Config, model *chat.Model) (*turnRunner, error) {
	if !cfg.TurnsAll {
		return nil, nil
	}
	t := &turnRunner{model: model, tokenIDs: cfg.Kind.Input == backend.TokenIDs}
	if t.tokenIDs {
		f, err := answerformat.ForTokenizer(model.Tok, cfg.Tokenizer)
		if err != nil {
			return nil, err
		}
		t.format = f
	} else {
		// OpenRouter reads an assistant turn's reasoning back from
		// "reasoning"; vLLM and SGLang from reasoning_content.
		t.opts.ReasoningAlso = []string{"reasoning"}
	}
	return t, nil
}

// walk regenerates j's conversation, turn after turn, each turn sent as
// soon as the answer before it is in (while the server still holds its
// prefix). Each turn books its own worst case against the budgets before it
// is sent and settles what it spent when it is in, as a single request
// does: the dispatcher booked the first. A turn that fails makes the whole
// conversation a failure, and a stop cancels it: a later run redoes it
// whole. A budget reached before a turn ends the conversation there, kept.
func (t *turnRunner) walk(w *workers, j *job, o *outcome) {
	wk := j.conv.Walk(t.opts)
	var prompts chat.TurnPrompts // each turn's prompt encodes what the last one did not
	id := j.req.ID
	defer func() { j.req.ID = id }()
	defer w.budget.unpledge(&j.pledge)
	sent := 0 // bytes of the messages of the turn before
	maxTokens := j.req.Params.MaxTokens
	defer func() { j.req.Params.MaxTokens = maxTokens }()
	for n := 0; wk.Ended() == ""; n++ {
		if n > 0 && w.stops.dispatch.Err() != nil && !w.budget.reached() {
			o.cancelled = true // stopping: no new turn starts
			return
		}
		if err := t.prepare(j, wk, &prompts); err != nil {
			o.err = &backend.Error{Kind: backend.KindRequest, Message: fmt.Sprintf("turn %d: %v", n+1, err)}
			return
		}
		if !t.capTurn(j, maxTokens) {
			if n == 0 {
				o.err = t.fit.overflow(len(j.req.InputIDs))
				return
			}
			wk.End(conversation.EndContext)
			break
		}
		if n > 0 {
			if !t.reserveTurn(w, j, t.promptBound(j, wk, sent), o) {
				wk.End(conversation.EndBudget)
				break
			}
			j.req.ID = fmt.Sprintf("%s#turn%d", id, n+1) // SGLang's rid: one per request
		}
		sent = len(j.req.Messages)
		o.res, o.err = nil, nil
		w.sendWait(j, o, n == 0)
		if o.res == nil {
			return
		}
		tr := t.turn(j, o)
		wk.Add(tr)
		t.settleTurn(w, j, tr, o.res)
	}
	if !o.cancelled {
		o.walk = wk
	}
}

// capTurn caps the turn's max tokens at what its prompt leaves of the
// context length; false when it leaves too little. Only a token-id
// backend knows a turn's prompt size exactly.
func (t *turnRunner) capTurn(j *job, maxTokens int) bool {
	if !t.tokenIDs {
		return true
	}
	limit, ok := t.fit.limit(len(j.req.InputIDs), maxTokens)
	j.req.Params.MaxTokens = limit
	return ok
}

// promptBound is the most tokens the next turn's prompt can be: its
// rendered length on a token-id backend; else the last prompt plus what the
// messages grew by since, in bytes (a byte-level tokenizer makes at most a
// token of each byte, and the JSON of a message is longer than the markers
// a template puts around it).
func (t *turnRunner) promptBound(j *job, wk *conversation.Walk, sentBytes int) int {
	if t.tokenIDs {
		return len(j.req.InputIDs)
	}
	last := wk.Turns()[len(wk.Turns())-1]
	return last.PromptTokens + max(len(j.req.Messages)-sentBytes, 0)
}

// reserveTurn books the next turn's worst case: its prompt and --max-tokens.
// false: the conversation goes no further, because a budget is reached (it
// ends there, kept: its turns were paid for) or the run stops (o.cancelled:
// a later run redoes it whole).
func (t *turnRunner) reserveTurn(w *workers, j *job, prompt int, o *outcome) bool {
	r, err := w.budget.reserveTurn(w.stops.dispatch, prompt, j.req.Params.MaxTokens, &j.pledge)
	switch {
	case errors.Is(err, errBudgetReached):
		w.stops.stop(w.budget.stopReason(), nil, false)
		return false
	case err != nil:
		o.cancelled = true
		return false
	}
	j.reserve = r
	return true
}

// settleTurn replaces the turn's reservation with what it spent, by the
// same rule as any answer: lib/record sums a conversation's turns the same
// way, so that budget-cut and tokstat count what the budget counted.
func (t *turnRunner) settleTurn(w *workers, j *job, tr conversation.Turn, res *backend.Result) {
	tokens := tokenCount(w.cfg.CountMode, int64(tr.PromptTokens), int64(tr.CompletionTokens))
	reached := w.budget.commit(j.reserve, tokens, res)
	j.reserve = reservation{}
	if reached {
		w.stops.stop(w.budget.stopReason(), nil, false)
	}
}

// prepare sets j's request to the conversation so far.
func (t *turnRunner) prepare(j *job, wk *conversation.Walk, prompts *chat.TurnPrompts) error {
	if !t.tokenIDs {
		j.req.Messages, j.req.Tools = wk.Messages(), wk.Tools()
		return nil
	}
	ids, err := prompts.Next(modelFor(t.model, j), wk.MessageList(), wk.Tools())
	if err != nil {
		return fmt.Errorf("chat template: %w", err)
	}
	j.req.InputIDs = ids
	return nil
}

// turn is what one answer adds to the conversation.
func (t *turnRunner) turn(j *job, o *outcome) conversation.Turn {
	res := o.res
	tr := conversation.Turn{
		PromptTokens:     res.PromptTokens,
		OutputIDs:        res.OutputIDs,
		FinishReason:     res.FinishReason,
		CompletionTokens: res.CompletionTokens,
		CachedTokens:     res.CachedTokens,
		Usage:            res.Usage,
		LatencyMS:        res.Latency.Milliseconds(),
		Attempts:         o.attempts,
	}
	if t.tokenIDs {
		tr.PromptTokens = len(j.req.InputIDs) // what was sent, whatever the server counts
	}
	var err error
	if t.format != nil {
		tr.Answer, err = t.format.Read(j.req.InputIDs, res.OutputIDs)
	} else {
		tr.Answer, err = answerformat.FromMessage(res.Text, res.Reasoning, res.ToolCalls, res.FinishReason == "stop" || res.FinishReason == "tool_calls")
	}
	if err != nil {
		tr.ReadError = err.Error()
	}
	return tr
}

// handleConversation writes a regenerated conversation: the source record
// with the conversation, its turns, why it ended and its token counts (see
// synthpipe-records(7)); its turns were counted against the budgets as
// each ended.
func (c *collector) handleConversation(o *outcome) {
	j, wk := o.job, o.walk
	prompt, completion, _ := wk.Totals() // every turn settled its own tokens and charge
	for _, t := range wk.Turns() {
		c.lengths.Observe(t.CompletionTokens, o.res.Latency)
	}
	c.count(func(t *tally) {
		t.ok++
		t.promptTokens += int64(prompt)
		t.completionTokens += int64(completion)
		if wk.Ended() == conversation.EndLength {
			t.truncated++
		}
	})
	members := wk.Members(record.FieldPromptTokens, record.FieldCompletionTokens)
	ms := make([]member, 0, len(members)+1)
	for _, m := range members {
		ms = append(ms, member{m.Key, m.Raw})
	}
	ms = append(ms, member{record.FieldGen, c.genMember(j, o.res, o.attempts)})
	ms = appendThinking(ms, j)
	c.emit(j.seq, outLine{addMembers(j.line, ms, true), true})
}
