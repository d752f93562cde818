package flaggroup

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestTemplateFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string
		check   func(tf Template) bool
	}{
		{name: "defaults", check: func(tf Template) bool {
			return tf.Tokenizer == "" && tf.Name == "auto" && tf.Args == nil && tf.Now == nil && tf.Declaration == "auto"
		}},
		{name: "set", args: []string{"--tokenizer", "dir", "--template", "none", "--template-arg", "enable_thinking=false", "--template-arg", "who=me", "--date", "2026-01-02", "--tool-declaration", "json"},
			check: func(tf Template) bool {
				return tf.Tokenizer == "dir" && tf.Name == "none" && string(tf.Args["enable_thinking"]) == "false" && string(tf.Args["who"]) == `"me"` &&
					tf.Now().Format("2006-01-02") == "2026-01-02" && tf.Declaration == "json"
			}},
		{name: "environment", env: map[string]string{"SYNTHPIPE_TOKENIZER": "envdir", "SYNTHPIPE_TEMPLATE": "t.jinja", "SYNTHPIPE_TOOL_DECLARATION": "typescript"},
			check: func(tf Template) bool {
				return tf.Tokenizer == "envdir" && tf.Name == "t.jinja" && tf.Declaration == "typescript"
			}},
		{name: "flag over environment", env: map[string]string{"SYNTHPIPE_TOKENIZER": "envdir"}, args: []string{"--tokenizer", "dir"},
			check: func(tf Template) bool { return tf.Tokenizer == "dir" }},
		{name: "bad template arg", args: []string{"--template-arg", "x"}, wantErr: `--template-arg "x": want key=value`},
		{name: "bad date", args: []string{"--date", "2026-13-01"}, wantErr: `--date "2026-13-01": expected YYYY-MM-DD`},
		{name: "bad declaration", args: []string{"--tool-declaration", "yaml"}, wantErr: `--tool-declaration "yaml": must be auto, typescript or json`},
		{name: "bad declaration from the environment", env: map[string]string{"SYNTHPIPE_TOOL_DECLARATION": "yaml"}, wantErr: `--tool-declaration "yaml"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var tf Template
			err := parseFlags(t, TemplateFlags(&tf, "testing"), tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.check(tf) {
				t.Fatalf("err = %v, flags %+v", err, tf)
			}
		})
	}
}

// TestTokenizerOnly: --tokenizer alone (generate's) reads the same
// environment variable as the whole group.
func TestTokenizerOnly(t *testing.T) {
	t.Setenv("SYNTHPIPE_TOKENIZER", "envdir")
	var path string
	if err := parseFlags(t, []cli.Flag{Tokenizer(&path, "testing")}); err != nil || path != "envdir" {
		t.Fatalf("err = %v, path %q", err, path)
	}
}
