package cliutil

import (
	"fmt"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/jsonl"
)

func TestPercent(t *testing.T) {
	for share, want := range map[float64]string{0.1: "10%", 0.9: "90%", 0.05: "5%", 0.025: "2.5%", 1: "100%"} {
		if got := Percent(share); got != want {
			t.Errorf("Percent(%g) = %q, want %q", share, got, want)
		}
	}
}

func TestFillHelp(t *testing.T) {
	got := FillHelp("tool", "starts at {{.Start}}, plus {{.Margin}}", struct {
		Start  int
		Margin string
	}{16, Percent(0.1)})
	if want := "starts at 16, plus 10%"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "tool: help:") {
			t.Errorf("a help text naming a value it is not given: recovered %v, want a panic naming the tool", r)
		}
	}()
	FillHelp("tool", "{{.Missing}}", struct{}{})
}

func TestByteSize(t *testing.T) {
	for n, want := range map[int64]string{64 << 20: "64Mi", 1 << 30: "1Gi", 512 << 20: "512Mi", 3 << 10: "3Ki", 1536 << 20: "1536Mi", 1 << 40: "1Ti", 1000: "1000", 0: "0"} {
		got := ByteSize(n)
		if got != want {
			t.Errorf("ByteSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := ParseCount(got); err != nil || back != n {
			t.Errorf("ParseCount(%q) = %d, %v: want %d back", got, back, err, n)
		}
	}
}

func TestWord(t *testing.T) {
	for n, want := range map[int]string{0: "zero", 3: "three", 5: "five", 10: "ten", 11: "11", -1: "-1"} {
		if got := Word(n); got != want {
			t.Errorf("Word(%d) = %q, want %q", n, got, want)
		}
	}
}

// --max-line's help states the default and the cap the reader applies.
func TestMaxLineFlagNamesLimits(t *testing.T) {
	help := fmt.Sprint(MaxLineFlag())
	want := fmt.Sprintf("(SIZE: %dMi, 256Mi, %dGi at most) (default: %dMi)", jsonl.DefaultMaxLine>>20, jsonl.MaxLineLimit>>30, jsonl.DefaultMaxLine>>20)
	if !strings.Contains(help, want) {
		t.Errorf("--%s's help does not say %q: %s", FlagMaxLine, want, help)
	}
}

func TestUnsaid(t *testing.T) {
	help := "starts at 16,\n   plus 10% so that"
	if got := Unsaid(help, "starts at 16, plus 10%", "plus 10% so"); len(got) != 0 {
		t.Errorf("phrases across a line break: unsaid %q", got)
	}
	if got := Unsaid(help, "starts at 32"); len(got) != 1 || got[0] != "starts at 32" {
		t.Errorf("a phrase the help does not say: got %q", got)
	}
	if got := Unsaid("plus {{.Margin}} so", "plus"); len(got) != 1 || !strings.Contains(got[0], "{{.Margin}}") {
		t.Errorf("an unfilled template action: got %q", got)
	}
}

func TestFlagHelp(t *testing.T) {
	flags := []cli.Flag{MaxLineFlag(), QuietFlag()}
	if got := FlagHelp(flags, FlagMaxLine); !strings.Contains(got, "--"+FlagMaxLine) {
		t.Errorf("FlagHelp(%s) = %q", FlagMaxLine, got)
	}
	if got := FlagHelp(flags, "no-such-flag"); got != "" {
		t.Errorf("FlagHelp of a flag not there = %q, want \"\"", got)
	}
}
