package chattemplate

import (
	"bytes"
	"encoding/json"
	"unsafe"
)

// MessageCache keeps a conversation's messages decoded from one render to
// the next as the conversation grows (generate --turns all renders each
// turn's prompt whole): the messages of the next render's MessageList that
// are those of the last one up to where the lists part are not decoded
// again, only the ones after. The template still sees, and renders, every
// message. A render given Messages, one array, does not use the cache.
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
	list  []json.RawMessage // the MessageList last decoded: the caller's slices, which it does not change
	items []value           // its messages, decoded
	// Reused is how many messages the last decode took from the one
	// before.
	Reused  int
	fresh   int // the bytes of the messages the last decode read anew
	textLen int // the length of the last render's text

	// text is the last text RenderOver wrote, in the array the next one
	// writes over; textOK: it is whole, written by render textGen (a
	// render that failed leaves it in pieces).
	text    []byte
	textOK  bool
	textGen int
	// Shared is how many of the first bytes of the last text RenderOver
	// wrote are those of the text before it.
	Shared  int
	skipped int // replayed iterations the last render took where they lay

	// What the template's loops wrote for each message (loopmemo.go),
	// and the render that keeps it: gen counts renders.
	loops map[*forStmt]*loopMemo
	gen   int
	deps  []value       // room for a loop's dependencies, reused
	seen  []*macroValue // and for the macros among them
	// Replayed is how many loop iterations the last render wrote as an
	// earlier render had rather than running them.
	Replayed int

	// The renderer and root scope of the last render, made again for the
	// next: the frames its loops and macros gave back (closeScope), its
	// argument slots and the root's array of variables are kept, not
	// allocated anew at every turn. Nothing outlives a render through
	// them: a render's values die with it, but for the messages, the
	// loops' texts and the dependencies those are compared on (which hold
	// macro definitions, not the macros bound in the root).
	r    renderer
	root frame
}

// renderer is a renderer and a root scope for a render through c, those
// of the last render made ready again, or new ones when c is nil.
func (c *MessageCache) renderer() (*renderer, *frame) {
	if c == nil {
		return &renderer{}, newFrame(nil)
	}
	clear(c.root.vars)
	c.root.vars = c.root.vars[:0]
	// The argument slots are empty (freeArgs) and the frames cleared
	// (closeScope) already.
	c.r = renderer{argSlots: c.r.argSlots[:0], freeFrames: c.r.freeFrames}
	return &c.r, &c.root
}

// decodeList decodes messages, given one by one (Options.MessageList),
// reusing the messages decoded last time up to the first that differs: a
// message passed again as the same slice compares at once, without reading
// its bytes. The caller must not change a message's bytes after passing it.
func (c *MessageCache) decodeList(messages []json.RawMessage) (value, error) {
	if c == nil {
		items, ok := decodeListItems(nil, messages)
		if !ok {
			return decodeOption("messages", messagesArray(messages))
		}
		return &pyList{Items: items}, nil
	}
	c.gen++
	c.Replayed, c.skipped = 0, 0
	keep := 0
	for keep < min(len(c.list), len(messages)) && bytes.Equal(c.list[keep], messages[keep]) {
		keep++
	}
	items, ok := decodeListItems(c.items[:keep], messages[keep:])
	if !ok {
		c.reset()
		return decodeOption("messages", messagesArray(messages))
	}
	c.list = append(c.list[:keep], messages[keep:]...)
	c.items, c.Reused, c.fresh = items, keep, 0
	for _, m := range messages[keep:] {
		c.fresh += len(m)
	}
	// The template's list shares the cache's array: no template changes a
	// list, and the length as its capacity makes one that adds to it copy.
	// The next decode writes past the messages it keeps once this render,
	// the only one that reads the list, is over.
	return &pyList{Items: items[:len(items):len(items)]}, nil
}

// decodeListItems appends messages, decoded, to items; false when one is
// not a single JSON value (the messages joined into an array, which is what
// a MessageList stands for, then say what is wrong).
func decodeListItems(items []value, messages []json.RawMessage) ([]value, bool) {
	for _, m := range messages {
		// The decoded strings are slices of the message's own bytes, not
		// of a copy: the caller does not change them once passed (see
		// decodeList), and nothing but the cache, which holds the
		// messages too, keeps a decoded value past the render.
		d := &jsonDecoder{data: unsafe.String(unsafe.SliceData(m), len(m))}
		d.skipSpace()
		v, err := d.value(1) // an item of the messages array
		d.skipSpace()
		if err != nil || d.pos != len(d.data) {
			return nil, false
		}
		items = append(items, v)
	}
	return items, true
}

// messagesArray is messages joined into one JSON array.
func messagesArray(messages []json.RawMessage) json.RawMessage {
	n := 2 + len(messages)
	for _, m := range messages {
		n += len(m)
	}
	b := append(make([]byte, 0, n), '[')
	for i, m := range messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	return append(b, ']')
}

// prune forgets the iterations the last render did not write: messages
// that have left the conversation, or that its loops no longer reach.
func (c *MessageCache) prune() {
	if c == nil {
		return
	}
	for _, m := range c.loops {
		if m.gen == c.gen && m.written == len(m.iters) {
			continue // the render wrote every message the memo holds
		}
		for d, e := range m.iters {
			if e.gen != c.gen {
				delete(m.iters, d)
			}
		}
	}
}

func (c *MessageCache) reset() {
	c.items, c.list, c.Reused, c.textLen = nil, nil, 0, 0
}
