package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/record"
)

// ledger is one budget: what completed answers spent plus what the requests
// in flight may still spend. A request starts only when its worst case fits,
// so the budget is refused before it is spent, never after. A request that
// does not fit waits for those in flight: their answers are usually far
// shorter than their worst case, and settling them makes room.
//
// What an answer spent is counted as spent, always, even when it is more
// than it reserved (a server that answers past max_tokens, or charges more
// than the worst-case price): it was paid for. The moment the spending
// reaches the limit no request starts any more; what was in flight then
// finishes, is written and counted, and is all a budget can be passed by.
type ledger struct {
	limit    float64 // 0: no budget
	spent    float64
	reserved float64
	// pledged is what the conversations in flight expect their later
	// turns to spend (see pledge): only a new conversation or request
	// must fit beside it.
	pledged float64
	// overReserved counts the answers that spent more than they reserved;
	// afterReached those that came in once the limit was reached.
	overReserved, afterReached int
}

func (l *ledger) fits(worst float64) bool {
	return l.limit == 0 || l.spent+l.reserved+worst <= l.limit
}

// reached reports whether the spending has reached the limit.
func (l *ledger) reached() bool { return l.limit > 0 && l.spent >= l.limit }

// settle replaces a reservation of held with what was spent.
func (l *ledger) settle(held, spent float64) {
	wasReached := l.reached()
	l.spent += spent
	if spent > held {
		l.overReserved++
	}
	if wasReached {
		l.afterReached++
	}
}

// pledge is what a conversation in flight (generate --turns all) expects
// its later turns to spend: each its prompt, grown by an answer a turn, and
// an answer, at the run's mean answer length (an expectation, not a worst
// case: at max_tokens a pledge would keep a handful of conversations in
// flight). A record starts only when its worst case and its pledge fit
// beside the pledges of the conversations in flight, so that new records do
// not take the room the later turns of conversations under way need (which
// would end them all at the budget after a turn or two); a later turn books
// a reservation of its own, its worst case, and takes its share off its
// conversation's pledge.
type pledge struct {
	tokens, usd float64
	turns       int
}

// conversationOutlook is what a pledge expects of a conversation.
type conversationOutlook struct {
	laterTurns int
	meanAnswer float64 // tokens of an answer
	growth     float64 // tokens the source adds to each later prompt (its user and tool turns), besides the answer
}

// newPledge is the pledge of a conversation after a first prompt of
// promptTokens; the caller holds b.mu.
func (b *budget) newPledge(promptTokens int, c conversationOutlook) pledge {
	p := pledge{turns: c.laterTurns}
	meanAnswer := c.meanAnswer
	for i := 1; i <= c.laterTurns; i++ {
		prompt := float64(promptTokens) + float64(i)*(meanAnswer+c.growth)
		p.usd += (prompt + meanAnswer) * b.usdPerToken
		switch b.mode {
		case record.CountPrompt:
			p.tokens += prompt
		case record.CountCompletion:
			p.tokens += meanAnswer
		default:
			p.tokens += prompt + meanAnswer
		}
	}
	return p
}

// share is one turn's part of p.
func (p pledge) share() pledge {
	if p.turns == 0 {
		return pledge{}
	}
	n := float64(p.turns)
	return pledge{tokens: p.tokens / n, usd: p.usd / n, turns: 1}
}

// reservation is what one request holds against the budgets.
type reservation struct {
	tokens float64
	usd    float64
	// held: it is on the ledgers until committed or cancelled. A
	// conversation settles each turn as it ends, so that between its
	// turns it holds nothing.
	held bool
}

// budget holds the token and cost ledgers of a run.
type budget struct {
	mu     sync.Mutex
	tokens ledger
	cost   ledger
	mode   record.CountMode
	// usdPerToken is the worst-case price; 0 when there is no cost budget.
	// An answer charged more raises it (priceLearnt).
	usdPerToken float64
	firstPrice  float64
	priceLearnt bool
	// held counts the reservations not yet settled (committed or
	// cancelled); settled is notified whenever one is.
	held    int
	settled notice
	// pledgedTurns counts the later turns pledged (see pledge).
	pledgedTurns int
	// failedUSD is what failed attempts were charged (part of cost.spent),
	// failedCharged how many attempts that was.
	failedUSD     float64
	failedCharged int
	// refused is the worst case of the request that did not fit with
	// nothing in flight, and refusedMax its answer limit: for stopReason.
	refused    reservation
	refusedMax int
}

func newBudget(cfg *Config, alreadySpent int64, usdPerToken float64) *budget {
	return &budget{
		tokens:      ledger{limit: float64(cfg.TokenBudget), spent: float64(alreadySpent)},
		cost:        ledger{limit: cfg.CostBudget},
		mode:        cfg.CountMode,
		usdPerToken: usdPerToken,
		firstPrice:  usdPerToken,
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

// errBudgetReached means no request may start any more: the spending has
// reached a budget, or the next request does not fit in it even with no
// request in flight, so that nothing still running can make room.
var errBudgetReached = errors.New("budget reached")

// reserve books the worst case of the next request. While it does not fit
// and requests in flight hold reservations, it waits for them to settle
// (what an answer used replaces its worst case) and tries again. It fails
// with errBudgetReached (see stopReason) when the spending has reached a
// budget, or nothing is in flight and the request still does not fit, and
// with ctx's cause when dispatching stops meanwhile.
func (b *budget) reserve(ctx context.Context, promptTokens, maxTokens int) (reservation, error) {
	r, _, err := b.book(ctx, promptTokens, maxTokens, conversationOutlook{}, nil)
	return r, err
}

// reserveConversation books a conversation's first turn as reserve does,
// and pledges its later turns (see pledge).
func (b *budget) reserveConversation(ctx context.Context, promptTokens, maxTokens int, c conversationOutlook) (reservation, pledge, error) {
	return b.book(ctx, promptTokens, maxTokens, c, nil)
}

// reserveTurn books a later turn of a conversation, which must fit beside
// what is spent and reserved but not beside the pledges (its own is among
// them); it takes one turn off p.
func (b *budget) reserveTurn(ctx context.Context, promptTokens, maxTokens int, p *pledge) (reservation, error) {
	r, _, err := b.book(ctx, promptTokens, maxTokens, conversationOutlook{}, p)
	return r, err
}

// book is reserve, reserveConversation and reserveTurn: a new record
// (turnOf nil) must fit with its pledge (of c) beside the pledges
// in flight; a conversation's later turn (turnOf its pledge) beside what is
// spent and reserved.
func (b *budget) book(ctx context.Context, promptTokens, maxTokens int, c conversationOutlook, turnOf *pledge) (reservation, pledge, error) {
	for {
		settled := b.settled.next()
		b.mu.Lock()
		r := b.worstCase(promptTokens, maxTokens) // the price may have been learnt meanwhile
		p := b.newPledge(promptTokens, c)
		need := r
		if turnOf == nil {
			need.tokens += p.tokens + b.tokens.pledged
			need.usd += p.usd + b.cost.pledged
		}
		reached := b.tokens.reached() || b.cost.reached()
		fits := !reached && b.tokens.fits(need.tokens) && b.cost.fits(need.usd)
		if fits {
			r.held = true
			b.tokens.reserved += r.tokens
			b.cost.reserved += r.usd
			b.held++
			b.addPledge(p, 1)
			if turnOf != nil {
				share := turnOf.share()
				b.addPledge(share, -1)
				turnOf.tokens, turnOf.usd, turnOf.turns = turnOf.tokens-share.tokens, turnOf.usd-share.usd, turnOf.turns-share.turns
			}
		}
		// A new record waits for the conversations between turns too:
		// their next turns settle, or they end and free their pledges.
		busy := b.held > 0 || turnOf == nil && b.pledgedTurns > 0
		if !fits && !reached && !busy {
			b.refused, b.refusedMax = need, maxTokens
		}
		b.mu.Unlock()
		switch {
		case fits:
			return r, p, nil
		case reached || !busy:
			return reservation{}, pledge{}, errBudgetReached
		}
		select {
		case <-settled:
		case <-ctx.Done():
			return reservation{}, pledge{}, context.Cause(ctx)
		}
	}
}

// addPledge adds (sign 1) or takes off (-1) a pledge; the caller holds b.mu.
func (b *budget) addPledge(p pledge, sign float64) {
	b.tokens.pledged += sign * p.tokens
	b.cost.pledged += sign * p.usd
	b.pledgedTurns += int(sign) * p.turns
}

// unpledge takes what is left of a conversation's pledge off the ledgers:
// it ended, or failed.
func (b *budget) unpledge(p *pledge) {
	if p.turns == 0 {
		return
	}
	b.mu.Lock()
	b.addPledge(*p, -1)
	*p = pledge{}
	b.settled.notify()
	b.mu.Unlock()
}

// stopReason says why errBudgetReached: for the summary.
func (b *budget) stopReason() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tokens.reached() || b.cost.reached() {
		return "budget reached: what the answers spent reached it; no request starts any more"
	}
	if r := b.refused; r.tokens > 0 && !b.tokens.fits(r.tokens) {
		left := max(b.tokens.limit-b.tokens.spent, 0)
		reason := fmt.Sprintf("budget reached: the next request (up to %s tokens: its prompt and --%s %s) does not fit in the %s left, even with nothing in flight",
			cliutil.Thousands(int64(r.tokens)), FlagMaxTokens, cliutil.Thousands(int64(b.refusedMax)), cliutil.Thousands(int64(left)))
		if r.tokens > b.tokens.limit {
			// No request of this size can ever start: say what would.
			reason += fmt.Sprintf("; --%s %s is more than the whole --%s %s allows one request: lower --%s or raise the budget",
				FlagMaxTokens, cliutil.Thousands(int64(b.refusedMax)), FlagTokenBudget, cliutil.Thousands(int64(b.tokens.limit)), FlagMaxTokens)
		}
		return reason
	}
	return "budget reached: the next request might pass it even with nothing in flight"
}

// release takes a settled reservation off the ledgers and wakes a waiting
// reserve; the caller holds b.mu. One not held (settled already) is left.
func (b *budget) release(r reservation) {
	if !r.held {
		return
	}
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

// commit replaces a reservation with what the answer spent, whatever that
// is: it was paid for. It reports true when this answer made the spending
// reach a budget: no request may start any more.
func (b *budget) commit(r reservation, tokens int64, res *backend.Result) (reached bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	usd := b.costOf(res)
	b.learnPrice(res, usd)
	b.release(r)
	before := b.tokens.reached() || b.cost.reached()
	b.tokens.settle(r.tokens, float64(tokens))
	b.cost.settle(r.usd, usd)
	return !before && (b.tokens.reached() || b.cost.reached())
}

// chargeFailed counts what a failed attempt was charged as spent: it was
// paid for, answer or not. It reports true when this charge made the
// spending reach the cost budget: no request may start any more.
func (b *budget) chargeFailed(usd float64) (reached bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	before := b.cost.reached()
	b.cost.spent += usd
	b.failedUSD += usd
	b.failedCharged++
	return !before && b.cost.reached()
}

// reached reports whether the spending has reached a budget.
func (b *budget) reached() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens.reached() || b.cost.reached()
}

// costReached reports whether the spending has reached the cost budget:
// no attempt, first or retry, may start any more.
func (b *budget) costReached() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cost.reached()
}

// learnPrice raises the worst-case price to what an answer was charged
// when that is more (a server whose /models lists less than it bills, a
// --max-price set too low): the reservations of the requests that start
// from then on are the real worst case, and the budget is passed by no
// more than the requests already in flight. The caller holds b.mu.
func (b *budget) learnPrice(res *backend.Result, usd float64) {
	tokens := res.PromptTokens + res.CompletionTokens
	if res.Cost == nil || tokens <= 0 {
		return
	}
	if price := usd / float64(tokens); price > b.usdPerToken {
		b.usdPerToken = price
		b.priceLearnt = true
	}
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
	return max(b.tokens.limit-b.tokens.spent, 0)
}

// passed says, for the closing lines, how each budget was passed, if one
// was: by how much, why, and that nothing paid for was thrown away.
func (b *budget) passed() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	if l := b.tokens; l.limit > 0 && l.spent > l.limit {
		out = append(out, fmt.Sprintf("token budget %s passed by %s (%s %s tokens counted): %s",
			cliutil.Thousands(int64(l.limit)), cliutil.Thousands(int64(l.spent-l.limit)), cliutil.Thousands(int64(l.spent)), b.mode,
			passedWhy(l, "answers used more tokens than they reserved (prompt + max_tokens: the server answered past max_tokens or counted the prompt higher)")))
	}
	if l := b.cost; l.limit > 0 && l.spent > l.limit {
		why := "answers cost more than their worst case"
		if b.priceLearnt {
			why += fmt.Sprintf(" at $%s per million tokens (charged up to $%s)", pricePerMillion(b.firstPrice), pricePerMillion(b.usdPerToken))
		}
		line := fmt.Sprintf("cost budget $%.2f passed by $%.4f ($%.4f spent): %s", l.limit, l.spent-l.limit, l.spent, passedWhy(l, why))
		if b.failedCharged > 0 {
			line += fmt.Sprintf("; %s that failed were charged $%.4f", cliutil.Count(int64(b.failedCharged), "attempt"), b.failedUSD)
		}
		out = append(out, line)
	}
	return out
}

// passedWhy explains a passed ledger: the answers over their reservation,
// and those in flight when it was reached, all written since they were paid
// for.
func passedWhy(l ledger, why string) string {
	s := fmt.Sprintf("%s %s", cliutil.Count(int64(l.overReserved), "answer"), strings.TrimPrefix(why, "answers "))
	if l.afterReached > 0 {
		s += fmt.Sprintf("; the %s in flight when it was reached finished and were written: they were paid for", cliutil.Count(int64(l.afterReached), "answer"))
	} else {
		s += "; no answer was dropped: each was paid for"
	}
	return s
}

// pricePerMillion writes a price per token as dollars per million tokens.
func pricePerMillion(usdPerToken float64) string {
	return strconv.FormatFloat(usdPerToken*PerMillion, 'f', -1, 64)
}

// spentUSD is the money spent so far, and how much of it failed attempts
// were charged in how many attempts, for the summary.
func (b *budget) spentUSD() (usd, failedUSD float64, failedAttempts int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cost.spent, b.failedUSD, b.failedCharged
}

// standing is the tokens written against the token budget (earlier runs'
// included) and its limit, and the money spent and the cost budget, for
// the progress line and the status file (limits 0: none).
func (b *budget) standing() (tokens, tokenLimit int64, usd, usdLimit float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return int64(b.tokens.spent), int64(b.tokens.limit), b.cost.spent, b.cost.limit
}

// PerMillion converts a price in USD per million tokens (--max-price) to USD per
// token.
const PerMillion = 1e6
