package flaggroup

import (
	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
)

// Names of the server flags that other flags' checks and help name.
const (
	FlagBackend = "backend"
	FlagURL     = "url"
	FlagModel   = "model"
)

// DefaultBackend is --backend's default.
var DefaultBackend = backend.SGLang

// Server is the flags that name the inference servers a tool talks to,
// bound to kind (--backend, DefaultBackend until given), urls (--url,
// normalized: one server named twice is refused) and model (--model).
func Server(kind **backend.Kind, urls *[]string, model *string) []cli.Flag {
	*kind = DefaultBackend
	return []cli.Flag{
		&cli.StringFlag{Name: FlagBackend, Value: DefaultBackend.Name, EnvVars: cliutil.EnvVars(FlagBackend), Usage: backendUsage(),
			Action: func(_ *cli.Context, name string) error {
				k, ok := backend.Lookup(name)
				if !ok {
					return cliutil.Usagef("--%s %q: want %s", FlagBackend, name, OrList(backend.Names()))
				}
				*kind = k
				return nil
			}},
		&cli.StringSliceFlag{Name: FlagURL, EnvVars: cliutil.EnvVars(FlagURL),
			Usage: "server base `URL` (repeatable: requests are spread over all), e.g. http://gpu1:30000 or https://openrouter.ai/api/v1",
			Action: func(_ *cli.Context, raws []string) (err error) {
				if *urls, err = backend.NormalizeURLs(FlagURL, raws); err != nil {
					return cliutil.Usagef("%v", err)
				}
				return nil
			}},
		&cli.StringFlag{Name: FlagModel, EnvVars: cliutil.EnvVars(FlagModel), Usage: "model `NAME` for openai backends", Destination: model},
	}
}

// backendUsage lists the backends for --help, the default first.
func backendUsage() string {
	items := []string{DefaultBackend.Name + " (" + DefaultBackend.About + ")"}
	for _, k := range backend.Kinds() {
		if k != DefaultBackend {
			items = append(items, k.Name+" ("+k.About+")")
		}
	}
	return "server API (`KIND`): " + OrList(items)
}

// BackendsTaking names, as --backend options, the kinds that send input.
func BackendsTaking(input backend.Input) []string {
	var names []string
	for _, k := range backend.Kinds() {
		if k.Input == input {
			names = append(names, "--"+FlagBackend+" "+k.Name)
		}
	}
	return names
}
