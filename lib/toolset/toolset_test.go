package toolset

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
)

// TestAllListsEveryCommand fails when a tool in cmd/ is missing from All (so
// from the man pages, shell completion and the end-to-end tests) or All names
// one that is not there.
func TestAllListsEveryCommand(t *testing.T) {
	entries, err := os.ReadDir("../../cmd")
	if err != nil {
		t.Fatal(err)
	}
	var inCmd, listed []string
	for _, e := range entries {
		if e.IsDir() {
			inCmd = append(inCmd, e.Name())
		}
	}
	for _, tool := range All() {
		listed = append(listed, tool.Name)
		if name := tool.NewApp().Name; name != tool.Name {
			t.Errorf("toolset lists %q with an app named %q", tool.Name, name)
		}
	}
	slices.Sort(listed)
	if !slices.Equal(inCmd, listed) {
		t.Errorf("cmd/ holds %v, toolset.All lists %v: add every tool to All in lib/toolset/toolset.go", inCmd, listed)
	}
}

// TestEnvironmentFromFlags: every environment variable a flag reads is in the
// ENVIRONMENT of --help and the man page, and a tool's own list holds only
// what is no flag's (so the two cannot drift apart).
func TestEnvironmentFromFlags(t *testing.T) {
	for _, tool := range All() {
		t.Run(tool.Name, func(t *testing.T) {
			app := tool.NewApp()
			spec := app.Spec
			flagEnv := map[string]string{}
			for _, f := range app.VisibleFlags() {
				for _, env := range f.(cli.DocGenerationFlag).GetEnvVars() {
					flagEnv[env] = f.Names()[0]
				}
			}
			for _, e := range spec.Environment {
				if flag, ok := flagEnv[e.Name]; ok {
					t.Errorf("Spec.Environment lists %s, the variable of --%s: drop it there, it comes from the flag", e.Name, flag)
				}
			}
			help := helpText(t, tool)
			helpEnv := section(help, "ENVIRONMENT:", "EXIT STATUS:")
			man := manPage(app)
			manEnv := section(man, ".SH ENVIRONMENT", ".SH EXIT STATUS")
			for env, flag := range flagEnv {
				if !regexp.MustCompile(`(?m)^   ` + env + ` +default for --` + flag + `\b`).MatchString(helpEnv) {
					t.Errorf("--help ENVIRONMENT does not list %s for --%s:\n%s", env, flag, helpEnv)
				}
				if !strings.Contains(manEnv, `\fB`+strings.ReplaceAll(env, "_", `\_`)+`\fP`) && !strings.Contains(manEnv, `\fB`+env+`\fP`) {
					t.Errorf("the man page's ENVIRONMENT does not list %s:\n%s", env, manEnv)
				}
			}
			for _, e := range spec.Environment {
				if !strings.Contains(helpEnv, "   "+e.Name+" ") {
					t.Errorf("--help ENVIRONMENT does not list %s", e.Name)
				}
			}
		})
	}
}

// defaultMention is a default as help text states it: "(default: 30s)", or
// within words, "(N, default 1s)".
var defaultMention = regexp.MustCompile(`\(default\b|[,;] default\b`)

// TestDefaultsShownOnce: each option of --help, the man page and zsh
// completion states its default at most once, and never a "not set"
// sentinel such as -1 or -1ns.
func TestDefaultsShownOnce(t *testing.T) {
	check := func(t *testing.T, where, entry string) {
		t.Helper()
		if n := len(defaultMention.FindAllString(entry, -1)); n > 1 {
			t.Errorf("%s: %d defaults in %q", where, n, entry)
		}
		if strings.Contains(entry, "(default: -") {
			t.Errorf("%s: a negative default is a \"not set\" sentinel, not what the tool does (give the flag a DefaultText): %q", where, entry)
		}
	}
	for _, tool := range All() {
		t.Run(tool.Name, func(t *testing.T) {
			app := tool.NewApp()
			options := section(helpText(t, tool), "OPTIONS:", "EXIT STATUS:")
			for _, line := range strings.Split(options, "\n") {
				if strings.HasPrefix(line, "   -") {
					check(t, "--help", line)
				}
			}
			man := section(manPage(app), ".SH OPTIONS", ".SH ENVIRONMENT")
			for _, entry := range strings.Split(man, ".TP") {
				check(t, "man page", entry)
			}
			for _, line := range strings.Split(cliutil.ZshCompletion(app), "\n") {
				check(t, "zsh completion", line)
			}
		})
	}
}

func helpText(t *testing.T, tool Tool) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := tool.Main([]string{tool.Name, "--help"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("%s --help: exit %d: %s", tool.Name, code, stderr.String())
	}
	return stdout.String()
}

func manPage(app *cliutil.App) string {
	return string(ManPage(app))
}

// section is the text of s from the line that starts with from to the one
// that starts with to.
func section(s, from, to string) string {
	i := strings.Index(s, "\n"+from)
	if i < 0 {
		return ""
	}
	s = s[i+1:]
	if j := strings.Index(s, "\n"+to); j >= 0 {
		s = s[:j]
	}
	return s
}
