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

// TestRenderAppend renders the conformance cases after a prefix, into an
// array with room and one without: the bytes must be the prefix and what
// Render gives, or the same error, written in place when the array has room.
func TestRenderAppend(t *testing.T) {
	cf, _ := loadConformance(t)
	names, _ := filepath.Glob(filepath.Join("testdata", "conformance", "*.jinja"))
	for _, path := range names {
		name := strings.TrimSuffix(filepath.Base(path), ".jinja")
		tmpl := loadTemplate(t, name)
		for _, c := range cf.Cases {
			o := optionsFor(cf, name, c)
			want, wantErr := tmpl.Render(o)
			for _, room := range []int{0, 1 << 16} {
				dst := append(make([]byte, 0, 3+room), "pre"...)
				got, err := tmpl.RenderAppend(dst, o)
				if errText(err) != errText(wantErr) || err == nil && string(got) != "pre"+want {
					t.Fatalf("%s, %s, room %d: got %q (%v), want %q (%v)", name, c.Name, room, got, err, "pre"+want, wantErr)
				}
				if err == nil && room > len(want) && &got[0] != &dst[0] {
					t.Fatalf("%s, %s: written into a new array, with room in the given one", name, c.Name)
				}
			}
		}
	}
}
