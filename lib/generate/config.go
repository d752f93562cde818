package generate

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
	"github.com/synthpipe/synthpipe/lib/statusfile"
	"github.com/synthpipe/synthpipe/lib/thinking"
)

// config is generate's flags, checked.
type config struct {
	kind    *backend.Kind // --backend
	urls    []string
	model   string
	apiKey  string
	referer string
	title   string
	params  backend.Params
	stream  bool
	timeout time.Duration
	idle    time.Duration // --idle-timeout, with --stream
	// answerMem bounds the answers being received together, in bytes
	// (--max-answer-memory).
	answerMem int64
	retries   int
	// maxRetryWait caps every wait before a retry and every pause of a
	// server, Retry-After included (--max-retry-wait).
	maxRetryWait time.Duration
	errors       string
	inputs       []string
	input        jsonl.Options
	idPath       string
	quiet        bool
	ordered      bool
	window       int
	fixedConc    int // 0: auto
	// contextLength is --context-length (0: the servers'); minRoom is
	// --min-room. See contextFit.
	contextLength, minRoom int
	shared                 bool // --shared: probe servers without /metrics

	tokenBudget int64 // 0: none
	already     []string
	countMode   record.CountMode
	costBudget  float64 // USD, 0: none
	// overKeyLimit: go on with a cost budget above the key's credit.
	overKeyLimit bool
	statusFile   string  // --status-file, "" for none
	metricsAddr  string  // --metrics-listen, "" for none
	maxPrice     float64 // USD per million tokens, 0: unknown

	progressEvery time.Duration
	total         int64
	drainTimeout  time.Duration

	tokenizer   string // model folder for re-tokenizing answers, "" for none
	declaration string // --tool-declaration: how tools reach the template with --tokenizer
	turnsAll    bool   // --turns all: regenerate whole conversations
	thinking    thinking.Mode
	samples     int  // --samples: answers per prompt
	sameParams  bool // --require-same-params

	inputFormat, outputFormat string // formatRecords or formatOpenAIBatch

	// backoff is the first retry delay; it doubles per attempt.
	backoff time.Duration
}

// options holds what no flag sets and a caller of the package (its tests)
// may: they pass their own in the app's Metadata (see optionsOf) instead of
// patching package state.
type options struct {
	firstBackoff time.Duration // the first retry delay
}

// defaultOptions are what generate runs with.
var defaultOptions = options{firstBackoff: 500 * time.Millisecond}

// optionsKey finds the options in a cli.App's Metadata.
const optionsKey = "generate.options"

// optionsOf returns the options the app was given, else defaultOptions.
func optionsOf(c *cli.Context) options {
	if o, ok := c.App.Metadata[optionsKey].(options); ok {
		return o
	}
	return defaultOptions
}

// defaultIdleTimeout is --idle-timeout: a streaming server that says
// nothing for two minutes is taken for stuck (a stopped process, a dead
// peer behind a proxy that keeps the connection open). Requests rarely
// wait that long in a queue, since generate sizes its concurrency to the
// server, and OpenRouter's keep-alive comments count as activity.
const defaultIdleTimeout = 2 * time.Minute

// maxBackoff caps the exponential retry delay.
const maxBackoff = 30 * time.Second

// defaultMaxRetryWait is --max-retry-wait: a Retry-After longer than five
// minutes is a server's mistake or a hostile one (999999999 seconds, a date
// in the year 9999), and a record must not wait for decades on it.
const defaultMaxRetryWait = 5 * time.Minute

func parse(c *cli.Context) (*config, error) {
	cfg := &config{
		urls:          c.StringSlice(flagURL),
		model:         c.String(flagModel),
		referer:       c.String(flagReferer),
		title:         c.String(flagTitle),
		stream:        c.Bool(flagStream),
		timeout:       c.Duration(flagTimeout),
		idle:          c.Duration(flagIdleTimeout),
		maxRetryWait:  c.Duration(flagMaxRetryWait),
		retries:       c.Int(flagRetries),
		errors:        c.String(flagErrors),
		inputs:        c.Args().Slice(),
		idPath:        c.String(cliutil.FlagIDPath),
		quiet:         c.Bool(cliutil.FlagQuiet),
		ordered:       c.Bool(flagOrdered),
		window:        c.Int(flagReorderWindow),
		already:       c.StringSlice(flagAlready),
		costBudget:    c.Float64(flagCostBudget),
		overKeyLimit:  c.Bool(flagOverKeyLimit),
		statusFile:    c.String(flagStatusFile),
		metricsAddr:   c.String(flagMetricsListen),
		shared:        c.Bool(flagShared),
		maxPrice:      c.Float64(flagMaxPrice),
		progressEvery: c.Duration(flagProgressInterval),
		total:         c.Int64(flagTotal),
		drainTimeout:  c.Duration(flagDrainTimeout),
		backoff:       optionsOf(c).firstBackoff,
		tokenizer:     c.String(flagTokenizer),
		declaration:   c.String(chat.FlagToolDeclaration),
		turnsAll:      c.String(flagTurns) == turnsAll,
		samples:       c.Int(flagSamples),
		sameParams:    c.Bool(flagRequireSameParams),
	}
	var err error
	kind, ok := backend.Lookup(c.String(flagBackend))
	if !ok {
		return nil, cliutil.Usagef("--%s %q: want %s", flagBackend, c.String(flagBackend), orList(backend.Names()))
	}
	cfg.kind = kind
	if len(cfg.urls) == 0 {
		return nil, cliutil.Usagef("--%s is required (e.g. --url http://localhost:30000)", flagURL)
	}
	if cfg.urls, err = backend.NormalizeURLs(flagURL, cfg.urls); err != nil {
		return nil, cliutil.Usagef("%v", err)
	}
	if err := parseFormats(c, cfg); err != nil {
		return nil, err
	}
	batchInput := cfg.inputFormat == formatOpenAIBatch // names its model, and needs --tokenizer for a backend that takes token ids
	if cfg.kind.NeedsModel && cfg.model == "" && !batchInput {
		return nil, cliutil.Usagef("--%s %s needs --%s", flagBackend, cfg.kind.Name, flagModel)
	}
	if err := checkTurns(c, cfg, batchInput); err != nil {
		return nil, err
	}
	if cfg.thinking, err = thinking.FromFlags(c); err != nil {
		return nil, err
	}
	if cfg.thinking.IsSet() && batchInput {
		return nil, cliutil.Usagef("--%s is for records (--input-format %s): an OpenAI Batch body sets its own reasoning", thinking.FlagThinking, formatRecords)
	}
	if err := checkSamples(cfg); err != nil {
		return nil, err
	}
	if cfg.tokenizer != "" && cfg.kind.Input == backend.TokenIDs && !batchInput && !cfg.turnsAll {
		return nil, cliutil.Usagef("--%s is for backends that send messages (%s): --%s %s returns the output ids itself",
			flagTokenizer, orList(backendsTaking(backend.Messages)), flagBackend, cfg.kind.Name)
	}
	if err := (*chat.Template)(nil).SetToolDeclaration(cfg.declaration); err != nil {
		return nil, err
	}
	if cfg.params, err = sampling(c); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		bad  bool
		why  string
	}{
		{flagRetries, cfg.retries < 0, "must not be negative"},
		{flagTimeout, cfg.timeout < 0, "must not be negative"},
		{flagIdleTimeout, cfg.idle < 0, "must not be negative"},
		{flagMaxRetryWait, cfg.maxRetryWait <= 0, "must be positive"},
		{flagDrainTimeout, cfg.drainTimeout < 0, "must not be negative"},
		{flagProgressInterval, cfg.progressEvery < 0, "must not be negative"},
		{flagReorderWindow, cfg.window < 1, "must be at least 1"},
	} {
		if f.bad {
			return nil, cliutil.Usagef("--%s %v: %s", f.name, c.Value(f.name), f.why)
		}
	}
	cfg.contextLength, cfg.minRoom = c.Int(flagContextLength), c.Int(flagMinRoom)
	if cfg.contextLength < 0 || cfg.contextLength == 1 {
		return nil, cliutil.Usagef("--%s %d: want 2 or more tokens (0: the servers')", flagContextLength, cfg.contextLength)
	}
	if cfg.minRoom < 1 {
		return nil, cliutil.Usagef("--%s %d: want at least 1 token", flagMinRoom, cfg.minRoom)
	}
	if s := c.String(flagConcurrency); s != "auto" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, cliutil.Usagef("--%s %q: want a positive number or auto", flagConcurrency, s)
		}
		cfg.fixedConc = n
	}
	if s := c.String(flagTokenBudget); s != "" {
		if cfg.tokenBudget, err = cliutil.ParseBudget(flagTokenBudget, s, "for no token budget, leave --"+flagTokenBudget+" out (or $"+cliutil.EnvName(flagTokenBudget)+" empty)"); err != nil {
			return nil, err
		}
	}
	if cfg.countMode, err = record.ParseCountMode(c.String(flagCount)); err != nil {
		return nil, cliutil.Usagef("%v", err)
	}
	if len(cfg.already) > 0 && cfg.tokenBudget == 0 {
		return nil, cliutil.Usagef("--%s counts against --%s, which is not set", flagAlready, flagTokenBudget)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{flagCostBudget, cfg.costBudget}, {flagMaxPrice, cfg.maxPrice}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return nil, cliutil.Usagef("--%s %v: want a number of USD, 0 or more", f.name, f.v)
		}
	}
	if c.IsSet(flagCostBudget) && cfg.costBudget == 0 {
		// As budget-cut --tokens 0 and --token-budget 0 are (cliutil.ParseBudget).
		return nil, cliutil.Usagef("--%s 0: a budget of $0 lets nothing through (0 is never \"no budget\"): for no cost budget, leave --%s out", flagCostBudget, flagCostBudget)
	}
	if cfg.answerMem, err = cliutil.ParseCount(c.String(flagMaxAnswerMemory)); err != nil || cfg.answerMem < 1<<20 {
		return nil, cliutil.Usagef("--%s %q: want a size in bytes of at least 1Mi (1Gi, 512Mi)", flagMaxAnswerMemory, c.String(flagMaxAnswerMemory))
	}
	if cfg.input, err = cliutil.InputOptions(c); err != nil {
		return nil, err
	}
	var files jsonl.Files
	files.Inputs(c.App.Reader, cfg.inputs)
	files.State("--"+flagAlready, cfg.already)
	files.Stdout(c.App.Writer)
	files.Output("--"+flagErrors, cfg.errors, false)
	files.Output("--"+flagStatusFile, cfg.statusFile, false)
	if err := files.Check(); err != nil {
		return nil, err
	}
	if cfg.statusFile != "" {
		if err := statusfile.CheckTarget(cfg.statusFile); err != nil {
			return nil, cliutil.Usagef("--%s %v", flagStatusFile, err)
		}
	}
	if cfg.apiKey, err = readAPIKey(c.String(flagAPIKeyFile)); err != nil {
		return nil, err
	}
	return cfg, nil
}

// sampling reads the sampling flags; unset ones stay nil so that the
// server's defaults apply.
func sampling(c *cli.Context) (backend.Params, error) {
	p := backend.Params{
		MaxTokens:          c.Int(flagMaxTokens),
		Stop:               c.StringSlice(flagStop),
		StopTokenIDs:       c.IntSlice(flagStopTokenID),
		ReasoningEffort:    c.String(flagReasoningEffort),
		ReasoningMaxTokens: c.Int(flagReasoningMaxTokens),
	}
	if p.MaxTokens < 1 {
		return p, cliutil.Usagef("--%s must be at least 1", flagMaxTokens)
	}
	p.Temperature = optional(c, flagTemperature, c.Float64)
	p.TopP = optional(c, flagTopP, c.Float64)
	p.TopK = optional(c, flagTopK, c.Int)
	p.MinP = optional(c, flagMinP, c.Float64)
	p.Seed = optional(c, flagSeed, c.Int64)
	kind, _ := backend.Lookup(c.String(flagBackend))
	if err := checkSampling(&p, kind != nil && kind.Input == backend.Messages); err != nil {
		return p, err
	}
	if s := c.String(flagExtra); s != "" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &obj); err != nil {
			return p, cliutil.Usagef("--%s: not a JSON object: %v", flagExtra, err)
		}
		p.Extra = json.RawMessage(s)
	}
	switch p.ReasoningEffort {
	case "", "low", "medium", "high", "minimal", "none":
	default:
		return p, cliutil.Usagef("--%s %q: want low, medium or high", flagReasoningEffort, p.ReasoningEffort)
	}
	return p, nil
}

// maxOpenAITemperature is the highest temperature OpenAI-compatible chat
// APIs accept; SGLang's native API takes any temperature of 0 or more.
const maxOpenAITemperature = 2

// checkSampling refuses sampling values that no server takes: each would
// turn every record into an HTTP 400 error (or, NaN and infinities, could
// not even be sent as JSON). Ranges as SGLang and the OpenAI API define
// them.
func checkSampling(p *backend.Params, chatAPI bool) error {
	inRange := func(name string, v *float64, lo, hi float64, loOpen bool, want string) error {
		if v == nil {
			return nil
		}
		x := *v
		if math.IsNaN(x) || x < lo || x > hi || loOpen && x == lo {
			return cliutil.Usagef("--%s %v: want %s", name, x, want)
		}
		return nil
	}
	maxT, wantT := math.MaxFloat64, "a number of 0 or more (0: greedy)"
	if chatAPI {
		maxT, wantT = maxOpenAITemperature, "a number from 0 to 2 (0: greedy)"
	}
	for _, err := range []error{
		inRange(flagTemperature, p.Temperature, 0, maxT, false, wantT),
		inRange(flagTopP, p.TopP, 0, 1, true, "a number above 0 and at most 1"),
		inRange(flagMinP, p.MinP, 0, 1, false, "a number from 0 to 1"),
	} {
		if err != nil {
			return err
		}
	}
	if p.TopK != nil && *p.TopK < 1 && *p.TopK != -1 {
		return cliutil.Usagef("--%s %d: want 1 or more, or -1 for no limit", flagTopK, *p.TopK)
	}
	for _, id := range p.StopTokenIDs {
		if id < 0 {
			return cliutil.Usagef("--%s %d: token ids are 0 or more", flagStopTokenID, id)
		}
	}
	if p.ReasoningMaxTokens < 0 {
		return cliutil.Usagef("--%s %d: must not be negative", flagReasoningMaxTokens, p.ReasoningMaxTokens)
	}
	return nil
}

// optional is a flag's value when it was given, else nil: the server's
// default then applies.
func optional[T any](c *cli.Context, name string, get func(string) T) *T {
	if !c.IsSet(name) {
		return nil
	}
	v := get(name)
	return &v
}

// readAPIKey takes the key from a file, else from the environment.
func readAPIKey(path string) (string, error) {
	if path == "" {
		for _, name := range apiKeyEnv {
			if k := strings.TrimSpace(os.Getenv(name)); k != "" {
				return k, checkKey(k, "$"+name)
			}
		}
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", exitcode.NoInputf("--%s: %v", flagAPIKeyFile, err)
	}
	// An editor on Windows may start the file with a byte order mark,
	// which is no part of any key.
	key := strings.TrimSpace(strings.TrimPrefix(string(b), "\uFEFF"))
	if key == "" {
		return "", exitcode.DataErrorf("--%s %s is empty", flagAPIKeyFile, path)
	}
	return key, checkKey(key, "--"+flagAPIKeyFile+" "+path)
}

// checkKey refuses a key that cannot go into a header: a second line or a
// control character would be refused on every request, as if no server
// were reachable. The message never shows the key.
func checkKey(key, source string) error {
	i := strings.IndexFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ' ' || r == '\uFEFF' })
	if i < 0 {
		return nil
	}
	what := "a space, a byte order mark or a control character"
	if key[i] == '\n' || key[i] == '\r' {
		what = "more than one line"
	}
	return cliutil.Usagef("%s holds %s: it must hold the API key alone", source, what)
}

// paramsJSON renders the sampling parameters for each record's gen.params,
// once: every record of a run shares them.
func paramsJSON(p backend.Params) json.RawMessage {
	m := map[string]any{"max_tokens": p.MaxTokens}
	put := func(k string, v any, set bool) {
		if set {
			m[k] = v
		}
	}
	put("temperature", p.Temperature, p.Temperature != nil)
	put("top_p", p.TopP, p.TopP != nil)
	put("top_k", p.TopK, p.TopK != nil)
	put("min_p", p.MinP, p.MinP != nil)
	put("seed", p.Seed, p.Seed != nil)
	put("stop", p.Stop, len(p.Stop) > 0)
	put("stop_token_ids", p.StopTokenIDs, len(p.StopTokenIDs) > 0)
	put("reasoning_effort", p.ReasoningEffort, p.ReasoningEffort != "")
	put("reasoning_max_tokens", p.ReasoningMaxTokens, p.ReasoningMaxTokens > 0)
	put("extra", p.Extra, len(p.Extra) > 0)
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("generate: sampling parameters: %v", err)) // only plain values: cannot fail
	}
	return b
}

// backendsTaking names, as --backend options, the kinds that send input.
func backendsTaking(input backend.Input) []string {
	var names []string
	for _, k := range backend.Kinds() {
		if k.Input == input {
			names = append(names, "--"+flagBackend+" "+k.Name)
		}
	}
	return names
}

// orList joins "a", "b" and "c" as "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
