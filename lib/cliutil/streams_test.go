package cliutil

import (
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/iostreams"
	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// TestRecordsReachATerminalOneByOne: on a terminal a person watches the
// records come, so each reaches stdout when written; elsewhere they are
// buffered. The test says which stdout is a terminal, as a tool's test can.
func TestRecordsReachATerminalOneByOne(t *testing.T) {
	for _, terminal := range []bool{false, true} {
		streams, _, out, _ := iostreams.Test()
		streams.SetStdoutTTY(terminal)
		var afterFirst string
		app := NewApp(Spec{Name: "tool", Action: func(c *cli.Context) error {
			if got := Streams(c).IsStdoutTTY(); got != terminal {
				t.Errorf("Streams(c).IsStdoutTTY() = %v; want %v", got, terminal)
			}
			w := jsonl.NewWriter(c.App.Writer)
			if err := w.Write([]byte(`{"id":"a"}`)); err != nil {
				return err
			}
			afterFirst = out.String()
			return w.Flush()
		}})
		if code := Run(app, []string{"tool"}, streams); code != 0 {
			t.Fatalf("exit %d", code)
		}
		want := ""
		if terminal {
			want = "{\"id\":\"a\"}\n"
		}
		if afterFirst != want || out.String() != "{\"id\":\"a\"}\n" {
			t.Errorf("terminal %v: stdout after the first record %q, at the end %q; want %q, the record", terminal, afterFirst, out.String(), want)
		}
	}
}
