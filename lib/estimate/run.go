package estimate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// perMillion turns prices per million tokens into prices per token.
const perMillion = 1e6

// minDoneAnswers is the fewest answers of a dataset its own lengths are
// drawn from; with fewer, --lengths or the other datasets' answers serve.
const minDoneAnswers = 20

func run(c *cli.Context, cfg *config) error {
	if err := cfg.check(c); err != nil {
		return err
	}
	rd := newReader(cfg.by, cfg.input)
	// A done file not written yet (before a first run) is empty, as in
	// dedupe-resume --done.
	existing := jsonl.ExistingFiles(cfg.done, func(path string) {
		if !cfg.quiet {
			cliutil.Notef(c.App.ErrWriter, c.App.Name, "done file %s does not exist yet: counted as empty", path)
		}
	})
	done, err := rd.readDone(c.App.Reader, existing)
	if err != nil {
		return err
	}
	groups, err := rd.readPrompts(c.App.Reader, cfg.files)
	if err != nil {
		return err
	}
	for _, g := range groups {
		if d := done[g.name]; d != nil {
			g.done = *d
		}
	}
	warn := cliutil.Warner(c)
	for _, w := range rd.warnings() {
		warn(w)
	}
	note := func(format string, args ...any) {
		if !cfg.quiet {
			cliutil.Notef(c.App.ErrWriter, c.App.Name, format, args...)
		}
	}
	backends, err := probeBackends(c.Context, cfg, done, note)
	if err != nil {
		return err
	}
	rep, err := buildReport(cfg, groups, done, backends)
	if err != nil {
		return err
	}
	if cfg.json {
		return writeJSON(c.App.Writer, rep)
	}
	return writeTable(c.App.Writer, rep)
}

// probeBackends asks each backend what it can: capacity, speed, prices.
func probeBackends(ctx context.Context, cfg *config, done map[string]*doneStats, note func(string, ...any)) ([]*backendModel, error) {
	p := &prober{ctx: ctx, cfg: cfg, note: note}
	p.poolDone(done)
	var err error
	if p.statuses, err = readStatuses(cfg.statuses); err != nil {
		return nil, err
	}
	for _, u := range cfg.urls {
		b, err := p.sglang(u)
		if err != nil {
			return nil, err
		}
		p.out = append(p.out, b)
	}
	for _, m := range cfg.models {
		b, err := p.openRouter(m)
		if err != nil {
			return nil, err
		}
		p.out = append(p.out, b)
	}
	return p.out, nil
}

// prober asks the backends of the estimate, one after another, what they
// can, and holds what their speeds may be read from besides: the done
// file's timings and the status files of running jobs.
type prober struct {
	ctx  context.Context
	cfg  *config
	note func(string, ...any)
	// pooled is every dataset's done answers with their timings, and
	// sglangRuns the done file's SGLang runs, one a dataset, for
	// fitStepTiming.
	pooled     doneStats
	sglangRuns []timedRun
	statuses   []statusDoc
	out        []*backendModel // the backends probed so far
}

// poolDone pools the done answers' timings, the datasets in name order.
func (p *prober) poolDone(done map[string]*doneStats) {
	for _, name := range slices.Sorted(maps.Keys(done)) {
		d := done[name]
		p.pooled.openai = appendTimings(p.pooled.openai, d.openai)
		if len(d.sglang.lengths) > 0 {
			p.sglangRuns = append(p.sglangRuns, d.sglang.timedRun())
		}
		p.pooled.sglang = appendTimings(p.pooled.sglang, d.sglang)
	}
}

// label names the next backend's column: A, B, ...
func (p *prober) label() string { return string(rune('A' + len(p.out)%26)) }

// rateFor is the --rate given for the backend name, or for every backend.
func (cfg *config) rateFor(name string) (float64, bool) {
	if r, ok := cfg.rates[name]; ok {
		return r, true
	}
	r, ok := cfg.rates[""]
	return r, ok
}

// sglang probes the SGLang server at u: its capacity and its speed.
func (p *prober) sglang(u string) (*backendModel, error) {
	// The report shows the URL without the user and password it may
	// carry; requests go to u.
	b := &backendModel{label: p.label(), kind: kindSGLang, url: backend.WithoutUserinfo(u), hourlyCost: p.cfg.hourlyCost}
	var err error
	if b.cap, err = serverCapacity(p.ctx, u, ""); err != nil {
		return nil, err
	}
	load, merr := serverMetrics(p.ctx, u, "")
	p.sglangSpeed(b, u, load, usableLoad(load, merr))
	return b, nil
}

// usableLoad is err, or what makes the metrics read no speed.
func usableLoad(load serverLoad, err error) error {
	switch {
	case err == nil && load.genThroughput <= 0:
		return fmt.Errorf("%s: sglang:gen_throughput is 0 (the server has not decoded yet)", load.source)
	case err == nil && !usableRate(load.genThroughput):
		return fmt.Errorf("%s: sglang:gen_throughput %g is no speed (want %g to %g tokens per second)", load.source, load.genThroughput, minRate, maxRate)
	}
	return err
}

// sglangSpeed gives b the speed of the first source that knows it: --rate,
// the server's metrics while it is busy, a running job's status file, the
// done file's latencies, the metrics of an idle server. merr is why load
// is no speed, nil when it is one.
func (p *prober) sglangSpeed(b *backendModel, u string, load serverLoad, merr error) {
	doneStep, doneOK := fitStepTiming(p.sglangRuns, b.cap, p.cfg.budget)
	job, jobOK := jobOn(p.statuses, b.url) // status files hold URLs as shown
	if job.unusable != "" {
		p.note("%s: %s: no speed, left out", job.path, job.unusable)
	}
	switch r, ok := p.cfg.rateFor(u); {
	case ok:
		b.rate, b.rateSource = r, fmt.Sprintf("--rate %s tok/s", fmtRate(r))
	case merr == nil && load.running > 0:
		// A busy server: its throughput over its running batch is the
		// time of one decode step.
		b.step.fixed = load.running / load.genThroughput
		b.rateSource = fmt.Sprintf("%s: %s tok/s with %.0f running", load.source, fmtRate(load.genThroughput), load.running)
	case jobOK && job.running > 0 && job.genThroughput > 0:
		// The server's own reading, as a running job last saw it.
		b.step.fixed = job.running / job.genThroughput
		b.rateSource = job.source(fmt.Sprintf("the server's %s tok/s with %.0f running", fmtRate(job.genThroughput), job.running))
	case jobOK && job.clientRate > 0:
		// Without the server's metrics, what the job gets from it: a
		// full batch's speed when the job keeps the server busy.
		b.rate = job.clientRate
		b.rateSource = job.source(fmt.Sprintf("the job's %s tok/s out", fmtRate(job.clientRate)))
	case doneOK:
		b.step = doneStep
		b.rateSource = fmt.Sprintf("the done file's latencies (%d answers): a step takes %s + %s per running request",
			len(p.pooled.sglang.lengths), seconds(doneStep.fixed), seconds(doneStep.perRequest))
	case merr == nil:
		// An idle server keeps its last figure, taken at a batch
		// nobody knows: read as a full batch's.
		b.rate = load.genThroughput
		b.rateSource = fmt.Sprintf("%s: %s tok/s when last busy", load.source, fmtRate(load.genThroughput))
	default:
		p.note("%s: %v; no speed known: give --rate", u, merr)
	}
}

// openRouter probes the model m on the OpenRouter-style API: its prices
// and its speed.
func (p *prober) openRouter(m string) (*backendModel, error) {
	cfg := p.cfg
	b := &backendModel{label: p.label(), kind: kindOpenRouter, url: cfg.routerURL, model: m, concurrency: cfg.concurrency}
	if cfg.hasPrices {
		b.price = prices{cfg.priceIn / perMillion, cfg.priceOut / perMillion}
		b.priceSource = "--price-in/--price-out"
	} else {
		pr, err := listedPrices(p.ctx, cfg.routerURL, m, cfg.apiKey)
		if err != nil {
			return nil, err
		}
		b.price, b.priceSource = pr, cfg.routerURL+"/models"
	}
	p.openRouterSpeed(b, m)
	return b, nil
}

// openRouterSpeed gives b the speed of --rate, else of one request as the
// done file's answers made with generate --backend openai took, with
// generate's requests in flight.
func (p *prober) openRouterSpeed(b *backendModel, m string) {
	if r, ok := p.cfg.rateFor(m); ok {
		b.rate, b.rateSource = r, fmt.Sprintf("--rate %s tok/s", fmtRate(r))
		return
	}
	timed := p.pooled.openai
	r, overhead, ok := timed.decodeRate()
	if !ok {
		p.note("%s: no speed known: give --rate %s=TOK/S", m, m)
		return
	}
	b.perRequest, b.overhead = r, overhead
	if len(timed.firstToken) > 0 {
		var sum float64
		for _, v := range timed.firstToken {
			sum += v
		}
		b.overhead = sum / float64(len(timed.firstToken))
	}
	inFlight := "generate's adaptive concurrency"
	if b.concurrency > 0 {
		inFlight = fmt.Sprintf("%d in flight", b.concurrency)
	}
	b.rateSource = fmt.Sprintf("the done file's latencies (%d answers): %s tok/s per request after %.1fs, %s",
		len(timed.lengths), fmtRate(r), b.overhead, inFlight)
}

func appendTimings(a, b timings) timings {
	a.lengths = append(a.lengths, b.lengths...)
	a.latencies = append(a.latencies, b.latencies...)
	a.firstToken = append(a.firstToken, b.firstToken...)
	return a
}

// seconds writes a short time: 2.1ms, 12us.
func seconds(s float64) string {
	switch {
	case s >= 1:
		return strconv.FormatFloat(s, 'f', 2, 64) + "s"
	case s >= 1e-3:
		return strconv.FormatFloat(s*1e3, 'f', 2, 64) + "ms"
	}
	return strconv.FormatFloat(s*1e6, 'f', 2, 64) + "us"
}

// fmtRate writes tokens per second as people read them.
func fmtRate(r float64) string {
	switch {
	case r >= 100:
		return cliutil.Thousands(int64(r + 0.5))
	case r < 0.1:
		return strconv.FormatFloat(r, 'g', 2, 64)
	}
	return strconv.FormatFloat(r, 'f', 1, 64)
}
