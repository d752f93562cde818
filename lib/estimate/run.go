package estimate

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

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

// config is estimate's flags, checked.
type config struct {
	files       []string
	by          string
	done        []string
	statuses    []string // generate --status-file files of running jobs
	lengthsSpec string
	maxTokens   int
	budget      int64 // -1: none
	// maxTrainLength: --max-train-length, 0 when not given.
	maxTrainLength int64
	urls           []string
	models         []string
	routerURL      string
	apiKey         string
	priceIn        float64
	priceOut       float64
	hasPrices      bool
	rates          map[string]float64 // by backend URL or model; "" for all
	hourlyCost     float64
	concurrency    int
	draws          int
	seed           uint64
	json           bool
	quiet          bool
	input          jsonl.Options
}

func parse(c *cli.Context) (*config, error) {
	cfg := &config{
		files:       c.Args().Slice(),
		by:          c.String(flagBy),
		done:        c.StringSlice(flagDone),
		statuses:    c.StringSlice(flagStatus),
		lengthsSpec: c.String(flagLengths),
		budget:      -1,
		urls:        c.StringSlice(flagURL),
		models:      c.StringSlice(flagModel),
		routerURL:   strings.TrimSuffix(c.String(flagOpenRouterURL), "/"),
		apiKey:      os.Getenv(apiKeyEnv),
		priceIn:     c.Float64(flagPriceIn),
		priceOut:    c.Float64(flagPriceOut),
		hourlyCost:  c.Float64(flagHourlyCost),
		concurrency: c.Int(flagConcurrency),
		draws:       c.Int(flagDraws),
		seed:        c.Uint64(flagSeed),
		json:        c.Bool(flagJSON),
		quiet:       c.Bool(cliutil.FlagQuiet),
		rates:       map[string]float64{},
	}
	if c.IsSet(flagBudget) {
		n, err := cliutil.ParseBudget(flagBudget, c.String(flagBudget), "for no budget, leave --"+flagBudget+" out (or $"+cliutil.EnvName(flagBudget)+" empty)")
		if err != nil {
			return nil, err
		}
		cfg.budget = n
	}
	if c.IsSet(flagMaxTrainLength) {
		n, err := cliutil.ParseMaxTrainLength(flagMaxTrainLength, c.String(flagMaxTrainLength))
		if err != nil {
			return nil, err
		}
		cfg.maxTrainLength = n
	}
	if s := c.String(flagMaxTokens); s != "" {
		n, err := cliutil.ParseCount(s)
		if err != nil || n < 1 || n > 1<<30 {
			return nil, cliutil.Usagef("--%s %q: want a positive number of tokens", flagMaxTokens, s)
		}
		cfg.maxTokens = int(n)
	}
	if c.IsSet(flagPriceIn) != c.IsSet(flagPriceOut) {
		return nil, cliutil.Usagef("--%s and --%s go together: give both (USD per million tokens)", flagPriceIn, flagPriceOut)
	}
	cfg.hasPrices = c.IsSet(flagPriceIn)
	for _, f := range []struct {
		flag    string
		v, most float64
	}{{flagPriceIn, cfg.priceIn, maxPricePerMillion}, {flagPriceOut, cfg.priceOut, maxPricePerMillion}, {flagHourlyCost, cfg.hourlyCost, maxHourlyCost}} {
		if err := checkPrice(f.flag, f.v, f.most); err != nil {
			return nil, cliutil.Usagef("%v", err)
		}
	}
	if cfg.hasPrices && len(cfg.models) == 0 {
		return nil, cliutil.Usagef("--%s and --%s price a --model: name it (any id, e.g. --model mine)", flagPriceIn, flagPriceOut)
	}
	var err error
	if cfg.urls, err = backend.NormalizeURLs(flagURL, cfg.urls); err != nil {
		return nil, cliutil.Usagef("%v", err)
	}
	if c.IsSet(flagHourlyCost) && len(cfg.urls) == 0 {
		return nil, cliutil.Usagef("--%s prices the hours of a --url server: give one", flagHourlyCost)
	}
	for _, spec := range c.StringSlice(flagRate) {
		name, value := "", spec
		if k := strings.LastIndexByte(spec, '='); k >= 0 {
			name, value = spec[:k], spec[k+1:]
		}
		r, err := parseRate(value)
		if err != nil {
			return nil, cliutil.Usagef("--%s %q: %v", flagRate, spec, err)
		}
		if i := slices.IndexFunc(cfg.urls, func(u string) bool { return backend.ServerKey(u) == backend.ServerKey(name) }); i >= 0 {
			name = cfg.urls[i] // as rateFor is asked
		} else if name != "" && !slices.Contains(cfg.models, name) {
			return nil, cliutil.Usagef("--%s %q: %q is neither a --url nor a --model", flagRate, spec, name)
		}
		cfg.rates[name] = r
	}
	if cfg.concurrency < 0 {
		return nil, cliutil.Usagef("--%s must not be negative (0: as generate's adaptive concurrency grows)", flagConcurrency)
	}
	if cfg.draws < 1 || cfg.draws > 100000 {
		return nil, cliutil.Usagef("--%s must be between 1 and 100000", flagDraws)
	}
	if len(cfg.done) == 0 && cfg.lengthsSpec == "" {
		return nil, cliutil.Usagef("say what answers will look like: --done FILE (the output so far) or --lengths SPEC (e.g. mean=800,p90=1800)")
	}
	if cfg.input, err = cliutil.InputOptions(c); err != nil {
		return nil, err
	}
	var files jsonl.Files
	files.Inputs(c.App.Reader, cfg.files)
	files.State("--"+flagDone, cfg.done)
	files.State("--"+flagStatus, cfg.statuses)
	files.Stdout(c.App.Writer)
	if err := files.Check(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// parseRate reads tokens per second: 1250, 1.25k, 850.5.
func parseRate(s string) (float64, error) {
	if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
		if !usableRate(f) {
			return 0, fmt.Errorf("want a number of tokens per second from %g to %g", minRate, maxRate)
		}
		return f, nil
	}
	n, err := cliutil.ParseCount(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want tokens per second such as 1250 or 1.2k")
	}
	return float64(n), nil
}

func run(c *cli.Context) error {
	cfg, err := parse(c)
	if err != nil {
		return err
	}
	var dist lengths
	if cfg.lengthsSpec != "" {
		if dist, err = parseLengths(cfg.lengthsSpec, cfg.maxTokens); err != nil {
			if _, usage := err.(interface{ ExitCode() int }); usage {
				return err
			}
			return cliutil.Usagef("%v", err)
		}
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
	rep, err := buildReport(cfg, groups, done, dist, backends)
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
	var pooled doneStats
	var sglangRuns []timedRun
	for _, name := range slices.Sorted(maps.Keys(done)) {
		d := done[name]
		pooled.openai = appendTimings(pooled.openai, d.openai)
		if len(d.sglang.lengths) > 0 {
			sglangRuns = append(sglangRuns, d.sglang.timedRun())
		}
		pooled.sglang = appendTimings(pooled.sglang, d.sglang)
	}
	rateFor := func(name string) (float64, bool) {
		if r, ok := cfg.rates[name]; ok {
			return r, true
		}
		r, ok := cfg.rates[""]
		return r, ok
	}
	statuses, err := readStatuses(cfg.statuses)
	if err != nil {
		return nil, err
	}
	var out []*backendModel
	label := func() string { return string(rune('A' + len(out)%26)) }
	for _, u := range cfg.urls {
		// The report shows the URL without the user and password it may
		// carry; requests go to u.
		b := &backendModel{label: label(), kind: kindSGLang, url: backend.WithoutUserinfo(u), hourlyCost: cfg.hourlyCost}
		var err error
		if b.cap, err = serverCapacity(ctx, u, ""); err != nil {
			return nil, err
		}
		load, merr := serverMetrics(ctx, u, "")
		switch {
		case merr == nil && load.genThroughput <= 0:
			merr = fmt.Errorf("%s: sglang:gen_throughput is 0 (the server has not decoded yet)", load.source)
		case merr == nil && !usableRate(load.genThroughput):
			merr = fmt.Errorf("%s: sglang:gen_throughput %g is no speed (want %g to %g tokens per second)", load.source, load.genThroughput, minRate, maxRate)
		}
		doneStep, doneOK := fitStepTiming(sglangRuns, b.cap, cfg.budget)
		job, jobOK := jobOn(statuses, b.url) // status files hold URLs as shown
		if job.unusable != "" {
			note("%s: %s: no speed, left out", job.path, job.unusable)
		}
		switch r, ok := rateFor(u); {
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
				len(pooled.sglang.lengths), seconds(doneStep.fixed), seconds(doneStep.perRequest))
		case merr == nil:
			// An idle server keeps its last figure, taken at a batch
			// nobody knows: read as a full batch's.
			b.rate = load.genThroughput
			b.rateSource = fmt.Sprintf("%s: %s tok/s when last busy", load.source, fmtRate(load.genThroughput))
		default:
			note("%s: %v; no speed known: give --rate", u, merr)
		}
		out = append(out, b)
	}
	for _, m := range cfg.models {
		b := &backendModel{label: label(), kind: kindOpenRouter, url: cfg.routerURL, model: m, concurrency: cfg.concurrency}
		if cfg.hasPrices {
			b.price = prices{cfg.priceIn / perMillion, cfg.priceOut / perMillion}
			b.priceSource = "--price-in/--price-out"
		} else {
			p, err := listedPrices(ctx, cfg.routerURL, m, cfg.apiKey)
			if err != nil {
				return nil, err
			}
			b.price, b.priceSource = p, cfg.routerURL+"/models"
		}
		if r, ok := rateFor(m); ok {
			b.rate, b.rateSource = r, fmt.Sprintf("--rate %s tok/s", fmtRate(r))
		} else if r, overhead, ok := pooled.openai.decodeRate(); ok {
			b.perRequest, b.overhead = r, overhead
			if len(pooled.openai.firstToken) > 0 {
				var sum float64
				for _, v := range pooled.openai.firstToken {
					sum += v
				}
				b.overhead = sum / float64(len(pooled.openai.firstToken))
			}
			inFlight := "generate's adaptive concurrency"
			if b.concurrency > 0 {
				inFlight = fmt.Sprintf("%d in flight", b.concurrency)
			}
			b.rateSource = fmt.Sprintf("the done file's latencies (%d answers): %s tok/s per request after %.1fs, %s",
				len(pooled.openai.lengths), fmtRate(r), b.overhead, inFlight)
		} else {
			note("%s: no speed known: give --rate %s=TOK/S", m, m)
		}
		out = append(out, b)
	}
	return out, nil
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
