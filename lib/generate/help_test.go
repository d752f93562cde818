package generate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/capacity"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/engine"
	"github.com/synthpipe/synthpipe/lib/runview"
)

// TestHelpNamesConstants: the description states the tuning constants the
// code applies.
func TestHelpNamesConstants(t *testing.T) {
	app := NewApp()
	for _, p := range cliutil.Unsaid(app.Description,
		fmt.Sprintf("plus %.0f%% so that the server never idles", 100*capacity.QueueMargin),
		fmt.Sprintf("(its %.0f%% margin)", 100*capacity.QueueMargin),
		fmt.Sprintf("every %gs and keeps the sum", capacity.ShareInterval.Seconds()),
		fmt.Sprintf("it starts at %d and adapts", capacity.AIMDStart),
		fmt.Sprintf("(default %.0fm: a server asking", defaultMaxRetryWait.Minutes()),
		fmt.Sprintf("(default %.0fm: a stopped server", defaultIdleTimeout.Minutes()),
		fmt.Sprintf("(one alone at most %d MiB)", backend.DefaultMaxResponseBytes/(1<<20)),
		fmt.Sprintf("until %d answers are in", engine.MinETASamples),
		fmt.Sprintf("/metrics every %gs and shows them", engine.DefaultMetricsEvery.Seconds()),
		fmt.Sprintf("stays %.0f%% full with requests waiting in its queue for %d readings and %gs", 100*engine.DefaultKVFull, engine.DefaultLimitPolls, engine.DefaultLimitFor.Seconds()),
		fmt.Sprintf("beside other runs, a queue over %.0f%% of what the server holds cuts too, to what it runs plus %.0f%%", 100*capacity.ShareQueueOver, 100*capacity.ShareQueueTarget),
		fmt.Sprintf("while more than %.0f%% is queued", 100*capacity.ShareQueueTarget),
		fmt.Sprintf("over %.0f%% queued, every run cuts its limit in proportion, to bring the queue to %.0f%%", 100*capacity.ProbeOver, 100*capacity.ProbeTarget),
		fmt.Sprintf("under %.0f%%, a run doubles", 100*capacity.ProbeUnder),
		fmt.Sprintf("than --min-room tokens (default %d:", defaultMinRoom),
		// The shares the help writes in words ("an eighth").
		fmt.Sprintf("a run starts at %s of that size", portion(capacity.ShareStart)),
		fmt.Sprintf("a run doubles (from %s,", portion(capacity.ShareStart)),
		fmt.Sprintf("(at most to %s at once)", portion(capacity.ProbeDeepest)),
		fmt.Sprintf("when it moved by more than %s.", portion(capacity.ReportChange)),
		fmt.Sprintf("every %s of an answer's latency", fractionNames[capacity.ProbesPerLatency]),
	) {
		t.Errorf("the description does not say %q", p)
	}
	help, want := cliutil.FlagHelp(app.Flags, flagMaxAnswerMemory),
		fmt.Sprintf("(one alone at most %dMi); one that would pass it fails and is retried (default: %dGi)", backend.DefaultMaxResponseBytes>>20, defaultAnswerMemory>>30)
	if !strings.Contains(help, want) {
		t.Errorf("--%s's help does not say %q: %s", flagMaxAnswerMemory, want, help)
	}
	var columns string
	for _, e := range environment() {
		if e.Name == "COLUMNS" {
			columns = e.Meaning
		}
	}
	if want := fmt.Sprintf("(default %d)", runview.DefaultColumns); !strings.Contains(columns, want) {
		t.Errorf("COLUMNS's meaning does not say %q: %q", want, columns)
	}
}

func TestHelpFormats(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{portion(1.0 / 8), "an eighth"}, {portion(0.25), "a quarter"}, {portion(0.3), "30%"},
		{every(1e9), "second"}, {every(2e9), "2s"},
		{seconds(500e6), "0.5s"}, {seconds(20e9), "20s"}, {seconds(5 * 60e9), "5m"}, {seconds(90e9), "90s"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
