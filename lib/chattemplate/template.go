package chattemplate

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unsafe"
)

// Template is a parsed chat template. It is immutable and safe for
// concurrent Render calls.
type Template struct {
	name   string
	body   []stmt
	undef  []string // template-level names that start undefined (see scope.go)
	limits limits
}

// Options are the arguments apply_chat_template passes to the template.
type Options struct {
	// Messages is the JSON array of message objects.
	Messages json.RawMessage
	// MessageList, when not nil, stands for Messages: the array's items,
	// each a message's JSON. A conversation rendered turn after turn
	// through a Cache passes its messages this way, so that the cache
	// finds the messages it decoded before message by message (see
	// MessageCache), not by comparing the whole array's bytes. A message's
	// bytes must not change once passed: the template's strings are
	// slices of them, not copies.
	MessageList []json.RawMessage
	// Tools is a JSON array of tool schemas, or nil (the template sees None).
	Tools json.RawMessage
	// AddGenerationPrompt sets add_generation_prompt.
	AddGenerationPrompt bool
	// BOSToken and EOSToken set bos_token and eos_token; an empty string
	// leaves the variable undefined, as for tokenizers without that token.
	BOSToken, EOSToken string
	// Extra holds further template variables (enable_thinking,
	// reasoning_effort, tools_ts_str, pad_token, ...). They override the
	// variables above, so Extra{"bos_token": null} passes None.
	Extra map[string]json.RawMessage
	// Now is the clock behind strftime_now; nil means time.Now.
	Now func() time.Time
	// Cache, when not nil, keeps MessageList decoded for the next render
	// of the same conversation, grown (see MessageCache); a render given
	// Messages does not use it.
	Cache *MessageCache
}

// Name returns the name the template was parsed with.
func (t *Template) Name() string { return t.name }

// Render renders the template. A raise_exception call in the template
// yields a *TemplateError carrying exactly the template's message; other
// failures are *RenderError values named after the Python exception.
func (t *Template) Render(o Options) (string, error) {
	if o.Cache != nil && o.MessageList != nil {
		text, err := t.RenderOver(o)
		return strings.Clone(text), err // the cache's array is written again
	}
	var w textWriter
	if err := t.render(o, &w); err != nil {
		return "", err
	}
	return w.String(), nil
}

// RenderOver is Render through o.Cache (which must be set) for a caller
// that is done with the text of the last render through it: the text is
// written over that one, in an array the cache keeps, and is the cache's,
// valid until the next render through it. What the render writes again in
// the place the last one wrote it (the turns of a conversation that the
// last prompt held, replayed) is neither copied nor compared again, and no
// array is made per render. The cache's Shared then says how many of the
// text's first bytes are the last text's. Without MessageList, the cache
// is not used and the text is the caller's.
func (t *Template) RenderOver(o Options) (string, error) {
	c := o.Cache
	if o.MessageList == nil {
		return t.Render(o)
	}
	w := textWriter{buf: c.text[:0], over: true}
	if c.textOK {
		w.old = len(c.text)
	}
	c.textOK, c.Shared = false, 0
	err := t.render(o, &w)
	c.text = w.buf // its array, even from a render that failed
	if err != nil {
		return "", err
	}
	c.textOK, c.textGen, c.Shared = true, c.gen, w.same
	return w.String(), nil
}

// render renders the template into w.
func (t *Template) render(o Options, w *textWriter) error {
	if o.MessageList == nil {
		o.Cache = nil // it keeps a MessageList's messages
	}
	r, root := o.Cache.renderer()
	r.tmpl, r.now, r.limits, r.cache = t, o.Now, &t.limits, o.Cache
	// The root holds the fixed variables below, Extra and the undefined
	// names, and a few more that the template sets after reading them
	// (preserve_thinking = preserve_thinking | default(false)): sized once
	// rather than grown.
	if n := 10 + len(o.Extra) + len(t.undef); cap(root.vars) < n {
		root.vars = make([]binding, 0, n)
	}
	var messages value
	var err error
	if o.MessageList != nil {
		messages, err = o.Cache.decodeList(o.MessageList)
	} else {
		messages, err = decodeOption("messages", o.Messages)
	}
	if err != nil {
		return err
	}
	root.set("messages", messages)
	tools, err := decodeOption("tools", o.Tools)
	if err != nil {
		return err
	}
	root.set("tools", tools)
	root.set("documents", nil)
	root.set("add_generation_prompt", o.AddGenerationPrompt)
	if o.BOSToken != "" {
		root.set("bos_token", o.BOSToken)
	}
	if o.EOSToken != "" {
		root.set("eos_token", o.EOSToken)
	}
	for name, raw := range o.Extra {
		v, err := decodeOption(name, raw)
		if err != nil {
			return err
		}
		root.set(name, v)
	}
	for _, name := range t.undef {
		root.set(name, missing)
	}
	defer o.Cache.prune()
	start := w.Len()
	w.grow(o.textRoom()) // after the decoding, which it reads
	if err := r.execBody(t.body, root, w); err != nil {
		if err == errBreak || err == errContinue {
			return &RenderError{Template: t.name, Kind: "TemplateSyntaxError", Msg: "loop control outside of a loop"}
		}
		return err
	}
	if o.Cache != nil {
		o.Cache.textLen = w.Len() - start
	}
	return nil
}

// textWriter is where a render writes its text: a strings.Builder that
// may write over the last text in its array (RenderOver). Within a render,
// its bytes are only ever appended to, so that String's views stay valid
// as it grows.
type textWriter struct {
	buf []byte
	// old is the length of the last text, whose bytes lie in buf's array
	// past its length; same is how many of them the render wrote again,
	// from the start. While the render is in step (same == len(buf)),
	// what it writes is compared with what lies there, and not written
	// when it is the same.
	old, same int
	// over: the writer of RenderOver, whose places are the text's (a
	// macro called for its value writes into a writer of its own).
	over bool
}

func (w *textWriter) WriteString(s string) {
	if n := len(w.buf); n == w.same && n < w.old {
		k := commonPrefix(w.buf[n:w.old], s)
		w.same += k
		if k == len(s) {
			w.buf = w.buf[:n+k]
			return
		}
	}
	w.buf = append(w.buf, s...)
}

// place is where the next write goes in the text, -1 when the writer is
// not the text's own.
func (w *textWriter) place() int {
	if !w.over {
		return -1
	}
	return len(w.buf)
}

// skip writes s, which the last text held at the writer's length, by
// taking it as it lies there: false when the writer is not in step or s
// would pass the last text's end.
func (w *textWriter) skip(s string) bool {
	n := len(w.buf)
	if !w.over || n != w.same || n+len(s) > w.old {
		return false
	}
	w.buf = w.buf[:n+len(s)]
	w.same = len(w.buf)
	return true
}

// grow makes room for n more bytes, keeping the last text's bytes.
func (w *textWriter) grow(n int) {
	switch {
	case cap(w.buf)-len(w.buf) >= n:
	case w.old > 0:
		w.buf = slices.Grow(w.buf[:w.old], n)[:len(w.buf)]
	default:
		w.buf = slices.Grow(w.buf, n)
	}
}

func (w *textWriter) Len() int { return len(w.buf) }

// String is the text written so far, without a copy (see textWriter).
func (w *textWriter) String() string { return unsafe.String(unsafe.SliceData(w.buf), len(w.buf)) }

// commonPrefix is the length of the longest common beginning of a and b.
func commonPrefix(a []byte, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i+64 <= n && string(a[i:i+64]) == b[i:i+64] {
		i += 64
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// textRoom is the room the rendered text is likely to need, made at once
// to spare the writer most of its doublings. Through a cache, it is the
// last render's length and the bytes of the messages decoded anew: the
// text of the messages the last render held (reasoning a template drops,
// JSON quoting) is not counted again. Else the text is mostly the messages'
// and tools' content plus the template's markup.
func (o *Options) textRoom() int {
	if c := o.Cache; c != nil && c.textLen > 0 {
		return c.textLen + c.fresh + 256
	}
	n := len(o.Messages) + len(o.Tools) + 256
	for _, m := range o.MessageList {
		n += len(m)
	}
	return n
}

func decodeOption(name string, raw json.RawMessage) (value, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		if re, ok := err.(*RenderError); ok {
			re.Msg = name + ": " + re.Msg
		}
		return nil, err
	}
	return v, nil
}
