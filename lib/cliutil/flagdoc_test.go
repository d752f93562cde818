package cliutil

import (
	"reflect"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

func TestFlagDefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		flag cli.Flag
		want string
	}{
		{"a value", &cli.IntFlag{Name: "n", Value: 4096}, "4096"},
		{"a string, unquoted", &cli.StringFlag{Name: "s", Value: "auto"}, "auto"},
		{"a duration", &cli.DurationFlag{Name: "d", Value: 30 * time.Second}, "30s"},
		{"zero: not set, no default", &cli.IntFlag{Name: "n"}, ""},
		{"zero duration", &cli.DurationFlag{Name: "d"}, ""},
		{"empty string", &cli.StringFlag{Name: "s"}, ""},
		{"a switch, off", &cli.BoolFlag{Name: "b"}, ""},
		{"a switch, on", &cli.BoolFlag{Name: "b", Value: true}, "true"},
		{"empty list", &cli.StringSliceFlag{Name: "l"}, ""},
		{"words for a default the value cannot hold", &cli.Float64Flag{Name: "t", DefaultText: "the server's"}, "the server's"},
		{"the words win over a sentinel", &cli.DurationFlag{Name: "d", Value: -1, DefaultText: "1s"}, "1s"},
		{"a zero that is a real default", &cli.IntFlag{Name: "n", DefaultText: "0"}, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FlagDefault(tc.flag); got != tc.want {
				t.Errorf("FlagDefault = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFlagHelpShowsOneDefault(t *testing.T) {
	f := &cli.IntFlag{Name: "max-total-tokens", EnvVars: []string{"SYNTHPIPE_MAX_TOTAL_TOKENS"}, Usage: "KV cache size in `TOKENS`"}
	if got, want := flagHelp(f), "--max-total-tokens TOKENS\tKV cache size in TOKENS [$SYNTHPIPE_MAX_TOTAL_TOKENS]"; got != want {
		t.Errorf("zero value:\n got %q\nwant %q", got, want)
	}
	f.DefaultText = "159277"
	if got, want := flagHelp(f), "--max-total-tokens TOKENS\tKV cache size in TOKENS (default: 159277) [$SYNTHPIPE_MAX_TOTAL_TOKENS]"; got != want {
		t.Errorf("DefaultText:\n got %q\nwant %q", got, want)
	}
}

func TestEnvVarsFromFlags(t *testing.T) {
	s := Spec{
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", EnvVars: []string{"SYNTHPIPE_URL"}},
			&cli.StringSliceFlag{Name: "done", EnvVars: []string{"SYNTHPIPE_DONE"}, Usage: "done `FILE`"},
			&cli.BoolFlag{Name: "quiet", EnvVars: []string{"SYNTHPIPE_QUIET"}},
			&cli.StringFlag{Name: "hidden", EnvVars: []string{"SYNTHPIPE_HIDDEN"}, Hidden: true},
			&cli.StringFlag{Name: "no-env"},
		},
		Environment: []EnvVar{{Name: "NO_COLOR", Meaning: "no colours"}},
	}
	want := []EnvVar{
		{"SYNTHPIPE_URL", "default for --url"},
		{"SYNTHPIPE_DONE", "default for --done (one FILE)"},
		{"SYNTHPIPE_QUIET", "default for --quiet (true or false)"},
		{"NO_COLOR", "no colours"},
	}
	if got := s.EnvVars(); !reflect.DeepEqual(got, want) {
		t.Errorf("EnvVars:\n got %v\nwant %v", got, want)
	}
}
