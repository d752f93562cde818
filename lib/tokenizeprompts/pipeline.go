package tokenizeprompts

import (
	"context"
	"errors"
	"sync"
)

// errStop ends a pipeline early without failing it (--limit reached).
var errStop = errors.New("stop")

// inFlightPerWorker bounds the items read ahead of the one being written:
// enough that a slow record does not idle the other workers, few enough
// that memory stays small whatever the input's length.
const inFlightPerWorker = 8

// pipeline runs work on every item that produce sends, on `workers`
// goroutines, and hands the results to consume in the order produce sent
// them:
//
//	produce -> workers x work -> reorder -> consume
//
// At most workers*inFlightPerWorker items are between produce and consume,
// so a slow item makes produce wait instead of letting results pile up.
// idle runs when consume has caught up and must wait for the next result:
// the writer flushes there, so that a slow producer's records reach the
// next stage at once while a fast one's go out in large writes.
//
// The first error of consume (errStop included) or of produce, or the
// cancellation of ctx, ends the run; pipeline then returns without waiting
// for a produce blocked in a read, which the process exit ends.
type pipeline[In, Out any] struct {
	workers int
	produce func(ctx context.Context, send func(In) bool) error
	work    func(In) Out
	consume func(Out) error
	idle    func() error
}

type sequenced[T any] struct {
	seq int64
	v   T
}

func (p *pipeline[In, Out]) run(parent context.Context) error {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	window := p.workers * inFlightPerWorker
	slots := make(chan struct{}, window)
	// The reader may run ahead by the whole window (slots bounds it), not
	// just a batch per worker: a reader kept off the CPU for a while (a
	// busy machine) then leaves the workers that much work queued.
	jobs := make(chan sequenced[In], window)
	results := make(chan sequenced[Out], window)
	produced := make(chan error, 1)

	go func() {
		var seq int64
		send := func(v In) bool {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return false
			}
			select {
			case jobs <- sequenced[In]{seq, v}:
				seq++
				return true
			case <-ctx.Done():
				return false
			}
		}
		err := p.produce(ctx, send)
		close(jobs)
		produced <- err
	}()

	var wg sync.WaitGroup
	for range p.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				// results has room for every item in flight: no wait here.
				results <- sequenced[Out]{j.seq, p.work(j.v)}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(results)
	}()

	pending := make(map[int64]Out, window)
	var next int64
	for {
		r, ok, err := p.receive(ctx, results)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		pending[r.seq] = r.v
		for {
			v, ready := pending[next]
			if !ready {
				break
			}
			delete(pending, next)
			next++
			<-slots
			if err := p.consume(v); err != nil {
				cancel(err)
				return err
			}
		}
	}
	return <-produced
}

// receive waits for the next result, running idle first when none is ready.
func (p *pipeline[In, Out]) receive(ctx context.Context, results <-chan sequenced[Out]) (sequenced[Out], bool, error) {
	select {
	case r, ok := <-results:
		return r, ok, nil
	default:
	}
	if p.idle != nil {
		if err := p.idle(); err != nil {
			return sequenced[Out]{}, false, err
		}
	}
	select {
	case r, ok := <-results:
		return r, ok, nil
	case <-ctx.Done():
		return sequenced[Out]{}, false, context.Cause(ctx)
	}
}
