package chattemplate

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// TestMessageCacheListRendersAsArray renders every conformance case with
// every conformance template through one MessageCache, its messages given
// one by one (Options.MessageList): the list grows a message at a time, the
// same slices each time, then changes at random (a message edited as a new
// slice, dropped or added anywhere, one that is not a single JSON value).
// Each render must give what rendering the list joined into an array
// without a cache gives, the same text or the same error, and messages must
// have been reused.
func TestMessageCacheListRendersAsArray(t *testing.T) {
	cf, _ := loadConformance(t)
	names, _ := filepath.Glob(filepath.Join("testdata", "conformance", "*.jinja"))
	rng := rand.New(rand.NewPCG(9, 10))
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
				check := func(list []json.RawMessage) {
					t.Helper()
					o := optionsFor(cf, name, c)
					o.Messages = json.RawMessage(joinMessages(list, ","))
					want, wantErr := tmpl.Render(o)
					o.Messages, o.MessageList, o.Cache = nil, list, &cache
					got, err := tmpl.Render(o)
					if got != want || errText(err) != errText(wantErr) {
						t.Fatalf("%s, messages %s:\n got %q (%v)\nwant %q (%v)", c.Name, joinMessages(list, ","), got, err, want, wantErr)
					}
					reused += cache.Reused
				}
				for i := 0; i <= len(msgs); i++ {
					check(msgs[:i:i])
				}
				for range 30 {
					list := changeList(rng, msgs)
					if len(list) > 0 && rng.IntN(4) == 0 {
						list[rng.IntN(len(list))] = json.RawMessage([]string{`{"role": "user"`, ``, `{"role": "user", "content": "a"}, {"role": "user", "content": "b"}`, ` null `}[rng.IntN(4)])
					}
					check(list)
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

// changeList is msgs with a message edited (a copy), dropped or added at
// random.
func changeList(rng *rand.Rand, msgs []json.RawMessage) []json.RawMessage {
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
	return m
}

// TestRenderOver renders every conformance case with every conformance
// template a message at a time through one MessageCache, each text written
// over the last (RenderOver), then the whole conversation again: each text
// must be what Render gives without a cache, or the same error, and Shared
// how many of its first bytes the last whole text had. Kimi-K2.5's
// templates must have taken replayed iterations where they lay.
func TestRenderOver(t *testing.T) {
	cf, _ := loadConformance(t)
	names, _ := filepath.Glob(filepath.Join("testdata", "conformance", "*.jinja"))
	for _, path := range names {
		name := strings.TrimSuffix(filepath.Base(path), ".jinja")
		tmpl := loadTemplate(t, name)
		skipped := 0
		for _, c := range cf.Cases {
			var msgs []json.RawMessage
			if json.Unmarshal(c.Messages, &msgs) != nil {
				continue
			}
			var cache MessageCache
			last := ""
			for i := 0; i <= len(msgs)+1; i++ {
				n := min(i, len(msgs))
				o := optionsFor(cf, name, c)
				o.Messages = json.RawMessage(joinMessages(msgs[:n], ","))
				want, wantErr := tmpl.Render(o)
				o.Messages, o.MessageList, o.Cache = nil, msgs[:n:n], &cache
				got, err := tmpl.RenderOver(o)
				if got != want || errText(err) != errText(wantErr) {
					t.Fatalf("%s, %s, %d messages: got %q (%v), want %q (%v)", name, c.Name, n, got, err, want, wantErr)
				}
				if err != nil {
					last = ""
					continue
				}
				shared := 0
				for shared < min(len(last), len(got)) && last[shared] == got[shared] {
					shared++
				}
				if cache.Shared != shared {
					t.Fatalf("%s, %s, %d messages: Shared %d, want %d", name, c.Name, n, cache.Shared, shared)
				}
				skipped += cache.skipped
				last = strings.Clone(got)
			}
		}
		if strings.HasPrefix(name, "kimi_k25") && skipped == 0 {
			t.Errorf("%s: no replayed iteration taken where it lay", name)
		}
	}
}

// TestRenderOverPlaces renders a loop that writes into the text in one
// render and into a string that is printed elsewhere in the next (a macro
// called for its value), through one MessageCache as the conversation
// grows: an iteration is taken where it lay in the last text only when it
// was written into that text, at that place.
func TestRenderOverPlaces(t *testing.T) {
	tmpl, err := Parse("t", `{% macro m() %}{% for x in messages %}{{ x.content }}{% endfor %}{% endmacro %}`+
		`{% if messages|length is even %}{% set s = m() %}[{{ s }}]{% else %}{{ m() }}{% endif %}`)
	if err != nil {
		t.Fatal(err)
	}
	all := rawMessages([]string{`{"role":"user","content":"ab"}`, `{"role":"user","content":"cd"}`, `{"role":"user","content":"ef"}`, `{"role":"user","content":"gh"}`})
	var cache MessageCache
	for n := 1; n <= len(all); n++ {
		want, wantErr := tmpl.Render(Options{MessageList: all[:n]})
		got, err := tmpl.RenderOver(Options{MessageList: all[:n], Cache: &cache})
		if got != want || errText(err) != errText(wantErr) {
			t.Fatalf("%d messages: got %q (%v), want %q (%v)", n, got, err, want, wantErr)
		}
	}
}
