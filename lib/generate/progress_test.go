package generate

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestRenderBar(t *testing.T) {
	running := progressView{done: 812, total: 1800, ok: 800, errors: 12, truncated: 3, reqPerSec: 14.2, tokPerSec: 9811,
		inFlight: 48, eta: 12*time.Minute + 20*time.Second, hasETA: true}
	unknownTotal := running
	unknownTotal.total = 0
	noETA := running
	noETA.hasETA = false
	numbers := "45%  812/1,800 ok 800 err 12 trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight | ETA 12m"
	for _, tc := range []struct {
		name   string
		view   progressView
		width  int
		colour bool
		want   string
	}{
		{"the whole line at 120 columns", running, 120, false,
			"[" + strings.Repeat("#", 13) + strings.Repeat(".", 17) + "]  " + numbers},
		{"the default width", running, defaultColumns - 1, false,
			"[" + strings.Repeat("#", 4) + strings.Repeat(".", 5) + "]  " + numbers},
		{"too narrow for a bar: the numbers stay", running, 90, false, numbers},
		{"narrower: the ETA goes", running, 80, false,
			"45%  812/1,800 ok 800 err 12 trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight"},
		{"narrower still: rates go", running, 40, false, "45%  812/1,800 ok 800 err 12 trunc 3"},
		{"tiny: cut at the edge", running, 10, false, "45%  812/1"},
		{"no total: no bar, no percentage", unknownTotal, 120, false,
			"812 done ok 800 err 12 trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight | ETA 12m"},
		{"no ETA", noETA, 120, false,
			"[" + strings.Repeat("#", 18) + strings.Repeat(".", 22) + "]  45%  812/1,800 ok 800 err 12 trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight"},
		{"colour", running, 120, true,
			"[\x1b[32m" + strings.Repeat("#", 13) + "\x1b[0m" + strings.Repeat(".", 17) + "]  45%  812/1,800 ok 800 err \x1b[31m12\x1b[0m trunc 3 | 14.2 req/s 9,811 tok/s | 48 in flight | ETA 12m"},
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
