package cliutil

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// ManMarkdown writes app's section-1 man page, in go-md2man's Markdown, from
// the same Spec that --help shows: NAME, SYNOPSIS, DESCRIPTION, OPTIONS,
// ENVIRONMENT, EXIT STATUS, EXAMPLES, SEE ALSO. toolset renders it to roff:
// the tools themselves never render a man page, so they do not link the
// Markdown renderer (whose package init every run would pay).
func ManMarkdown(app *App) string {
	s := app.Spec
	var b strings.Builder
	fmt.Fprintf(&b, "%% %s 1 \"\" \"synthpipe %s\" \"synthpipe manual\"\n\n", strings.ToUpper(s.Name), Version)
	fmt.Fprintf(&b, "# NAME\n\n%s - %s\n\n", s.Name, mdEscape(s.Usage))
	fmt.Fprintf(&b, "# SYNOPSIS\n\n**%s** [*options*] %s\n\n", s.Name, mdEscape(s.ArgsUsage))
	fmt.Fprintf(&b, "# DESCRIPTION\n\n%s\n\n", paragraphs(s.Description))
	b.WriteString("# OPTIONS\n\n")
	for _, f := range app.VisibleFlags() {
		writeFlag(&b, f)
	}
	b.WriteString("**-h**, **--help**\n: Show help and exit.\n\n**-v**, **--version**\n: Print the version and exit.\n\n")
	b.WriteString("# ENVIRONMENT\n\n")
	env := s.EnvVars()
	if len(env) == 0 {
		b.WriteString("None of its own.\n\n")
	}
	for _, e := range env {
		fmt.Fprintf(&b, "**%s**\n: %s\n\n", e.Name, mdEscape(e.Meaning))
	}
	b.WriteString("# EXIT STATUS\n\n")
	for _, e := range s.ExitStatuses() {
		fmt.Fprintf(&b, "**%d**\n: %s\n\n", e.Code, mdEscape(e.Meaning))
	}
	if len(s.Examples) > 0 {
		b.WriteString("# EXAMPLES\n\n")
		for _, ex := range s.Examples {
			fmt.Fprintf(&b, "%s:\n\n```\n%s\n```\n\n", mdEscape(capitalize(ex.Comment)), ex.Command)
		}
	}
	if len(s.SeeAlso) > 0 {
		refs := make([]string, len(s.SeeAlso))
		for i, r := range s.SeeAlso {
			if k := strings.IndexByte(r, '('); k > 0 {
				refs[i] = "**" + r[:k] + "**" + r[k:]
			} else {
				refs[i] = r
			}
		}
		fmt.Fprintf(&b, "# SEE ALSO\n\n%s\n", strings.Join(refs, ", "))
	}
	return b.String()
}

func writeFlag(b *strings.Builder, f cli.Flag) {
	df, ok := f.(cli.DocGenerationFlag)
	names := f.Names()
	parts := make([]string, len(names))
	for i, n := range names {
		dash := "--"
		if len(n) == 1 {
			dash = "-"
		}
		parts[i] = "**" + dash + n + "**"
	}
	head := strings.Join(parts, ", ")
	usage := ""
	if ok {
		usage = df.GetUsage()
		if df.TakesValue() {
			placeholder, rest := unquoteUsage(usage)
			if placeholder == "" {
				placeholder = "value"
			}
			head += " *" + placeholder + "*"
			usage = rest
		}
		if d := FlagDefault(f); d != "" {
			usage += fmt.Sprintf(" (default: %s)", d)
		}
		if env := df.GetEnvVars(); len(env) > 0 {
			usage = strings.TrimSuffix(usage, ".") + fmt.Sprintf(". Environment: %s.", strings.Join(env, ", "))
		}
	}
	fmt.Fprintf(b, "%s\n: %s\n\n", head, mdEscape(usage))
}

func paragraphs(s string) string {
	paras := strings.Split(strings.TrimSpace(s), "\n\n")
	for i, p := range paras {
		paras[i] = mdEscape(strings.Join(strings.Fields(p), " "))
	}
	return strings.Join(paras, "\n\n")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// mdEscape keeps Markdown from reading prose as markup.
func mdEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "<", `\<`, "[", `\[`)
	return r.Replace(s)
}

// unquoteUsage splits a flag's usage into its `PLACEHOLDER` and the text with
// the backquotes removed, as urfave/cli does for --help.
func unquoteUsage(usage string) (placeholder, text string) {
	i := strings.IndexByte(usage, '`')
	if i < 0 {
		return "", usage
	}
	j := strings.IndexByte(usage[i+1:], '`')
	if j < 0 {
		return "", usage
	}
	name := usage[i+1 : i+1+j]
	return name, usage[:i] + name + usage[i+2+j:]
}
