package generate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/engine"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
	"github.com/synthpipe/synthpipe/lib/runview"
	"github.com/synthpipe/synthpipe/lib/statusfile"
)

// memoryHeadroom is what generate may hold besides the answers being
// received, for the soft memory limit: thousands of requests in flight
// and their records take far less.
const memoryHeadroom = 512 << 20

func run(c *cli.Context, cfg *config) (err error) {
	if err := parse(c, cfg); err != nil {
		return err
	}
	defer limitMemory(cfg.AnswerMem)()
	r := &launch{c: c, cfg: cfg, stderr: c.App.ErrWriter}
	// A run that ends before it starts (budget already reached, a key
	// that cannot pay, a bad input) still says so in its status file.
	spent, alreadyRecords := int64(0), int64(0)
	earlyReason := "stopped before the first request"
	if cfg.statusFile != "" {
		defer func() {
			if r.status == nil {
				runview.WriteEarlyStatus(cfg.statusFile, earlyStatus(cfg, spent, alreadyRecords, earlyReason), err, r.statusWarn)
			}
		}()
	}
	// The first signal drains the requests in flight: Main must wait for it.
	cliutil.SetSignalGrace(c.Context, cfg.DrainTimeout+3*time.Second)

	// The inputs are checked first: a typo must not wait on a slow server.
	// Reading stops when dispatching does.
	stops := engine.NewStops()
	defer stops.End()
	in, err := r.openInput(stops)
	if err != nil {
		return err
	}
	spent, alreadyRecords, full, err := r.readAlready()
	if err != nil || full {
		in.Close()
		if full {
			earlyReason = "already at or over budget"
		}
		return err
	}
	return r.execute(stops, in, spent, alreadyRecords)
}

// execute sends the requests of in, with the views on, and reports how it
// went; spent and records are the --already files'. It closes in.
func (r *launch) execute(stops *engine.Stops, in *jsonl.Reader, spent, records int64) (err error) {
	c, cfg := r.c, r.cfg
	reading := false // from then on the engine's reader closes in
	defer func() {
		if !reading {
			in.Close()
		}
	}()
	out := jsonl.NewWriter(c.App.Writer)
	e, errsFile, err := r.newEngine(stops, spent, records, out)
	if err != nil {
		return err
	}
	if errsFile != nil {
		defer func() {
			if cerr := errsFile.Close(); err == nil {
				err = cerr
			}
		}()
	}
	stopMetrics, err := r.serveMetrics(e)
	if err != nil {
		return err
	}
	defer stopMetrics()
	if cfg.statusFile != "" {
		r.status = runview.NewStatusWriter(cfg.statusFile, e.Snapshot, cfg.ProgressEvery, r.statusWarn)
	}
	stopViews := r.startViews(e, r.status)
	reading = true
	err = e.Run(c.Context, in)
	stopViews()
	if r.status != nil {
		// The last state, with the error the run exits with.
		defer func() { r.status.Finish(err, e.StopReason()) }()
	}
	e.Report()
	if ferr := out.Flush(); err == nil && ferr != nil && !errors.Is(ferr, context.Canceled) {
		err = ferr
	}
	return err
}

// limitMemory sets the soft memory limit for answers of answerMem bytes in
// flight, unless the user set GOMEMLIMIT; the returned func puts the
// previous limit back.
func limitMemory(answerMem int64) func() {
	if os.Getenv("GOMEMLIMIT") != "" { // a limit the user set wins
		return func() {}
	}
	// --max-answer-memory bounds what the answers in flight hold; the
	// buffers of answers that failed or were written are garbage the
	// collector would otherwise let pile up to twice the live heap before
	// collecting. Near this limit it collects sooner.
	previous := debug.SetMemoryLimit(answerMem + memoryHeadroom)
	return func() { debug.SetMemoryLimit(previous) }
}

// launch is one run of generate: its command line and streams, and the
// steps that set the run up around the scheduler and report on it.
type launch struct {
	c      *cli.Context
	cfg    *config
	stderr io.Writer // the progress's console (mainWith made it)
	// status keeps --status-file once the run starts; nil before (and
	// without one), when a run that ends writes an early status.
	status *runview.StatusWriter
}

// warn prints a line on stderr, even with -q.
func (r *launch) warn(format string, args ...any) {
	cliutil.Notef(r.stderr, r.c.App.Name, format, args...)
}

// note prints a line on stderr unless -q.
func (r *launch) note(format string, args ...any) {
	if !r.cfg.Quiet {
		r.warn(format, args...)
	}
}

// statusWarn says what went wrong with --status-file.
func (r *launch) statusWarn(format string, args ...any) {
	r.warn("--"+flagStatusFile+" "+format, args...)
}

// openInput opens the request files (stdin without any); reading stops
// when dispatching does.
func (r *launch) openInput(stops *engine.Stops) (*jsonl.Reader, error) {
	opt := r.cfg.input
	opt.Context = stops.Reading()
	// Requests are prompts, often written without a final newline; the
	// --already files are outputs, where such a line is torn.
	opt.LastLineRecord = true
	return jsonl.Open(r.c.App.Reader, r.cfg.inputs, opt)
}

// readAlready counts the tokens and records of the --already files that
// exist, and checks the settings they were made with; full when they are
// at or over the token budget already (said on stderr).
func (r *launch) readAlready() (spent, records int64, full bool, err error) {
	cfg := r.cfg
	already := jsonl.ExistingFiles(cfg.already, func(path string) {
		r.note("--%s %s does not exist yet: counted as empty", flagAlready, path)
	})
	if len(already) == 0 {
		return 0, 0, false, nil
	}
	scan := record.NewScanner(cfg.IDPath, false, "")
	sum, err := record.SumTokens(r.c.App.Reader, already, cfg.input, scan, cfg.CountMode)
	if err != nil {
		return 0, 0, false, err
	}
	if sum.Uncounted > 0 {
		return 0, 0, false, exitcode.DataErrorf("%s %s: --%s cannot count it against --%s (%s in all); an output of --output-format openai-batch is cut by budget-cut: %s",
			sum.FirstUncounted, record.NoCount, flagAlready, flagTokenBudget, cliutil.Count(sum.Uncounted, "such record"), record.CountHint)
	}
	if err := checkProvenance(&sum.Provenance, cfg, r.warn); err != nil {
		return sum.Tokens, sum.Records, false, err
	}
	if sum.Tokens >= cfg.TokenBudget {
		r.note("already at or over budget: %s of %s %s tokens spent; sending nothing", cliutil.Thousands(sum.Tokens), cliutil.Thousands(cfg.TokenBudget), cfg.CountMode)
		return sum.Tokens, sum.Records, true, nil
	}
	return sum.Tokens, sum.Records, false, nil
}

// total is the records expected: --total, else counted in the input when
// it is a regular file, times --samples; 0 unknown.
func (r *launch) total() int64 {
	if r.cfg.Total != 0 {
		return r.cfg.Total
	}
	return countRecords(r.c.App.Reader, r.cfg.inputs) * int64(r.cfg.Samples)
}

// newEngine reads what the run needs before its first request (the worst
// price, the API key), creates --errors (the caller closes it), says what
// the run will do and builds the engine; stops was made before the input
// was opened, spent and records are the --already files'.
func (r *launch) newEngine(stops *engine.Stops, spent, records int64, out *jsonl.Writer) (e *engine.Engine, errsFile *jsonl.OutputFile, err error) {
	c, cfg := r.c, r.cfg
	usdPerToken, err := worstPrice(c.Context, cfg)
	if err != nil {
		return nil, nil, err
	}
	key, err := readKey(c.Context, cfg, r.note)
	if err != nil {
		return nil, nil, err
	}
	var errs *jsonl.Writer
	if cfg.Errors != "" {
		if errsFile, err = jsonl.CreateOutput(cfg.Errors, false, cliutil.Warner(c)); err != nil {
			return nil, nil, err
		}
		errs = errsFile.Writer
	}
	r.note("%s", startLine(cfg, c.IsSet(flagMaxTokens)))
	ec := r.engineConfig()
	ec.Out, ec.Errs, ec.Stops = out, errs, stops
	ec.Already, ec.AlreadyRecords, ec.USDPerToken, ec.Key = spent, records, usdPerToken, key
	if e, err = engine.New(ec); err != nil {
		if errsFile != nil {
			errsFile.Close()
		}
		return nil, nil, err
	}
	return e, errsFile, nil
}

// engineConfig is the engine's settings, with what the run learnt before
// its start: the records expected and where its lines go.
func (r *launch) engineConfig() engine.Config {
	ec := r.cfg.Config
	ec.Total, ec.Note, ec.Warn = r.total(), r.note, r.warn
	return ec
}

// serveMetrics starts --metrics-listen; the returned func stops it.
func (r *launch) serveMetrics(e *engine.Engine) (func(), error) {
	cfg := r.cfg
	if cfg.metricsAddr == "" {
		return func() {}, nil
	}
	host, _ := os.Hostname()
	addr, stop, err := runview.ServeMetrics(cfg.metricsAddr, func() *statusfile.Status {
		return runview.Status(e.Snapshot(), cfg.ProgressEvery, host, nil)
	})
	if err != nil {
		return nil, exitcode.TempFailf("--%s %s: %v (try another port)", flagMetricsListen, cfg.metricsAddr, err)
	}
	r.warn("metrics on http://%s/metrics", addr) // even with -q: port 0 is known only here
	return stop, nil
}

// startViews runs the progress line and the status file (nil: none) until
// the returned func, which stops them and waits for their last write.
func (r *launch) startViews(e *engine.Engine, status *runview.StatusWriter) func() {
	var prog *runview.Progress
	if !r.cfg.Quiet {
		prog = runview.NewProgress(cliutil.Streams(r.c), r.cfg.ProgressEvery)
	}
	stop := make(chan struct{})
	var running sync.WaitGroup
	running.Add(1)
	go func() {
		defer running.Done()
		prog.Run(e.Snapshot, stop)
	}()
	if status != nil {
		running.Add(1)
		go func() {
			defer running.Done()
			status.Loop(stop)
		}()
	}
	return func() {
		close(stop)
		running.Wait()
	}
}

// startLine says what the run will do, naming the limits a user should know
// about before the first token is paid for.
func startLine(cfg *config, maxTokensSet bool) string {
	src := "the default; set --max-tokens"
	if maxTokensSet {
		src = "--max-tokens"
	}
	s := fmt.Sprintf("%s backend, %s, max_tokens %d (%s), retries %d, timeout %v",
		cfg.Kind.Name, cliutil.Count(int64(len(cfg.URLs)), "server"), cfg.Params.MaxTokens, src, cfg.Retries, cfg.Timeout)
	if cfg.TokenBudget > 0 {
		s += fmt.Sprintf(", token budget %s %s", cliutil.Thousands(cfg.TokenBudget), cfg.CountMode)
	}
	if cfg.CostBudget > 0 {
		s += fmt.Sprintf(", cost budget $%.2f", cfg.CostBudget)
	}
	return s
}

// earlyStatus is the status of a run that ended before its first request:
// spent tokens and records in the --already files, and why.
func earlyStatus(cfg *config, spent, records int64, reason string) runview.Early {
	e := runview.Early{Spent: spent, Records: records, Reason: reason,
		TokenBudget: cfg.TokenBudget, CostBudget: cfg.CostBudget, CountMode: cfg.CountMode.String()}
	for _, u := range cfg.URLs {
		e.URLs = append(e.URLs, backend.WithoutUserinfo(u))
	}
	return e
}
