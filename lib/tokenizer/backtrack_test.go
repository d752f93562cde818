package tokenizer

import (
	"testing"
)

// The backtracking matcher is an independent reading of each regex; the
// hand-written matchers must agree with it at every position.

func backtrackOracles(tb testing.TB) map[string]*backtrackMatcher {
	tb.Helper()
	oracles := map[string]*backtrackMatcher{}
	for pattern := range knownPatterns {
		m, err := newBacktrackMatcher(pattern)
		if err != nil {
			tb.Fatalf("%q: %v", pattern, err)
		}
		oracles[pattern] = m
	}
	return oracles
}

func checkAgainstOracles(t *testing.T, oracles map[string]*backtrackMatcher, s string) {
	t.Helper()
	for pattern, oracle := range oracles {
		hand := knownPatterns[pattern]
		for i := 0; i < len(s); {
			if got, want := hand.matchAt(s, i), oracle.matchAt(s, i); got != want {
				t.Fatalf("pattern %.40q on %q at %d: hand-written %d, backtracking %d", pattern, s, i, got, want)
			}
			_, n := decodeRune(s, i)
			i += n
		}
	}
}

func TestMatchersAgreeWithBacktracking(t *testing.T) {
	oracles := backtrackOracles(t)
	for _, line := range corpus(t) {
		if len(line.Text) > 3000 {
			continue // the oracle is slow and long lines add nothing new
		}
		checkAgainstOracles(t, oracles, line.Text)
	}
}

func FuzzMatchersAgreeWithBacktracking(f *testing.F) {
	for _, s := range []string{"Hello World's", "  \r\n x", "ǅAbc'LL", "a\u0301B\u0301c", "中文abc", "1234567", "...//\n", "\u3000\u00a0x", "'ſ",
		// where ASCII meets non-ASCII, which the ASCII fast paths hand over
		"Hello wörld", "ABÉc", "AB\u0301c", " \u00a0x", "\n \u2028", "12١", "!!¡…\n/", "x'ſ", " ǅx", "(中"} {
		f.Add(s)
	}
	oracles := backtrackOracles(f)
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 200 {
			return // the oracle costs O(n²) over a long run; short inputs find the same bugs
		}
		checkAgainstOracles(t, oracles, s)
	})
}

func TestBacktrackSyntax(t *testing.T) {
	for _, tc := range []struct {
		pattern, text string
		at, want      int
	}{
		{`a+?b`, "aaab", 0, 4},
		{`a++a`, "aaaa", 0, -1},
		{`\s++$|x`, "  ", 0, 2},
		{`(?i)ab`, "AB", 0, 2},
		{`[^\s\p{L}]+`, "!?a", 0, 2},
		{`[\p{L}&&[^a-c]]+`, "xyza", 0, 3},
		{`\x{4e00}|\u4e01`, "丁", 0, 3},
		{`a{2,3}`, "aaaa", 0, 3},
		{`\s+(?!\S)`, "   x", 0, 2},
		{`(?=a)a|b`, "a", 0, 1},
	} {
		m, err := newBacktrackMatcher(tc.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tc.pattern, err)
		}
		if got := m.matchAt(tc.text, tc.at); got != tc.want {
			t.Errorf("%q on %q at %d = %d, want %d", tc.pattern, tc.text, tc.at, got, tc.want)
		}
	}
	for _, bad := range []string{`(?<=a)b`, `[abc`, `(ab`, `\p{NoSuchThing}`} {
		if _, err := newBacktrackMatcher(bad); err == nil {
			t.Errorf("%q compiled", bad)
		}
	}
}
