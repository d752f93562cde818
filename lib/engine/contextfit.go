package engine

import (
	"fmt"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
)

// contextFit caps each request's max tokens at what the model's context
// leaves after its prompt, and refuses before sending a prompt that leaves
// less than minRoom: SGLang refuses a prompt of the context length or more,
// and one whose prompt and max_new_tokens pass it, with HTTP 400, and so do
// providers; an answer cut short by a cap it never knew of is worse than a
// known one. The zero value caps nothing.
type contextFit struct {
	// length is the context length: --context-length, else the smallest
	// the servers report (SGLang's /server_info context_length, a model
	// list's context_length); 0 when none is known.
	length int
	// maxCompletion caps every answer whatever its prompt (OpenRouter's
	// top_provider.max_completion_tokens); 0 when none.
	maxCompletion int
	// minRoom is the fewest answer tokens a prompt must leave (--min-room).
	minRoom int
}

// newContextFit is the cap of a run: --context-length, else the servers'.
func newContextFit(cfg *Config, servers []*server) contextFit {
	f := contextFit{length: cfg.ContextLength, minRoom: cfg.MinRoom}
	for _, s := range servers {
		if cfg.ContextLength == 0 && s.contextLength > 0 && (f.length == 0 || s.contextLength < f.length) {
			f.length = s.contextLength
		}
		if s.maxCompletion > 0 && (f.maxCompletion == 0 || s.maxCompletion < f.maxCompletion) {
			f.maxCompletion = s.maxCompletion
		}
	}
	return f
}

// known reports whether the run has a context length to cap at.
func (f contextFit) known() bool { return f.length > 0 || f.maxCompletion > 0 }

// limit is the most tokens an answer to a prompt of promptTokens may ask
// for, and false when the prompt leaves less than minRoom.
func (f contextFit) limit(promptTokens, maxTokens int) (int, bool) {
	if f.maxCompletion > 0 {
		maxTokens = min(maxTokens, f.maxCompletion)
	}
	if f.length <= 0 {
		return maxTokens, true
	}
	room := f.length - promptTokens
	if room < max(f.minRoom, 1) {
		return 0, false
	}
	return min(maxTokens, room), true
}

// overflow is the error of a prompt that cannot fit, in the words SGLang
// uses for it, with what to do.
func (f contextFit) overflow(promptTokens int) *backend.Error {
	const fix = "shorten the prompt, or use a model with a longer context"
	room := f.length - promptTokens
	if room <= 0 {
		return &backend.Error{Kind: backend.KindContextOverflow,
			Message: fmt.Sprintf("not sent: the prompt (%d tokens) is not shorter than the model's context length (%d tokens): %s", promptTokens, f.length, fix)}
	}
	return &backend.Error{Kind: backend.KindContextOverflow,
		Message: fmt.Sprintf("not sent: the prompt (%d tokens) leaves %s of the model's context length (%d tokens) for the answer, fewer than --%s %d: %s",
			promptTokens, cliutil.Count(int64(room), "token"), f.length, FlagMinRoom, f.minRoom, fix)}
}

// fit caps j's max tokens at what its prompt leaves of the context, and
// returns the error of a prompt that leaves too little. Only an exact prompt
// size is trusted (token ids, or the record's prompt_tokens): an estimate
// from the messages' bytes runs high, and would cut answers that fit. The
// capped value is what gen.params.max_tokens records.
func (f contextFit) fit(j *job) *backend.Error {
	if !f.known() || !j.exactPrompt {
		return nil
	}
	limit, ok := f.limit(j.promptTokens, j.req.Params.MaxTokens)
	if !ok {
		return f.overflow(j.promptTokens)
	}
	if limit < j.req.Params.MaxTokens {
		j.req.Params.MaxTokens = limit
		j.params = ParamsJSON(j.req.Params)
	}
	return nil
}
