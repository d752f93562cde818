package cliutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/exitcode"
)

func TestParseCount(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{in: "12345", want: 12345},
		{in: "0", want: 0},
		{in: "250k", want: 250_000},
		{in: "250K", want: 250_000},
		{in: "10M", want: 10_000_000},
		{in: "10m", want: 10_000_000},
		{in: "1.5G", want: 1_500_000_000},
		{in: "2T", want: 2_000_000_000_000},
		{in: "0.5k", want: 500},
		{in: "64Ki", want: 64 << 10},
		{in: "64Mi", want: 64 << 20},
		{in: "1Gi", want: 1 << 30},
		{in: "1.5Ki", want: 1536},
		{in: "1.005k", want: 1005},
		{in: "1.015M", want: 1_015_000},
		{in: "9.995M", want: 9_995_000},
		{in: "0.000001M", want: 1},
		{in: "4611686018427387903", want: 4611686018427387903},
		{in: "4611686018427387904", wantErr: "too large"},
		{in: "1.0000001M", wantErr: "not a whole number"},
		{in: "1.0001Ki", wantErr: "not a whole number"},
		{in: " 7 ", want: 7},
		{in: "-5", wantErr: `"-5" is negative`},
		{in: "-1.5M", wantErr: "is negative"},
		{in: "1.5", wantErr: `"1.5" is not a whole number`},
		{in: "1.0001k", wantErr: "not a whole number"},
		{in: "", wantErr: "empty number"},
		{in: "k", wantErr: `"k" is not a number`},
		{in: "abc", wantErr: "is not a number (try 250k, 10M, 1.5G or 12345)"},
		{in: "10MB", wantErr: "is not a number"},
		{in: "+5", wantErr: "is not a number"},
		{in: "0x10", wantErr: "is not a number"},
		{in: "1e3", wantErr: "is not a number"},
		{in: "Inf", wantErr: "is not a number"},
		{in: "NaN", wantErr: "is not a number"},
		{in: "1.2.3", wantErr: "is not a number"},
		{in: ".", wantErr: "is not a number"},
		{in: "1_000", wantErr: "is not a number"},
		{in: "99999999T", wantErr: "too large"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseCount(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseCount(%q) = %d, %v; want error %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseCount(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

// testApp is a tool with a value flag, a short one and a boolean.
func testApp(action cli.ActionFunc) *App {
	return NewApp(Spec{
		Name:      "tool",
		Usage:     "a test tool",
		ArgsUsage: "[FILE...]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "tokens", Aliases: []string{"n"}},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}},
			QuietFlag(),
		},
		Examples:  []Example{{Comment: "count things", Command: "tool -n 5 in.jsonl"}},
		ExitCodes: []ExitStatus{{75, "try again later"}},
		Action:    action,
	})
}

func TestCheckFlagOrder(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		wantErr string
	}{
		{name: "flags first", args: "--tokens 5 a.jsonl b.jsonl"},
		{name: "equals form", args: "--tokens=5 -q a.jsonl"},
		{name: "value that looks like a file", args: "-o out.jsonl in.jsonl"},
		{name: "value that looks like a flag", args: "--tokens -5 a.jsonl"},
		{name: "boolean before file", args: "-q a.jsonl"},
		{name: "no files", args: "-q --tokens 5"},
		{name: "after a file", args: "a.jsonl --tokens 5", wantErr: `flag --tokens must come before file arguments (it follows "a.jsonl"; see --help)`},
		{name: "short after a file", args: "a.jsonl b.jsonl -n 5", wantErr: `flag -n must come before file arguments (it follows "a.jsonl"`},
		{name: "equals after a file", args: "a.jsonl --tokens=5", wantErr: "flag --tokens=5 must come before"},
		{name: "boolean after a file", args: "-n 5 a.jsonl -q", wantErr: "flag -q must come before"},
		{name: "after stdin", args: "- -q", wantErr: `(it follows "-"`},
		{name: "after the value of a flag", args: "-o out.jsonl in.jsonl -q", wantErr: `(it follows "in.jsonl"`},
		{name: "double dash ends flags", args: "--tokens 5 -- a.jsonl --odd-name.jsonl"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkFlagOrder(testApp(nil).App, append([]string{"tool"}, strings.Fields(tc.args)...))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
			if ExitCode(err) != exitcode.Usage {
				t.Errorf("exit %d, want 64", ExitCode(err))
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	epipe := &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"broken pipe", epipe, 0},
		{"wrapped broken pipe", fmt.Errorf("flush: %w", epipe), 0},
		{"broken pipe inside an I/O error", exitcode.WithCode(exitcode.IOErr, fmt.Errorf("write out: %w", syscall.EPIPE)), 0},
		{"usage", Usagef("bad"), 64},
		{"wrapped usage", fmt.Errorf("parse: %w", exitcode.Usagef("bad")), 64},
		{"data", exitcode.DataErrorf("x:1: bad"), 65},
		{"no input", exitcode.NoInputf("gone"), 66},
		{"cannot create", exitcode.CantCreatef("no"), 73},
		{"temporary", fmt.Errorf("retry: %w", exitcode.TempFailf("503")), 75},
		{"cli.Exit", cli.Exit("x", 3), 3},
		{"code 255 is never used", cli.Exit("x", 255), 1},
		{"code 0 carried by an error", exitcode.WithCode(0, errors.New("odd")), 1},
		{"SIGINT", &SignalError{Signal: syscall.SIGINT}, 130},
		{"SIGTERM", &SignalError{Signal: syscall.SIGTERM}, 143},
		{"wrapped signal", fmt.Errorf("read: %w", &SignalError{Signal: syscall.SIGTERM}), 143},
		{"disk full", &os.PathError{Op: "write", Path: "out", Err: syscall.ENOSPC}, 74},
		{"quota", fmt.Errorf("w: %w", syscall.EDQUOT), 74},
		{"I/O error", syscall.EIO, 74},
		{"missing file", fmt.Errorf("open: %w", fs.ErrNotExist), 66},
		{"cancelled", context.Canceled, 130},
		{"anything else", errors.New("bug"), 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExitCode(tc.err); got != tc.want {
				t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestMainStatusAndStreams(t *testing.T) {
	epipe := &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
	tests := []struct {
		name       string
		args       string
		action     error
		code       int
		stdout     []string // substrings
		stderr     string   // exact
		stdoutNone bool
	}{
		{name: "help", args: "--help", code: 0,
			stdout: []string{"NAME:\n   tool - a test tool", "EXIT STATUS:\n   0    success", "   64   usage error", "   75   try again later", "   143  terminated by SIGTERM",
				"EXAMPLES:\n   # count things\n   tool -n 5 in.jsonl"}},
		{name: "usage error on stderr", args: "--nope", code: 64, stdoutNone: true, stderr: "tool: flag provided but not defined: --nope (see --help)\n"},
		{name: "bad value names the long flag", args: "--quiet=maybe", code: 64, stdoutNone: true,
			stderr: "tool: invalid boolean value \"maybe\" for --quiet: parse error (see --help)\n"},
		{name: "flag after file", args: "a.jsonl -q", code: 64, stdoutNone: true, stderr: "tool: flag -q must come before file arguments (it follows \"a.jsonl\"; see --help)\n"},
		{name: "data error", action: exitcode.DataErrorf("in.jsonl:3: invalid JSON"), code: 65, stderr: "tool: in.jsonl:3: invalid JSON\n"},
		{name: "prefix added once", action: errors.New("tool: already prefixed"), code: 1, stderr: "tool: already prefixed\n"},
		{name: "broken pipe is quiet", action: epipe, code: 0, stderr: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app := testApp(func(*cli.Context) error { return tc.action })
			var stdout, stderr bytes.Buffer
			code := Main(app, append([]string{"tool"}, strings.Fields(tc.args)...), strings.NewReader(""), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, stderr.String())
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout.String())
				}
			}
			if tc.stdoutNone && stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing (usage errors go to stderr)", stdout.String())
			}
			if tc.stdout == nil && stderr.String() != tc.stderr {
				t.Errorf("stderr = %q, want %q", stderr.String(), tc.stderr)
			}
		})
	}
}

func TestEnvName(t *testing.T) {
	for in, want := range map[string]string{"id-path": "SYNTHPIPE_ID_PATH", "tokens": "SYNTHPIPE_TOKENS", "max-line": "SYNTHPIPE_MAX_LINE"} {
		if got := EnvName(in); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestManMarkdown checks the page's sections in its Markdown; tests/ and
// toolset check them again in the rendered roff.
func TestManMarkdown(t *testing.T) {
	page := ManMarkdown(testApp(nil))
	for _, sec := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT", "EXIT STATUS", "EXAMPLES"} {
		if !strings.Contains(page, "\n# "+sec+"\n") {
			t.Errorf("man page has no %s section", sec)
		}
	}
}

// FuzzParseCount checks ParseCount against exact integer arithmetic: a count
// it accepts is whole and non-negative, a plain integer reads as
// strconv.ParseInt reads it, and N with a k suffix is N*1000.
func FuzzParseCount(f *testing.F) {
	for _, s := range []string{"250k", "10M", "1.5G", "12345", "-5", "1.005k", "0x10", "64Ki", ".5k", "1."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseCount(s)
		if err == nil && n < 0 {
			t.Fatalf("ParseCount(%q) = %d", s, n)
		}
		if i, perr := strconv.ParseInt(s, 10, 64); perr == nil && i >= 0 && i <= math.MaxInt64/2 && s[0] != '+' {
			if err != nil || n != i {
				t.Fatalf("ParseCount(%q) = %d, %v; want %d", s, n, err, i)
			}
			if k, err := ParseCount(s + "k"); i <= math.MaxInt64/2/1000 && (err != nil || k != i*1000) {
				t.Fatalf("ParseCount(%q) = %d, %v; want %d", s+"k", k, err, i*1000)
			}
		}
	})
}

// TestFinishPipedInput: a consumer reading a pipe waits for its input's
// end on the first signal; reading a regular file, or not a consumer, it
// stops at once.
func TestFinishPipedInput(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	defer r.Close()
	file, err := os.CreateTemp(t.TempDir(), "in")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, tc := range []struct {
		name     string
		consumer bool
		stdin    *os.File
		args     []string
		want     bool
	}{
		{"consumer on a pipe", true, r, nil, true},
		{"consumer on a pipe named -", true, r, []string{"-"}, true},
		{"consumer on a file", true, file, nil, false},
		{"consumer on a file argument", true, r, []string{file.Name()}, false},
		{"not a consumer", false, r, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got bool
			app := NewApp(Spec{Name: "tool", FinishPipedInput: tc.consumer, Flags: []cli.Flag{MaxLineFlag(), SkipInvalidFlag()},
				Action: func(c *cli.Context) error {
					if _, err := InputOptions(c); err != nil {
						return err
					}
					got = signalsOf(c.Context).finish.Load()
					return nil
				}})
			var stdout, stderr bytes.Buffer
			if code := Main(app, append([]string{"tool"}, tc.args...), tc.stdin, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if got != tc.want {
				t.Fatalf("reads on after a signal: %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"running":                 "running",
		"été, 東京 ok":              "été, 東京 ok",
		"\x1b[2J\x1b]0;pwned\x07": `\x1b[2J\x1b]0;pwned\a`,
		"a\u009b31mb":             `a\u009b31mb`,
		"tab\there\nnew":          `tab\there\nnew`,
		"bad \xff utf-8":          `bad \xff utf-8`,
		"bidi \u202e txet":        `bidi \u202e txet`,
		"\r overwrite":            `\r overwrite`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
