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

// config is llm-sim's options: flags sets its fields from the flags (the
// server's in sim, from sim.Default), each checked where it is declared,
// and check what depends on several of them.
type config struct {
	sim        sim.Config
	addr       string
	port       int
	urlFile    string
	apiKeyFile string
	stats      bool
}

// check reads the API key, checks the server's configuration as a whole
// and the address to listen on, and the --url-file target.
func (cfg *config) check(c *cli.Context) (err error) {
	if cfg.sim.APIKey, err = apiKey(cfg.apiKeyFile); err != nil {
		return err
	}
	if err := cfg.sim.Validate(); err != nil {
		return cliutil.Usagef("%s", strings.TrimPrefix(err.Error(), "sim: "))
	}
	if cfg.addr, err = cfg.listenAddr(c); err != nil {
		return err
	}
	if cfg.urlFile != "" {
		if err := statusfile.CheckTarget(cfg.urlFile); err != nil {
			return cliutil.Usagef("--%s %v", flagURLFile, err)
		}
	}
	return nil
}

func run(c *cli.Context, cfg *config) error {
	if err := cfg.check(c); err != nil {
		return err
	}
	srv, err := sim.New(cfg.sim)
	if err != nil {
		return cliutil.Usagef("%v", err)
	}
	url, err := srv.Start(cfg.addr)
	if err != nil {
		srv.Close()
		return exitcode.TempFailf("%v", err)
	}
	if err := cfg.announce(c, url); err != nil {
		srv.Close()
		return err
	}
	<-c.Context.Done() // SIGINT or SIGTERM: the normal way to stop a server
	err = srv.Close()
	if cfg.stats {
		b, _ := json.Marshal(srv.Stats())
		fmt.Fprintf(c.App.ErrWriter, "%s\n", b)
	}
	return err
}

// announce tells whoever started the server where it listens. The URL file
// is renamed into place so that a script polling for it never reads half.
func (cfg *config) announce(c *cli.Context, url string) error {
	if cfg.urlFile == "" {
		_, err := fmt.Fprintln(c.App.Writer, url)
		return err
	}
	if err := statusfile.WriteAtomic(cfg.urlFile, []byte(url+"\n")); err != nil {
		return exitcode.CantCreatef("--%s: %v", flagURLFile, err)
	}
	return nil
}

// listenAddr is the address to listen on, from --addr and --port; one that
// is not on loopback is a usage error (64), not a failure to try again.
func (cfg *config) listenAddr(c *cli.Context) (string, error) {
	addr, err := cfg.flagsAddr(c)
	if err != nil {
		return "", err
	}
	if err := sim.CheckLoopback(addr); err != nil {
		return "", cliutil.Usagef("--%s %q: %v", flagAddr, addr, err)
	}
	return addr, nil
}

func (cfg *config) flagsAddr(c *cli.Context) (string, error) {
	if !c.IsSet(flagPort) {
		return cfg.addr, nil
	}
	host := "127.0.0.1"
	if c.IsSet(flagAddr) {
		h, _, err := net.SplitHostPort(cfg.addr)
		if err != nil {
			return "", cliutil.Usagef("--%s %q: %v", flagAddr, cfg.addr, err)
		}
		host = h
	}
	return net.JoinHostPort(host, strconv.Itoa(cfg.port)), nil
}

// apiKey reads the key from --api-key-file (path) or the environment: a
// key on the command line would show in ps and shell history.
func apiKey(path string) (string, error) {
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
