package chattemplate

import (
	"bytes"
	"encoding/json"
)

// MessageCache keeps a conversation's messages decoded from one render to
// the next as the conversation grows (generate --turns all renders each
// turn's prompt whole): the messages that the next render's Messages holds
// byte for byte where the last one held them are not decoded again, only
// the ones after. The template still sees, and renders, every message.
// Sharing decoded messages between renders is safe because a template
// cannot change what it is given: lists and dicts refuse their mutating
// methods, as in jinja2's immutable sandbox.
//
// It also keeps what the template's loops wrote for each message, so that
// the next render writes it again rather than running the loop's body,
// where that is sure to give the same text (see loopmemo.go).
//
// The zero value is ready. A MessageCache is not safe for concurrent use:
// one belongs to one conversation.
type MessageCache struct {
	raw   []byte  // the Messages last decoded
	ends  []int   // where each of its messages ends in raw
	items []value // its messages, decoded
	// Reused is how many messages the last decode took from the one
	// before.
	Reused int

	// What the template's loops wrote for each message (loopmemo.go),
	// and the render that keeps it: gen counts renders.
	loops map[*forStmt]*loopMemo
	gen   int
	deps  []value       // room for a loop's dependencies, reused
	seen  []*macroValue // and for the macros among them
	// Replayed is how many loop iterations the last render wrote as an
	// earlier render had rather than running them.
	Replayed int
}

// decode decodes messages (a JSON array), reusing the messages decoded last
// time that end within the bytes both arrays begin with. Anything but an
// array, and any error, is left to decodeOption, which says what is wrong as
// it would without a cache.
func (c *MessageCache) decode(messages json.RawMessage) (value, error) {
	if c == nil {
		return decodeOption("messages", messages)
	}
	c.gen++
	c.Replayed = 0
	shared := commonPrefixBytes(c.raw, messages)
	keep := 0
	for keep < len(c.ends) && c.ends[keep] <= shared {
		keep++
	}
	items := append(make([]value, 0, keep+4), c.items[:keep]...)
	ends := append(make([]int, 0, keep+4), c.ends[:keep]...)
	from := 0
	if keep > 0 {
		from = ends[keep-1]
	}
	// The rest is decoded from a string of its own: decoded strings are
	// slices of it, so a conversation's messages hold its bytes once, not
	// once per turn.
	d := &jsonDecoder{data: string(messages[from:])}
	if keep == 0 {
		d.skipSpace()
		if d.pos == len(d.data) || d.data[d.pos] != '[' {
			c.reset()
			return decodeOption("messages", messages)
		}
		d.pos++
		d.skipSpace()
	}
	items, ends, ok := d.arrayRest(items, ends, from, keep == 0)
	if !ok {
		c.reset()
		return decodeOption("messages", messages)
	}
	c.raw = append(c.raw[:shared], messages[shared:]...) // the first shared bytes are there already
	c.ends, c.items, c.Reused = ends, items, keep
	return &pyList{Items: append([]value(nil), items...)}, nil
}

// arrayRest reads the rest of a top-level array: its items, each appended
// to items with where it ends (offset by base) appended to ends, and its
// ']', with nothing but white space after. first: no item was read yet (the
// '[' and the white space after it were).
func (d *jsonDecoder) arrayRest(items []value, ends []int, base int, first bool) ([]value, []int, bool) {
	if first && d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
	} else {
		for {
			if !first {
				d.skipSpace()
				if d.pos < len(d.data) && d.data[d.pos] == ']' {
					d.pos++
					break
				}
				if d.pos == len(d.data) || d.data[d.pos] != ',' {
					return nil, nil, false
				}
				d.pos++
				d.skipSpace()
			}
			first = false
			v, err := d.value(1)
			if err != nil {
				return nil, nil, false
			}
			items, ends = append(items, v), append(ends, base+d.pos)
		}
	}
	d.skipSpace()
	return items, ends, d.pos == len(d.data)
}

// prune forgets the iterations the last render did not write: messages
// that have left the conversation, or that its loops no longer reach.
func (c *MessageCache) prune() {
	if c == nil {
		return
	}
	for _, m := range c.loops {
		for d, e := range m.iters {
			if e.gen != c.gen {
				delete(m.iters, d)
			}
		}
	}
}

func (c *MessageCache) reset() {
	c.raw, c.ends, c.items, c.Reused = c.raw[:0], nil, nil, 0
}

// commonPrefixBytes is the length of the longest common beginning of a and b.
func commonPrefixBytes(a, b []byte) int {
	n := min(len(a), len(b))
	// Turns share most of their bytes: compare blocks that double while
	// they match, then halve into the one that differs, so that the bytes
	// are compared a few large blocks at a time, then one by one in the
	// last 64. Before each halving, the first difference (or n) lies in
	// [i, i+2*step).
	i, step := 0, 64
	for i+step <= n && bytes.Equal(a[i:i+step], b[i:i+step]) {
		i += step
		step *= 2
	}
	for step > 64 {
		step /= 2
		if i+step <= n && bytes.Equal(a[i:i+step], b[i:i+step]) {
			i += step
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}
