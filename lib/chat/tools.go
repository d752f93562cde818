package chat

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/chattemplate"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/kimitools"
)

// Values of --tool-declaration: how a conversation's tools reach the chat
// template.
const (
	// DeclarationAuto declares tools in TypeScript when the template reads
	// tools_ts_str (Kimi-K2.5), and passes them as they are otherwise.
	DeclarationAuto = "auto"
	// DeclarationTypeScript does what Kimi-K2.5's tokenizer does whatever
	// the template: keys sorted, tools_ts_str set (sorted JSON where the
	// tools cannot be declared).
	DeclarationTypeScript = "typescript"
	// DeclarationJSON passes the tools as they are and no tools_ts_str,
	// as a plain jinja renderer of the template would.
	DeclarationJSON = "json"
)

// FlagToolDeclaration is the flag every tool that renders prompts takes.
const FlagToolDeclaration = "tool-declaration"

// ToolDeclarationFlag is --tool-declaration, the same in every tool that
// renders prompts (tokenize-prompts, generate, to-train), with
// SYNTHPIPE_TOOL_DECLARATION as its environment variable.
func ToolDeclarationFlag() cli.Flag {
	return &cli.StringFlag{Name: FlagToolDeclaration, Value: DeclarationAuto, EnvVars: []string{cliutil.EnvName(FlagToolDeclaration)},
		Usage: "how tools reach the chat template, `MODE`: auto (typescript when the template reads tools_ts_str, as Kimi-K2.5's does; json otherwise), " +
			"typescript (as Kimi-K2.5's tokenizer: keys sorted, the tools declared as a TypeScript namespace in tools_ts_str, sorted JSON where that cannot be done), " +
			"json (the tools as given, no tools_ts_str, as a plain jinja renderer)"}
}

// readsDeclaration finds templates that print a tools_ts_str variable, the
// mark of Kimi-K2.5's template (Kimi-K2 and K2-Thinking print JSON).
var readsDeclaration = regexp.MustCompile(`\btools_ts_str\b`)

// Template is a parsed chat template and how it is given tools.
type Template struct {
	*chattemplate.Template
	// TypeScript makes Render hand the template the tools as Kimi-K2.5's
	// tokenizer does: every object's keys sorted, and tools_ts_str.
	TypeScript bool
	// readsDeclaration: the template's source names tools_ts_str.
	readsDeclaration bool
	// ThinkingSwitch is the thinking variable the template reads
	// (enable_thinking, thinking, reasoning_effort), "" for none.
	ThinkingSwitch string
}

// SetToolDeclaration applies a --tool-declaration value ("" is auto). A nil
// Template (--template none) has nothing to declare to; the value is still
// checked.
func (t *Template) SetToolDeclaration(mode string) error {
	var typescript bool
	switch mode {
	case DeclarationAuto, "":
		typescript = t != nil && t.readsDeclaration
	case DeclarationTypeScript:
		typescript = true
	case DeclarationJSON:
	default:
		return exitcode.Usagef("--%s %q: must be auto, typescript or json", FlagToolDeclaration, mode)
	}
	if t != nil {
		t.TypeScript = typescript
	}
	return nil
}

// Render renders the template, first preparing o.Tools as the declaration
// mode says.
func (t *Template) Render(o chattemplate.Options) (string, error) {
	if err := t.PrepareTools(&o); err != nil {
		return "", err
	}
	return t.Template.Render(o)
}

// RenderOver is Render writing the text over the last one o.Cache holds
// (chattemplate.Template.RenderOver): the text is the cache's, valid until
// the next render through it.
func (t *Template) RenderOver(o chattemplate.Options) (string, error) {
	if err := t.PrepareTools(&o); err != nil {
		return "", err
	}
	return t.Template.RenderOver(o)
}

// PrepareTools rewrites o for the template as Kimi-K2.5's apply_chat_template
// does when t.TypeScript is set: tools with sorted keys, and tools_ts_str
// among the variables unless the encoder refuses the tools (the template then
// prints the sorted JSON). o.Extra is copied, not changed.
func (t *Template) PrepareTools(o *chattemplate.Options) error {
	if !t.TypeScript || len(o.Tools) == 0 {
		return nil
	}
	tools, err := kimitools.Prepare(o.Tools)
	if err != nil {
		return fmt.Errorf("tools: %w", err)
	}
	o.Tools = tools.Sorted
	if tools.Declared {
		decl, _ := json.Marshal(tools.Declaration) // a string cannot fail
		extra := make(map[string]json.RawMessage, len(o.Extra)+1)
		maps.Copy(extra, o.Extra)
		extra["tools_ts_str"] = decl
		o.Extra = extra
	}
	return nil
}
