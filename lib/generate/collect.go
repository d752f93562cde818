package generate

import (
	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/record"
)

// collect writes every outcome: results to stdout, failures to the errors
// file. It is the only goroutine that writes, and it flushes whenever no
// more outcomes are waiting, so that each record reaches the next stage of
// the pipeline as soon as it is done without a write per record under load.
func (s *scheduler) collect(done chan<- struct{}) {
	defer close(done)
	for o := range s.results {
		s.handle(o)
		if len(s.results) == 0 {
			s.flush()
		}
		if s.unwritten.Add(-1) < maxUnwritten {
			select {
			case s.written <- struct{}{}:
			default:
			}
		}
	}
	s.flush()
	if s.reorder != nil {
		// What is still held waits for records that will never come
		// (cancelled, not started): write it in order anyway.
		for _, line := range s.reorder.rest() {
			s.write(line)
		}
		s.flush()
	}
}

func (s *scheduler) handle(o *outcome) {
	j := o.job
	switch {
	case o.res != nil:
		res := o.res
		prompt := promptTokensOf(j, res)
		if !s.budget.commit(j.reserve, tokenCount(s.cfg.countMode, int64(prompt), int64(res.CompletionTokens)), res) {
			s.count(func(t *tally) { t.cut++ })
			s.emit(j.seq, nil)
			return
		}
		s.lengths.observe(res.CompletionTokens, res.Latency)
		s.count(func(t *tally) {
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
		s.emit(j.seq, s.resultLine(j, res, o.attempts))
	case o.cancelled:
		s.budget.cancel(j.reserve)
		s.count(func(t *tally) { t.cancelled++ })
		s.emit(j.seq, nil)
	default:
		s.budget.cancel(j.reserve)
		s.count(func(t *tally) { t.errors++ })
		s.writeError(j, o.err, o.attempts)
		s.emit(j.seq, s.failureLine(j, o.err))
	}
}

func (s *scheduler) count(f func(*tally)) {
	s.mu.Lock()
	f(&s.tally)
	s.mu.Unlock()
}

// emit writes a record's result, in input order with --ordered; line is nil
// for a record that has none.
func (s *scheduler) emit(seq int64, line []byte) {
	if s.reorder == nil {
		if line != nil {
			s.write(line)
		}
		return
	}
	for _, l := range s.reorder.put(seq, line) {
		s.write(l)
	}
}

func (s *scheduler) write(line []byte) {
	if err := s.out.Write(line); err != nil {
		s.outputFailed(err)
	}
}

func (s *scheduler) flush() {
	if err := s.out.Flush(); err != nil {
		s.outputFailed(err)
	}
	if s.errs != nil {
		if err := s.errs.Flush(); err != nil {
			s.outputFailed(err)
		}
	}
}

// outputFailed stops the run when stdout closes (downstream is done: exit 0,
// which cliutil makes of EPIPE) or a write fails.
func (s *scheduler) outputFailed(err error) {
	s.stop("output closed", err, true)
}

// writeError records a failure so that a later run can retry exactly it.
func (s *scheduler) writeError(j *job, e *backend.Error, attempts int) {
	if s.errs == nil {
		return
	}
	line := addMembers(j.line, []member{{record.FieldError, errorMember(e, attempts)}}, false)
	if err := s.errs.Write(line); err != nil {
		s.outputFailed(err)
	}
}
