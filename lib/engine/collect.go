package engine

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/record"
)

// collector writes every outcome: results to stdout, failures to the errors
// file. It is the only goroutine that writes, settles the budgets and
// counts what became of each record; it flushes whenever no more outcomes
// are waiting, once the goroutines ready to run had their turn, so that
// each record reaches the next stage of the pipeline as soon as it is done
// without a write per record under load.
type collector struct {
	cfg         *Config
	results     chan *outcome
	backlog     *backlog
	budget      *budget
	lengths     *capacity.LengthModel
	reorder     *reorder // nil without --ordered
	out         *sink
	errs        *sink // nil without --errors
	stops       *Stops
	backendName string
	ParamsJSON  []byte // the sampling parameters, for each result's gen.params

	mu    sync.Mutex // tally is written by the collector, read by the progress line
	tally tally
}

// submit hands an outcome to the collector.
func (c *collector) submit(o *outcome) {
	c.backlog.add()
	c.results <- o
}

// close says no outcome will be submitted any more.
func (c *collector) close() { close(c.results) }

// counts is the tally now.
func (c *collector) counts() tally {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tally
}

// run writes outcomes until close, then closes done.
func (c *collector) run(done chan<- struct{}) {
	defer close(done)
	for o := range c.results {
		c.handle(o)
		if len(c.results) == 0 {
			// Under load the next outcomes are on goroutines ready to
			// run: they go first, and one write takes them all.
			runtime.Gosched()
			if len(c.results) == 0 {
				c.flush()
			}
		}
		c.backlog.done()
	}
	c.flush()
	if c.reorder != nil {
		// What is still held waits for records that will never come
		// (cancelled, not started): write it in order anyway.
		for _, l := range c.reorder.rest() {
			c.write(l)
		}
		c.flush()
	}
}

func (c *collector) handle(o *outcome) {
	j := o.job
	switch {
	case o.cut:
		c.count(func(t *tally) { t.cut++ })
		c.emit(j.seq, outLine{})
	case o.walk != nil:
		c.handleConversation(o)
	case o.res != nil:
		res := o.res
		prompt := promptTokensOf(j, res)
		if c.budget.commit(j.reserve, tokenCount(c.cfg.CountMode, int64(prompt), int64(res.CompletionTokens)), res) {
			// What was spent reached a budget: no request starts any
			// more; those in flight are paid for and finish.
			c.stops.stop(c.budget.stopReason(), nil, false)
		}
		c.lengths.Observe(res.CompletionTokens, res.Latency)
		c.count(func(t *tally) {
			t.ok++
			t.promptTokens += int64(prompt)
			t.completionTokens += int64(res.CompletionTokens)
			switch {
			case res.FinishReason == "length":
				t.truncated++
			case res.FinishReason == "abort":
				t.aborted++
			case res.CompletionTokens == 0 && res.Text == "" && len(res.ToolCalls) == 0:
				t.empty++
			}
		})
		c.emit(j.seq, outLine{c.resultLine(j, res, o.attempts), true})
	case o.cancelled:
		c.budget.cancel(j.reserve)
		c.count(func(t *tally) { t.cancelled++ })
		c.emit(j.seq, outLine{})
	default:
		c.budget.cancel(j.reserve)
		c.count(func(t *tally) {
			t.errors++
			if o.err != nil && o.err.Kind == backend.KindContextOverflow {
				t.contextOverflow++
			}
			if o.exhausted {
				t.retriesExhausted++
			}
		})
		c.writeError(j, o.err, o.attempts, o.chargedUSD)
		c.emit(j.seq, outLine{c.failureLine(j, o.err), false})
	}
}

func (c *collector) count(f func(*tally)) {
	c.mu.Lock()
	f(&c.tally)
	c.mu.Unlock()
}

// emit writes a record's output, in input order with --ordered; a nil
// line for a record that has none.
func (c *collector) emit(seq int64, l outLine) {
	if c.reorder == nil {
		if l.line != nil {
			c.write(l)
		}
		return
	}
	for _, ready := range c.reorder.put(seq, l) {
		c.write(ready)
	}
}

func (c *collector) write(l outLine) {
	if err := c.out.write(l.line, l.answer); err != nil {
		c.outputFailed(err)
	}
}

func (c *collector) flush() {
	if err := c.out.flush(); err != nil {
		c.outputFailed(err)
	}
	if c.errs != nil {
		if err := c.errs.flush(); err != nil {
			c.outputFailed(err)
		}
	}
}

// outputFailed stops the run when stdout closes (downstream is done: exit 0,
// which cliutil makes of EPIPE) or a write fails.
func (c *collector) outputFailed(err error) {
	c.stops.stop("output closed", err, true)
	c.count(func(t *tally) {
		t.lostAnswers, t.lostWhere = c.out.lost, c.out.lostWhere()
		if c.errs != nil {
			t.lostErrors, t.lostErrorsWhere = c.errs.lost, c.errs.lostWhere()
		}
	})
}

// writeError records a failure so that a later run can retry exactly it.
func (c *collector) writeError(j *job, e *backend.Error, attempts int, chargedUSD float64) {
	if c.errs == nil {
		return
	}
	line := addMembers(j.line, []member{{record.FieldError, errorMember(e, attempts, chargedUSD)}}, false)
	if err := c.errs.write(line, true); err != nil {
		c.outputFailed(err)
	}
}

// MaxUnwritten bounds the finished answers waiting for stdout.
const MaxUnwritten = 1024

// backlog counts the outcomes submitted to the collector and not yet
// written: a slow reader of stdout must hold back the dispatching, or
// finished answers would pile up in memory.
type backlog struct {
	n       atomic.Int64
	drained notice // an outcome was written
}

func (b *backlog) add() { b.n.Add(1) }

func (b *backlog) done() {
	if b.n.Add(-1) < MaxUnwritten {
		b.drained.notify()
	}
}

// waitRoom waits while MaxUnwritten outcomes wait for stdout; false when
// ctx ends first.
func (b *backlog) waitRoom(ctx context.Context) bool {
	return b.drained.await(ctx, func() bool { return b.n.Load() < MaxUnwritten })
}
