// Package flaggroup declares the flag groups that several tools take, each
// once, bound to the fields of the struct it fills and checked where it is
// declared: so their names, help, environment variables and checks cannot
// drift from tool to tool. A tool adds a group's flags to its own and reads
// the struct after parsing.
package flaggroup

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/cliutil"
)

// Names of the sampling flags that other flags' checks and help name.
const (
	FlagMaxTokens       = "max-tokens"
	FlagTemperature     = "temperature"
	FlagReasoningEffort = "reasoning-effort"
)

// serversDefault is the default shown for a sampling option that is sent
// only when given.
const serversDefault = "the server's"

// MaxOpenAITemperature is the highest temperature OpenAI-compatible chat
// APIs accept; SGLang's native API takes any temperature of 0 or more.
const MaxOpenAITemperature = 2

// ReasoningEfforts are the --reasoning-effort levels OpenAI-compatible
// servers take (OpenRouter's reasoning.effort, OpenAI's reasoning_effort).
var ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high"}

// Sampling is the sampling flags, bound to p: --max-tokens (always sent:
// SGLang's own default of 128 truncates silently) and the options that are
// sent only when given, so that the server's defaults apply otherwise. Each
// refuses the values no server takes, which would turn every record into
// an HTTP 400 error (NaN and infinities could not even be sent as JSON);
// --temperature's bound depends on the backend: see CheckSampling.
//
// A new sampling parameter is a field of backend.Sampling, whose tags name
// it in each request body, and its flag here: nothing else names it.
func Sampling(p *backend.Params) []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: FlagMaxTokens, Value: capacity.DefaultMaxTokens, EnvVars: cliutil.EnvVars(FlagMaxTokens), Destination: &p.MaxTokens,
			Usage: "most tokens per answer, `N` (always sent: SGLang's own default of 128 truncates silently); capped per request at what the prompt leaves of the context length",
			Action: func(_ *cli.Context, n int) error {
				if n < 1 {
					return cliutil.Usagef("--%s must be at least 1", FlagMaxTokens)
				}
				return nil
			}},
		&cli.Float64Flag{Name: FlagTemperature, DefaultText: serversDefault,
			Usage:  fmt.Sprintf("sampling temperature `T`, 0 or more (0: greedy; at most %d for chat backends)", MaxOpenAITemperature),
			Action: func(_ *cli.Context, v float64) error { p.Temperature = &v; return nil }},
		&cli.Float64Flag{Name: "top-p", DefaultText: serversDefault, Usage: "nucleus sampling `P`, above 0 and at most 1",
			Action: func(_ *cli.Context, v float64) error {
				p.TopP = &v
				return inRange("top-p", v, 0, 1, true, "a number above 0 and at most 1")
			}},
		&cli.IntFlag{Name: "top-k", DefaultText: serversDefault, Usage: "top-k sampling `K`, 1 or more (-1: no limit)",
			Action: func(_ *cli.Context, k int) error {
				p.TopK = &k
				if k < 1 && k != -1 {
					return cliutil.Usagef("--top-k %d: want 1 or more, or -1 for no limit", k)
				}
				return nil
			}},
		&cli.Float64Flag{Name: "min-p", DefaultText: serversDefault, Usage: "min-p sampling `P`, from 0 to 1",
			Action: func(_ *cli.Context, v float64) error {
				p.MinP = &v
				return inRange("min-p", v, 0, 1, false, "a number from 0 to 1")
			}},
		&cli.StringSliceFlag{Name: "stop", Usage: "stop `STRING` (repeatable)",
			Action: func(_ *cli.Context, s []string) error { p.Stop = s; return nil }},
		&cli.IntSliceFlag{Name: "stop-token-id", Usage: "stop token `ID` (repeatable)",
			Action: func(_ *cli.Context, ids []int) error {
				p.StopTokenIDs = ids
				for _, id := range ids {
					if id < 0 {
						return cliutil.Usagef("--stop-token-id %d: token ids are 0 or more", id)
					}
				}
				return nil
			}},
		&cli.Int64Flag{Name: FlagSeed, DefaultText: serversDefault, Usage: "sampling `SEED` (with --samples, sample k is sent with SEED+k-1, SEED 0 when not given)",
			Action: func(_ *cli.Context, v int64) error { p.Seed = &v; return nil }},
		&cli.StringFlag{Name: FlagReasoningEffort, Destination: &p.ReasoningEffort,
			Usage: "reasoning effort `LEVEL` for openai backends: " + strings.Join(ReasoningEfforts, ", "),
			Action: func(_ *cli.Context, s string) error {
				if s != "" && !slices.Contains(ReasoningEfforts, s) {
					return cliutil.Usagef("--%s %q: want %s", FlagReasoningEffort, s, OrList(ReasoningEfforts))
				}
				return nil
			}},
		&cli.IntFlag{Name: "reasoning-max-tokens", Usage: "reasoning token limit `N` for openai backends", Destination: &p.ReasoningMaxTokens,
			Action: func(_ *cli.Context, n int) error {
				if n < 0 {
					return cliutil.Usagef("--reasoning-max-tokens %d: must not be negative", n)
				}
				return nil
			}},
		&cli.StringFlag{Name: "extra", Usage: "`JSON` object merged into every request body",
			Action: func(_ *cli.Context, s string) error {
				var obj map[string]json.RawMessage
				if err := json.Unmarshal([]byte(s), &obj); err != nil {
					return cliutil.Usagef("--extra: not a JSON object: %v", err)
				}
				p.Extra = json.RawMessage(s)
				return nil
			}},
	}
}

// FlagSeed is --seed, which --samples counts from.
const FlagSeed = "seed"

// CheckSampling checks what depends on the backend: chat APIs take a
// temperature of at most MaxOpenAITemperature.
func CheckSampling(p *backend.Params, chatAPI bool) error {
	if p.Temperature == nil {
		return nil
	}
	if chatAPI {
		return inRange(FlagTemperature, *p.Temperature, 0, MaxOpenAITemperature, false, fmt.Sprintf("a number from 0 to %d (0: greedy)", MaxOpenAITemperature))
	}
	return inRange(FlagTemperature, *p.Temperature, 0, math.MaxFloat64, false, "a number of 0 or more (0: greedy)")
}

// inRange refuses x outside [lo, hi] (or (lo, hi] when loOpen), and NaN.
func inRange(name string, x, lo, hi float64, loOpen bool, want string) error {
	if math.IsNaN(x) || x < lo || x > hi || loOpen && x == lo {
		return cliutil.Usagef("--%s %v: want %s", name, x, want)
	}
	return nil
}

// OrList joins "a", "b" and "c" as "a, b or c".
func OrList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
