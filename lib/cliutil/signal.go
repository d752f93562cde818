package cliutil

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
)

// stopSignals end a run gracefully. SIGHUP is one of them: a closed ssh
// session or a supervisor hanging up must not throw away the answers in
// flight any more than Ctrl-C does.
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// signalGrace is how long a tool may take to flush and return after the first
// signal before Main exits anyway (it may be blocked reading a quiet pipe).
const signalGrace = 3 * time.Second

// signals is Main's handling of the stop signals for one run.
type signals struct {
	grace atomic.Int64 // time.Duration
	// finish is set by InputOptions for a consumer reading a pipe: the
	// first signal then waits in pending instead of cancelling the run.
	finish   atomic.Bool
	consumer bool // the tool's Spec.FinishPipedInput

	mu      sync.Mutex
	first   syscall.Signal
	pending *SignalError

	ch   chan os.Signal
	done chan struct{}
	stop func()
	// forced carries 128+signal when the run must end now: a second
	// signal, or a tool still running when its grace period ends. Main
	// returns it; the tool's goroutine is left to the process's exit.
	forced chan int
}

// signalsKey finds a run's *signals in its context.
type signalsKey struct{}

// signalContext cancels the returned context, with a *SignalError as cause,
// on the first stop signal (or, for a consumer reading a pipe, keeps it as
// pending: see Spec.FinishPipedInput). A second signal, or a tool that does
// not return within its grace period, makes Main return 128+signal at once
// (see forced): the readers flush output before every blocking read, so
// nothing finished is lost. A signal the tool was started with ignored (nohup, a background job
// of a script) stays ignored.
func signalContext(parent context.Context, stderr io.Writer, name string, consumer bool) (context.Context, *signals) {
	s := &signals{ch: make(chan os.Signal, 2), done: make(chan struct{}), forced: make(chan int, 1), consumer: consumer}
	s.grace.Store(int64(signalGrace))
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, signalsKey{}, s))
	for _, sig := range stopSignals {
		if !signal.Ignored(sig) {
			signal.Notify(s.ch, sig)
		}
	}
	go func() {
		for {
			select {
			case <-s.done:
				return
			case got := <-s.ch:
				sig := got.(syscall.Signal)
				s.mu.Lock()
				first := s.first
				if first == 0 {
					s.first = sig
				}
				s.mu.Unlock()
				if first != 0 {
					fmt.Fprintf(stderr, "%s: second %s: stopping now\n", name, signalName(sig))
					s.force(128 + int(first))
					continue
				}
				if s.finish.Load() {
					s.mu.Lock()
					s.pending = &SignalError{Signal: sig}
					s.mu.Unlock()
					// Said at once: a person who pressed Ctrl-C must not
					// wonder why nothing seems to happen.
					fmt.Fprintf(stderr, "%s: %s: reading on until the input ends, to write what the stages before still send (a second signal stops at once)\n",
						name, signalName(sig))
					continue
				}
				cancel(&SignalError{Signal: sig})
				time.AfterFunc(time.Duration(s.grace.Load()), func() {
					select {
					case <-s.done:
					default:
						s.force(128 + int(sig))
					}
				})
			}
		}
	}()
	s.stop = func() {
		signal.Stop(s.ch)
		close(s.done)
		cancel(nil)
	}
	return ctx, s
}

// force asks Main to return status now; the first request wins.
func (s *signals) force(status int) {
	select {
	case s.forced <- status:
	default:
	}
}

// deferred is the signal a consumer read its input to the end after, or nil.
func (s *signals) deferred() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		return nil
	}
	return s.pending
}

func signalsOf(ctx context.Context) *signals {
	s, _ := ctx.Value(signalsKey{}).(*signals)
	return s
}

// SetSignalGrace changes how long Main waits, after the first signal, for the
// tool to return before exiting anyway. A tool that drains work in flight on
// a signal (generate --drain-timeout) sets it to cover the drain. It does
// nothing for a context that did not come from Main.
func SetSignalGrace(ctx context.Context, d time.Duration) {
	if s := signalsOf(ctx); s != nil {
		s.grace.Store(int64(d))
	}
}

// finishPipedInput makes the first signal wait for the end of the input
// when the tool is a consumer (Spec.FinishPipedInput) and one of its inputs
// is a pipe, a FIFO or a socket: the stages before it were signalled too
// and will close it. It must be called before the tool starts reading.
func finishPipedInput(c *cli.Context) {
	s := signalsOf(c.Context)
	if s == nil || !s.consumer {
		return
	}
	inputs := c.Args().Slice()
	if len(inputs) == 0 {
		inputs = []string{"-"}
	}
	for _, in := range inputs {
		var fi os.FileInfo
		var err error
		if in == "-" {
			f, ok := c.App.Reader.(*os.File)
			if !ok {
				continue
			}
			fi, err = f.Stat()
		} else {
			fi, err = os.Stat(in)
		}
		if err == nil && fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0 {
			s.finish.Store(true)
			return
		}
	}
}
