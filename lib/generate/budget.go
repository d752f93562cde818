package generate

import (
	"context"
	"errors"
	"sync"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/record"
)

// ledger is one budget: what completed answers spent plus what the requests
// in flight may still spend. A request starts only when its worst case fits,
// so the budget is refused before it is spent, never after. A request that
// does not fit waits for those in flight: their answers are usually far
// shorter than their worst case, and settling them makes room.
type ledger struct {
	limit    float64 // 0: no budget
	spent    float64
	reserved float64
}

func (l *ledger) fits(worst float64) bool {
	return l.limit == 0 || l.spent+l.reserved+worst <= l.limit
}

// reservation is what one request holds against the budgets.
type reservation struct {
	tokens float64
	usd    float64
}

// budget holds the token and cost ledgers of a run.
type budget struct {
	mu     sync.Mutex
	tokens ledger
	cost   ledger
	mode   record.CountMode
	// usdPerToken is the worst-case price; 0 when there is no cost budget.
	usdPerToken float64
	// held counts the reservations not yet settled (committed or
	// cancelled); settled is notified whenever one is.
	held    int
	settled notice
}

func newBudget(cfg *config, alreadySpent int64, usdPerToken float64) *budget {
	return &budget{
		tokens:      ledger{limit: float64(cfg.tokenBudget), spent: float64(alreadySpent)},
		cost:        ledger{limit: cfg.costBudget},
		mode:        cfg.countMode,
		usdPerToken: usdPerToken,
	}
}

// worstCase is the most a request may add to each ledger: its prompt and
// its own answer limit (a line of an OpenAI Batch file may set one above
// --max-tokens).
func (b *budget) worstCase(promptTokens, maxTokens int) reservation {
	var r reservation
	switch b.mode {
	case record.CountPrompt:
		r.tokens = float64(promptTokens)
	case record.CountCompletion:
		r.tokens = float64(maxTokens)
	default:
		r.tokens = float64(promptTokens + maxTokens)
	}
	r.usd = float64(promptTokens+maxTokens) * b.usdPerToken
	return r
}

// errBudgetReached means the next request does not fit in a budget even
// with no request in flight: nothing that is still running can make room.
var errBudgetReached = errors.New("budget reached")

// reserve books the worst case of the next request. While it does not fit
// and requests in flight hold reservations, it waits for them to settle
// (what an answer used replaces its worst case) and tries again. It fails
// with errBudgetReached when nothing is in flight and the request still
// does not fit, or with ctx's cause when dispatching stops meanwhile.
func (b *budget) reserve(ctx context.Context, promptTokens, maxTokens int) (reservation, error) {
	r := b.worstCase(promptTokens, maxTokens)
	for {
		settled := b.settled.next()
		b.mu.Lock()
		fits := b.tokens.fits(r.tokens) && b.cost.fits(r.usd)
		if fits {
			b.tokens.reserved += r.tokens
			b.cost.reserved += r.usd
			b.held++
		}
		held := b.held
		b.mu.Unlock()
		switch {
		case fits:
			return r, nil
		case held == 0:
			return reservation{}, errBudgetReached
		}
		select {
		case <-settled:
		case <-ctx.Done():
			return reservation{}, context.Cause(ctx)
		}
	}
}

// release takes a settled reservation off the ledgers and wakes a waiting
// reserve; the caller holds b.mu.
func (b *budget) release(r reservation) {
	b.tokens.reserved -= r.tokens
	b.cost.reserved -= r.usd
	b.held--
	b.settled.notify()
}

// cancel returns a reservation unused: the request failed or was cancelled.
func (b *budget) cancel(r reservation) {
	b.mu.Lock()
	b.release(r)
	b.mu.Unlock()
}

// commit replaces a reservation with what the answer cost. It reports false,
// spending nothing, when the answer would take a budget past its limit
// (the server returned more than it was asked for): it must be dropped.
func (b *budget) commit(r reservation, tokens int64, res *backend.Result) bool {
	usd := b.costOf(res)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.release(r)
	t := float64(tokens)
	if b.tokens.limit > 0 && b.tokens.spent+t > b.tokens.limit || b.cost.limit > 0 && b.cost.spent+usd > b.cost.limit {
		return false
	}
	b.tokens.spent += t
	b.cost.spent += usd
	return true
}

// costOf is the answer's usage.cost, else its tokens at the worst-case price.
func (b *budget) costOf(res *backend.Result) float64 {
	if res.Cost != nil {
		return *res.Cost
	}
	return float64(res.PromptTokens+res.CompletionTokens) * b.usdPerToken
}

// tokenCount is a record's tokens under the --count mode.
func tokenCount[T int64 | float64](mode record.CountMode, prompt, completion T) T {
	switch mode {
	case record.CountPrompt:
		return prompt
	case record.CountCompletion:
		return completion
	}
	return prompt + completion
}

// tokensLeft is what remains of the token budget (-1: no token budget), for the
// ETA.
func (b *budget) tokensLeft() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tokens.limit == 0 {
		return -1
	}
	return b.tokens.limit - b.tokens.spent
}

// spentUSD is the money spent so far, for the summary.
func (b *budget) spentUSD() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cost.spent
}
