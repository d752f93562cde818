package chattemplate

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// TestMessageCacheRendersAsWithout renders every conformance case with
// every conformance template, message array after message array through one
// MessageCache: the arrays grow a message at a time, then change at random
// (a message edited, dropped or added anywhere, white space between them,
// the array cut or followed by junk, not an array at all). Each render must
// give what rendering without a cache gives, the same text or the same
// error, and messages must have been reused.
func TestMessageCacheRendersAsWithout(t *testing.T) {
	cf, _ := loadConformance(t)
	names, _ := filepath.Glob(filepath.Join("testdata", "conformance", "*.jinja"))
	rng := rand.New(rand.NewPCG(5, 6))
	for _, path := range names {
		name := strings.TrimSuffix(filepath.Base(path), ".jinja")
		tmpl := loadTemplate(t, name)
		t.Run(name, func(t *testing.T) {
			reused := 0
			for _, c := range cf.Cases {
				var msgs []json.RawMessage
				if json.Unmarshal(c.Messages, &msgs) != nil {
					continue
				}
				var cache MessageCache
				check := func(raw string) {
					t.Helper()
					o := optionsFor(cf, name, c)
					o.Messages = json.RawMessage(raw)
					want, wantErr := tmpl.Render(o)
					o.Cache = &cache
					got, err := tmpl.Render(o)
					if got != want || errText(err) != errText(wantErr) {
						t.Fatalf("%s, messages %s:\n got %q (%v)\nwant %q (%v)", c.Name, raw, got, err, want, wantErr)
					}
					reused += cache.Reused
				}
				for i := 0; i <= len(msgs); i++ {
					check(joinMessages(msgs[:i], ","))
				}
				for range 30 {
					check(changeMessages(rng, msgs))
				}
			}
			if reused == 0 {
				t.Fatal("no message reused from one render to the next")
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func joinMessages(msgs []json.RawMessage, sep string) string {
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		parts[i] = string(m)
	}
	return "[" + strings.Join(parts, sep) + "]"
}

// changeMessages is msgs changed at random, as a JSON array or not one.
func changeMessages(rng *rand.Rand, msgs []json.RawMessage) string {
	m := append([]json.RawMessage(nil), msgs...)
	if len(m) > 0 {
		i := rng.IntN(len(m))
		switch rng.IntN(3) {
		case 0:
			m[i] = json.RawMessage(strings.Replace(string(m[i]), `"content": "`, `"content": "edited `, 1))
		case 1:
			m = append(m[:i], m[i+1:]...)
		default:
			m = append(m[:i:i], append([]json.RawMessage{json.RawMessage(`{"role": "user", "content": "more\n"}`)}, m[i:]...)...)
		}
	}
	arr := joinMessages(m, []string{",", ", ", " ,\n "}[rng.IntN(3)])
	switch rng.IntN(8) {
	case 0:
		return arr[:rng.IntN(len(arr)+1)]
	case 1:
		return arr + []string{" ", "x", "]", ",{}"}[rng.IntN(4)]
	case 2:
		return []string{`{"role": "user"}`, ` [ ] `, `[{"role": "user", "content": "a"},]`, ``, `null`}[rng.IntN(5)]
	}
	return arr
}

// TestCommonPrefixBytes compares commonPrefixBytes with a byte-by-byte
// scan on arrays that part at every distance from their start, of every
// length around the block sizes it compares.
func TestCommonPrefixBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 3000 {
		a := make([]byte, rng.IntN(5000))
		for i := range a {
			a[i] = byte('a' + rng.IntN(3))
		}
		// b is a's beginning, perhaps a byte that may differ, then
		// perhaps more of a.
		b := append([]byte(nil), a[:rng.IntN(len(a)+1)]...)
		if rng.IntN(2) == 0 {
			b = append(b, byte('a'+rng.IntN(3)))
		}
		if len(b) < len(a) {
			b = append(b, a[len(b):][:rng.IntN(len(a)-len(b)+1)]...)
		}
		want := 0
		for want < min(len(a), len(b)) && a[want] == b[want] {
			want++
		}
		if got := commonPrefixBytes(a, b); got != want {
			t.Fatalf("len %d and %d: %d bytes in common, want %d", len(a), len(b), got, want)
		}
	}
}
