package cliutil

import (
	"reflect"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// FlagDefault is the default that --help, the man page and completion show
// for f, or "" for none. It is the flag's DefaultText when set: the words for
// a default its value cannot hold ("the server's", "one per CPU") or the
// true default behind a "not set" value. Else it is the flag's value, unless
// that is the zero value (0, false, ""), which synthpipe's flags use for
// "not set": the usage says what happens then. So a default is shown once
// and is what the tool does.
func FlagDefault(f cli.Flag) string {
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return ""
	}
	if s := explicitDefaultText(f); s != "" {
		return s
	}
	s := df.GetDefaultText()
	if u, err := strconv.Unquote(s); err == nil && strings.HasPrefix(s, `"`) {
		s = u // string flags quote their value; the man page never did
	}
	if isZeroText(s) {
		return ""
	}
	return s
}

// explicitDefaultText is the DefaultText field every urfave/cli flag type
// has; GetDefaultText mixes it with the value, which hides whether it was set.
func explicitDefaultText(f cli.Flag) string {
	v := reflect.ValueOf(f)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	if fv := v.FieldByName("DefaultText"); fv.IsValid() && fv.Kind() == reflect.String {
		return fv.String()
	}
	return ""
}

func isZeroText(s string) bool {
	switch s {
	case "", "0", "0s", "false", "[]":
		return true
	}
	return false
}

// flagHelp renders one flag of --help: names, placeholder, usage, the
// default of FlagDefault and the environment variable. It replaces
// urfave/cli's, which shows "(default: 0)" for flags where 0 means "not set".
func flagHelp(f cli.Flag) string {
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return ""
	}
	placeholder, usage := unquoteUsage(df.GetUsage())
	if df.TakesValue() && placeholder == "" {
		placeholder = "value"
	}
	if d := FlagDefault(f); d != "" {
		usage += " (default: " + d + ")"
	}
	names := cli.FlagNamePrefixer(df.Names(), placeholder)
	if sf, ok := f.(cli.DocGenerationSliceFlag); ok && sf.IsSliceFlag() {
		names += " [ " + names + " ]"
	}
	return cli.FlagEnvHinter(df.GetEnvVars(), names+"\t"+strings.TrimSpace(usage))
}

// EnvVars lists the environment variables the tool reads: those of its
// visible flags (SYNTHPIPE_<FLAG>), in flag order, then the Spec's own
// Environment, which lists only what is no flag's (API keys, TERM, NO_COLOR).
func (s *Spec) EnvVars() []EnvVar {
	var all []EnvVar
	for _, f := range s.Flags {
		if vf, ok := f.(cli.VisibleFlag); ok && !vf.IsVisible() {
			continue
		}
		df, ok := f.(cli.DocGenerationFlag)
		if !ok {
			continue
		}
		for _, env := range df.GetEnvVars() {
			all = append(all, EnvVar{Name: env, Meaning: envMeaning(f)})
		}
	}
	return append(all, s.Environment...)
}

// envMeaning says what a flag's environment variable sets.
func envMeaning(f cli.Flag) string {
	m := "default for --" + f.Names()[0]
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return m
	}
	if !df.TakesValue() {
		return m + " (true or false)"
	}
	if sf, ok := f.(cli.DocGenerationSliceFlag); ok && sf.IsSliceFlag() {
		placeholder, _ := unquoteUsage(df.GetUsage())
		if placeholder == "" {
			placeholder = "value"
		}
		return m + " (one " + placeholder + ")"
	}
	return m
}
