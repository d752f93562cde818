package tokenizeprompts

import (
	"strings"
	"testing"

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
		tpl, err := loadTemplate(tc.name, "tok", tc.fromTokenizer)
		if code := cliutil.ExitCode(err); code != tc.code || err != nil && !strings.HasPrefix(err.Error(), tc.message) {
			t.Errorf("%s %q: got exit %d, %v; want exit %d, %q", tc.name, tc.fromTokenizer, code, err, tc.code, tc.message)
		}
		if err == nil && (tpl == nil) != tc.wantNil {
			t.Errorf("%s: got template %v", tc.name, tpl)
		}
	}
}

func TestTemplateClock(t *testing.T) {
	now, err := templateClock("2025-06-15")
	if err != nil || now().Format("02 Jan 2006") != "15 Jun 2025" {
		t.Errorf("2025-06-15: %v", err)
	}
	if now, err := templateClock(""); now != nil || err != nil {
		t.Errorf("no --date: got a clock or %v; want the real clock (nil)", err)
	}
	if _, err := templateClock("2025-6-15"); cliutil.ExitCode(err) != 64 {
		t.Errorf("a bad date: got %v, want a usage error", err)
	}
}
