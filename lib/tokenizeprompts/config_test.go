package tokenizeprompts

import (
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/cliutil"
)

func TestLoadTemplate(t *testing.T) {
	tests := []struct {
		name, fromTokenizer string
		wantNil             bool
		code                int
		message             string
	}{
		{name: "none", wantNil: true},
		{name: "auto", fromTokenizer: "{{ messages[0].content }}"},
		{name: "auto", code: 64, message: "the tokenizer tok has no chat template: pass --template FILE (or --template none for rendered text records)"},
		{name: "auto", fromTokenizer: "{% if %}", code: 65, message: "chat template: tok/chat_template:1:"},
		{name: "testdata/conformance/qwen3.jinja"},
		{name: "testdata/nope.jinja", code: 66, message: "--template: open testdata/nope.jinja: no such file or directory"},
	}
	for _, tc := range tests {
		tpl, err := chat.LoadTemplate(tc.name, "tok", tc.fromTokenizer)
		if code := cliutil.ExitCode(err); code != tc.code || err != nil && !strings.HasPrefix(err.Error(), tc.message) {
			t.Errorf("%s %q: got exit %d, %v; want exit %d, %q", tc.name, tc.fromTokenizer, code, err, tc.code, tc.message)
		}
		if err == nil && (tpl == nil) != tc.wantNil {
			t.Errorf("%s: got template %v", tc.name, tpl)
		}
	}
}
