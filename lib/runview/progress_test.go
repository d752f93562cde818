package runview

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/synthpipe/synthpipe/lib/engine"
)

func TestRenderBar(t *testing.T) {
	running := engine.Snapshot{Done: 812, Total: 1800, OK: 800, Errors: 12, Truncated: 3, RequestsPerSecond: 14.2, TokensPerSecond: 9811,
		InFlight: 48, ETA: 12*time.Minute + 20*time.Second, HasETA: true}
	unknownTotal := running
	unknownTotal.Total = 0
	early := running
	early.HasETA, early.ETALater = false, true
	limited := running
	limited.Limit = "budget"
	almost := running
	almost.Done, almost.Total = 2986, 3000
	budgeted := limited
	budgeted.Standing = engine.Standing{TokenBudget: 30000, TokensSpent: 2400}
	numbers := "45% 812/1,800 ok 800 err 12 trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight | ETA 12m"
	for _, tc := range []struct {
		name   string
		view   engine.Snapshot
		width  int
		colour bool
		want   string
	}{
		{"a fifth of 120 columns for the bar", running, 119, false,
			"[" + strings.Repeat("#", 10) + strings.Repeat(".", 13) + "]  " + numbers},
		{"the default width: the rates go first", running, DefaultColumns - 1, false,
			"[" + strings.Repeat("#", 8) + strings.Repeat(".", 11) + "]  45% 812/1,800 ok 800 err 12 trunc 3 | 48 in flight | ETA 12m"},
		{"a wide terminal: the bar stops at 40", running, 250, false,
			"[" + strings.Repeat("#", 18) + strings.Repeat(".", 22) + "]  " + numbers},
		{"what holds the requests in flight", limited, 159, false,
			"[" + strings.Repeat("#", 13) + strings.Repeat(".", 18) + "]  45% 812/1,800 ok 800 err 12 trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight (limit: budget) | ETA 12m"},
		{"the budget's share outlasts the rates", budgeted, 119, false,
			"[" + strings.Repeat("#", 10) + strings.Repeat(".", 13) + "]  45% 812/1,800 ok 800 err 12 trunc 3 | 48 in flight (limit: budget) | ETA 12m | budget 8%"},
		{"too narrow for a bar: the numbers stay", running, 49, false, "45% 812/1,800 ok 800 err 12 trunc 3 | ETA 12m"},
		{"narrower still: the ETA goes", running, 40, false, "45% 812/1,800 ok 800 err 12 trunc 3"},
		{"tiny: cut at the edge", running, 10, false, "45% 812/1,"},
		{"no total: no bar, no percentage", unknownTotal, 120, false,
			"812 done ok 800 err 12 trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight | ETA 12m"},
		{"no ETA yet", early, 119, false,
			"[" + strings.Repeat("#", 10) + strings.Repeat(".", 13) + "]  45% 812/1,800 ok 800 err 12 trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight | ETA ..."},
		{"99% and a bar short of full until the end", almost, 119, false,
			"[" + strings.Repeat("#", 22) + ".]  99% 2,986/3,000 ok 800 err 12 trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight | ETA 12m"},
		{"colour", running, 119, true,
			"[\x1b[32m" + strings.Repeat("#", 10) + "\x1b[0m" + strings.Repeat(".", 13) + "]  45% 812/1,800 ok 800 err \x1b[31m12\x1b[0m trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight | ETA 12m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := renderBar(tc.view, tc.width, tc.colour)
			if got != tc.want {
				t.Fatalf("width %d:\n got %q\nwant %q", tc.width, got, tc.want)
			}
			if !tc.colour {
				if n := utf8.RuneCountInString(got); n > tc.width {
					t.Fatalf("%d columns, more than %d", n, tc.width)
				}
				if strings.Contains(got, "\x1b") {
					t.Fatalf("escapes without colour: %q", got)
				}
			}
		})
	}
}

func TestPercentDone(t *testing.T) {
	for _, tc := range []struct{ done, total, want int64 }{
		{0, 3000, 0}, {29, 3000, 0}, {30, 3000, 1}, {2986, 3000, 99}, {2999, 3000, 99}, {3000, 3000, 100}, {3001, 3000, 100},
	} {
		if got := percentDone(tc.done, tc.total); got != tc.want {
			t.Errorf("%d of %d: %d%%, want %d%%", tc.done, tc.total, got, tc.want)
		}
	}
}

func TestProgressMode(t *testing.T) {
	for _, tc := range []struct {
		name         string
		terminal     bool
		term         string
		noColor      string
		live, colour bool
	}{
		{"terminal", true, "xterm-256color", "", true, true},
		{"terminal with NO_COLOR", true, "xterm-256color", "1", true, false},
		{"dumb terminal", true, "dumb", "", false, false},
		{"a log file", false, "xterm-256color", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if live, colour := progressMode(tc.terminal, tc.term, tc.noColor); live != tc.live || colour != tc.colour {
				t.Fatalf("live %v colour %v, want %v %v", live, colour, tc.live, tc.colour)
			}
		})
	}
}
