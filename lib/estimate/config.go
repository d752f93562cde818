package estimate

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// defaultDraws is --draws' default, and maxDraws the most it takes.
const (
	defaultDraws = 200
	maxDraws     = 100000
)

// config is estimate's options: flags sets its fields from the flags, each
// checked where it is declared, and check what depends on several of them,
// then reads the --lengths distribution.
type config struct {
	files       []string
	by          string
	done        []string
	statuses    []string // generate --status-file files of running jobs
	lengthsSpec string
	lengths     lengths // --lengths read, nil when not given
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
	givenRates     []givenRate        // --rate as given, read
	rates          map[string]float64 // by backend URL or model; "" for all
	hourlyCost     float64
	concurrency    int
	draws          int
	seed           uint64
	json           bool
	quiet          bool
	input          jsonl.Options
}

// givenRate is one --rate: the backend it names ("" for all) and its tokens
// per second.
type givenRate struct {
	spec, name string
	rate       float64
}

// check checks what depends on several flags, reads the shared ones and
// checks the files named; then it reads --lengths.
func (cfg *config) check(c *cli.Context) (err error) {
	cfg.files, cfg.quiet, cfg.apiKey = c.Args().Slice(), c.Bool(cliutil.FlagQuiet), os.Getenv(apiKeyEnv)
	if c.IsSet(flagPriceIn) != c.IsSet(flagPriceOut) {
		return cliutil.Usagef("--%s and --%s go together: give both (USD per million tokens)", flagPriceIn, flagPriceOut)
	}
	if cfg.hasPrices = c.IsSet(flagPriceIn); cfg.hasPrices && len(cfg.models) == 0 {
		return cliutil.Usagef("--%s and --%s price a --model: name it (any id, e.g. --model mine)", flagPriceIn, flagPriceOut)
	}
	if c.IsSet(flagHourlyCost) && len(cfg.urls) == 0 {
		return cliutil.Usagef("--%s prices the hours of a --url server: give one", flagHourlyCost)
	}
	if err := cfg.nameRates(); err != nil {
		return err
	}
	if len(cfg.done) == 0 && cfg.lengthsSpec == "" {
		return cliutil.Usagef("say what answers will look like: --done FILE (the output so far) or --lengths SPEC (e.g. mean=800,p90=1800)")
	}
	if cfg.input, err = cliutil.InputOptions(c); err != nil {
		return err
	}
	var files jsonl.Files
	files.Inputs(c.App.Reader, cfg.files)
	files.State("--"+flagDone, cfg.done)
	files.State("--"+flagStatus, cfg.statuses)
	files.Stdout(c.App.Writer)
	if err := files.Check(); err != nil {
		return err
	}
	return cfg.readLengths()
}

// readRates reads the --rate specs: [NAME=]N.
func (cfg *config) readRates(specs []string) error {
	for _, spec := range specs {
		name, value := "", spec
		if k := strings.LastIndexByte(spec, '='); k >= 0 {
			name, value = spec[:k], spec[k+1:]
		}
		r, err := parseRate(value)
		if err != nil {
			return cliutil.Usagef("--%s %q: %v", flagRate, spec, err)
		}
		cfg.givenRates = append(cfg.givenRates, givenRate{spec: spec, name: name, rate: r})
	}
	return nil
}

// nameRates files each --rate under the backend it names, a --url as
// rateFor is asked (normalized) or a --model, refusing a NAME that is
// neither.
func (cfg *config) nameRates() error {
	for _, g := range cfg.givenRates {
		name := g.name
		if i := slices.IndexFunc(cfg.urls, func(u string) bool { return backend.ServerKey(u) == backend.ServerKey(name) }); i >= 0 {
			name = cfg.urls[i]
		} else if name != "" && !slices.Contains(cfg.models, name) {
			return cliutil.Usagef("--%s %q: %q is neither a --url nor a --model", flagRate, g.spec, name)
		}
		cfg.rates[name] = g.rate
	}
	return nil
}

// readLengths reads --lengths, capped at --max-tokens: a spec that does
// not parse is a usage error, a file:PATH that cannot be read keeps its
// own exit status.
func (cfg *config) readLengths() (err error) {
	if cfg.lengthsSpec == "" {
		return nil
	}
	if cfg.lengths, err = parseLengths(cfg.lengthsSpec, cfg.maxTokens); err != nil {
		if _, usage := err.(interface{ ExitCode() int }); usage {
			return err
		}
		return cliutil.Usagef("%v", err)
	}
	return nil
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
