package llmsim

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/sim"
	"github.com/synthpipe/synthpipe/lib/statusfile"
)

// perMillion converts the USD-per-million-tokens prices of the flags into
// the USD-per-token prices of sim.Config.
const perMillion = 1e6

func run(c *cli.Context) error {
	cfg, err := simConfig(c)
	if err != nil {
		return err
	}
	addr, err := listenAddr(c)
	if err != nil {
		return err
	}
	if path := c.String(flagURLFile); path != "" {
		if err := statusfile.CheckTarget(path); err != nil {
			return cliutil.Usagef("--%s %v", flagURLFile, err)
		}
	}
	srv, err := sim.New(cfg)
	if err != nil {
		return cliutil.Usagef("%v", err)
	}
	url, err := srv.Start(addr)
	if err != nil {
		srv.Close()
		return exitcode.TempFailf("%v", err)
	}
	if err := announce(c, url); err != nil {
		srv.Close()
		return err
	}
	<-c.Context.Done() // SIGINT or SIGTERM: the normal way to stop a server
	err = srv.Close()
	if c.Bool(flagStats) {
		b, _ := json.Marshal(srv.Stats())
		fmt.Fprintf(c.App.ErrWriter, "%s\n", b)
	}
	return err
}

// announce tells whoever started the server where it listens. The URL file
// is renamed into place so that a script polling for it never reads half.
func announce(c *cli.Context, url string) error {
	path := c.String(flagURLFile)
	if path == "" {
		_, err := fmt.Fprintln(c.App.Writer, url)
		return err
	}
	if err := statusfile.WriteAtomic(path, []byte(url+"\n")); err != nil {
		return exitcode.CantCreatef("--%s: %v", flagURLFile, err)
	}
	return nil
}

// listenAddr is the address to listen on, from --addr and --port; one that
// is not on loopback is a usage error (64), not a failure to try again.
func listenAddr(c *cli.Context) (string, error) {
	addr, err := flagsAddr(c)
	if err != nil {
		return "", err
	}
	if err := sim.CheckLoopback(addr); err != nil {
		return "", cliutil.Usagef("--%s %q: %v", flagAddr, addr, err)
	}
	return addr, nil
}

func flagsAddr(c *cli.Context) (string, error) {
	addr := c.String(flagAddr)
	if !c.IsSet(flagPort) {
		return addr, nil
	}
	port := c.Int(flagPort)
	if port < 0 || port > 65535 {
		return "", cliutil.Usagef("--%s %d: not a TCP port", flagPort, port)
	}
	host := "127.0.0.1"
	if c.IsSet(flagAddr) {
		h, _, err := net.SplitHostPort(addr)
		if err != nil {
			return "", cliutil.Usagef("--%s %q: %v", flagAddr, addr, err)
		}
		host = h
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// simConfig starts from sim.Default and applies the flags that were given.
func simConfig(c *cli.Context) (sim.Config, error) {
	cfg := sim.Default()
	setString(c, flagModel, &cfg.ModelName)
	setInt(c, flagMaxTotalTokens, &cfg.MaxTotalTokens)
	setInt(c, flagMaxRunning, &cfg.MaxRunningRequests)
	setInt(c, flagContextLength, &cfg.ContextLength)
	setInt(c, flagDPSize, &cfg.DataParallel)
	setInt(c, flagKeyRateLimit, &cfg.KeyRateLimit)
	cfg.KeyLimit = c.Float64(flagKeyLimit)
	cfg.KeyUsage = c.Float64(flagKeyUsage)
	setInt(c, flagDefaultMaxNew, &cfg.DefaultMaxNewTokens)
	setInt(c, flagVocabSize, &cfg.VocabSize)
	setInt(c, flagEOSTokenID, &cfg.EOSTokenID)
	setInt(c, flagAbortStatus, &cfg.Faults.AbortStatusCode)
	cfg.StepTime = c.Duration(flagStepTime)
	cfg.PerTokenTime = c.Duration(flagPerTokenTime)
	cfg.PrefillTimePerToken = c.Duration(flagPrefillTime)
	cfg.PrefixCacheTokens = c.Int(flagPrefixCache)
	switch f := c.String(flagAnswerFormat); f {
	case "words":
		cfg.AnswerFormat = sim.AnswerWords
	case sim.AnswerKimiK25:
		cfg.AnswerFormat = f
	default:
		return cfg, cliutil.Usagef("--%s %q: say words or %s", flagAnswerFormat, f, sim.AnswerKimiK25)
	}
	cfg.IncrementalStreaming = c.Bool(flagIncremental)
	cfg.NoMetrics = c.Bool(flagNoMetrics)
	switch which := c.String(flagLoadReports); which {
	case "all":
		cfg.LoadReports = sim.LoadReportsAll
	case sim.LoadReportsGetLoad, sim.LoadReportsNone:
		cfg.LoadReports = which
	default:
		return cfg, cliutil.Usagef("--%s %q: say all, %s or %s", flagLoadReports, which, sim.LoadReportsGetLoad, sim.LoadReportsNone)
	}
	cfg.Seed = c.Uint64(flagSeed)
	if c.IsSet(flagPromptPrice) {
		cfg.PromptPrice = c.Float64(flagPromptPrice) / perMillion
	}
	if c.IsSet(flagCompletionPrice) {
		cfg.CompletionPrice = c.Float64(flagCompletionPrice) / perMillion
	}
	if c.IsSet(flagReasoningShare) {
		cfg.ReasoningShare = c.Float64(flagReasoningShare)
	}
	if c.IsSet(flagRetryAfter) {
		cfg.Faults.RetryAfter = c.Duration(flagRetryAfter)
	}
	if c.IsSet(flagSlowFirstTokenDel) {
		cfg.Faults.SlowFirstTokenDelay = c.Duration(flagSlowFirstTokenDel)
	}
	var err error
	if cfg.Lengths, err = sim.ParseLengthDist(c.String(flagLengths)); err != nil {
		return cfg, cliutil.Usagef("--%s: %v", flagLengths, strings.TrimPrefix(err.Error(), "sim: "))
	}
	if cfg.APIKey, err = apiKey(c); err != nil {
		return cfg, err
	}
	for _, spec := range c.StringSlice(flagFault) {
		if err := setFault(&cfg.Faults, spec); err != nil {
			return cfg, cliutil.Usagef("--%s %q: %v", flagFault, spec, err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, cliutil.Usagef("%s", strings.TrimPrefix(err.Error(), "sim: "))
	}
	return cfg, nil
}

func setString(c *cli.Context, name string, dst *string) {
	if c.IsSet(name) {
		*dst = c.String(name)
	}
}

func setInt(c *cli.Context, name string, dst *int) {
	if c.IsSet(name) {
		*dst = c.Int(name)
	}
}

// apiKey reads the key from --api-key-file or the environment: a key on
// the command line would show in ps and shell history.
func apiKey(c *cli.Context) (string, error) {
	path := c.String(flagAPIKeyFile)
	if path == "" {
		return os.Getenv(envAPIKey), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", exitcode.NoInputf("--%s: %v", flagAPIKeyFile, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// faultRates maps each fault name to its probability field.
func faultRates(f *sim.FaultConfig) map[sim.FaultKind]*float64 {
	return map[sim.FaultKind]*float64{
		sim.FaultHTTP500:        &f.HTTP500,
		sim.FaultRateLimit:      &f.RateLimit,
		sim.FaultReset:          &f.Reset,
		sim.FaultHang:           &f.Hang,
		sim.FaultSlowFirstToken: &f.SlowFirstToken,
		sim.FaultMidStreamError: &f.MidStreamError,
		sim.FaultGarbage:        &f.Garbage,
		sim.FaultHTML:           &f.HTML,
		sim.FaultAbort:          &f.Abort,
		sim.FaultNoCredits:      &f.NoCredits,
		sim.FaultModeration:     &f.Moderation,
		sim.FaultRepetition:     &f.Repetition,
		sim.FaultMarkerLeak:     &f.MarkerLeak,
	}
}

func faultKindList() string {
	var names []string
	for k := sim.FaultKind(1); ; k++ {
		name := k.String()
		if strings.HasPrefix(name, "fault(") {
			break
		}
		names = append(names, name)
	}
	return strings.Join(names, ", ")
}

// setFault applies one --fault KIND=P.
func setFault(f *sim.FaultConfig, spec string) error {
	name, prob, ok := strings.Cut(spec, "=")
	if !ok {
		return fmt.Errorf("want KIND=PROBABILITY, e.g. http500=0.05")
	}
	kind, err := sim.ParseFaultKind(name)
	if err != nil || kind == sim.FaultNone {
		return fmt.Errorf("unknown fault kind %q (kinds: %s)", name, faultKindList())
	}
	p, err := strconv.ParseFloat(prob, 64)
	if err != nil || p < 0 || p > 1 {
		return fmt.Errorf("probability %q is not a number in [0, 1]", prob)
	}
	*faultRates(f)[kind] = p
	return nil
}
