package record

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// IDPath finds a record's id: the value at a gjson path. Every tool reads ids
// through it, so that one rule holds everywhere: an id key that appears twice
// in the object that holds it is an error (JSON decoders disagree on which
// one wins, so two tools would see two different ids), and ids decode
// exactly (see DecodeID).
type IDPath struct {
	path  string
	steps [][]byte // the path's keys when it is plain keys joined by dots, else nil
}

// NewIDPath returns the finder for path ("" is "id").
func NewIDPath(path string) IDPath {
	if path == "" {
		path = FieldID
	}
	p := IDPath{path: path}
	if isPlainPath(path) {
		for _, k := range strings.Split(path, ".") {
			p.steps = append(p.steps, []byte(k))
		}
	}
	return p
}

// String is the path as the user wrote it.
func (p IDPath) String() string { return p.path }

// TopKey is the path's key when it names a top-level member directly, else
// nil: a caller scanning the record's members itself can then pick the id
// out with an IDMatch instead of calling Find.
func (p IDPath) TopKey() []byte {
	if len(p.steps) == 1 {
		return p.steps[0]
	}
	return nil
}

// isPlainPath reports whether a gjson path is only keys joined by dots, so
// that it can be walked member by member.
func isPlainPath(p string) bool {
	for _, k := range strings.Split(p, ".") {
		if !isPlainKey(k) {
			return false
		}
	}
	return true
}

// Find returns the raw JSON value at the path in line (an object already
// validated), nil when there is none; an error when a key on the way
// appears twice in its object.
func (p IDPath) Find(line []byte) ([]byte, error) {
	if p.steps == nil {
		if r := gjson.GetBytes(line, p.path); r.Exists() {
			return []byte(r.Raw), nil
		}
		return nil, nil
	}
	obj := line
	for i, key := range p.steps {
		var m IDMatch
		m.key = key
		jsonl.ScanObject(obj, m.Visit) // obj was validated with the record
		if err := m.check(p.steps[:i+1]); err != nil {
			return nil, err
		}
		if m.raw == nil || i == len(p.steps)-1 {
			return m.raw, nil
		}
		if m.raw[0] != '{' {
			return nil, nil
		}
		obj = m.raw
	}
	return nil, nil
}

// IDMatch picks a top-level key's value out of an object's members as a
// scanner visits them, counting repeats of the key.
type IDMatch struct {
	key   []byte
	raw   []byte
	times int
}

// Match starts picking out the value of p.TopKey().
func (p IDPath) Match() IDMatch { return IDMatch{key: p.TopKey()} }

// Visit looks at one member; keys compare as decoded ("\u0069d" is "id").
func (m *IDMatch) Visit(mem jsonl.Member) {
	if bytes.Equal(mem.Key, m.key) || bytes.IndexByte(mem.Key, '\\') >= 0 && bytes.Equal(MemberKey(mem.Key), m.key) {
		m.raw = mem.Value
		m.times++
	}
}

// Result is the value found (nil when absent), or the error for a key that
// appeared more than once.
func (m *IDMatch) Result() ([]byte, error) {
	if err := m.check([][]byte{m.key}); err != nil {
		return nil, err
	}
	return m.raw, nil
}

func (m *IDMatch) check(path [][]byte) error {
	if m.times > 1 {
		return fmt.Errorf("the key %q appears %d times at --id-path %q: a record has one id (remove the others)", m.key, m.times, string(bytes.Join(path, []byte("."))))
	}
	return nil
}

// DecodeID decodes a JSON string literal (quotes included, already
// validated) exactly: two literals give the same id when they spell the same
// sequence of code points, whatever their escapes ("\u0041" is "A"), and
// different ids otherwise. A lone surrogate escape ("\ud83d"), which no
// UTF-8 string can hold, becomes its generalized UTF-8 bytes (WTF-8) instead
// of U+FFFD as encoding/json would have it: "x\ud83d", "x\udc00" and
// "x\ufffd" stay three ids.
func DecodeID(raw []byte) string {
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return string(body)
	}
	b, _, _ := jsonl.AppendUnquoted(make([]byte, 0, len(body)), raw, appendWTF8) // raw was validated with its record
	return string(b)
}

// appendWTF8 appends a lone surrogate as the three bytes UTF-8 would give it
// if it allowed one.
func appendWTF8(b []byte, r rune) []byte {
	return append(b, 0xe0|byte(r>>12), 0x80|byte(r>>6)&0x3f, 0x80|byte(r)&0x3f)
}

// IDText is an id as valid UTF-8 text, for what must be text (a server's
// request id, a message): a lone surrogate, kept by DecodeID as its WTF-8
// bytes, is written as its escape ("x\\ud83d"), so that two ids stay two.
func IDText(id string) string {
	if utf8.ValidString(id) {
		return id
	}
	var b strings.Builder
	for i := 0; i < len(id); {
		if c := id[i]; c == 0xed && i+2 < len(id) && id[i+1] >= 0xa0 && id[i+1] <= 0xbf {
			r := rune(c&0x0f)<<12 | rune(id[i+1]&0x3f)<<6 | rune(id[i+2]&0x3f)
			fmt.Fprintf(&b, `\u%04x`, r)
			i += 3
			continue
		}
		r, n := utf8.DecodeRuneInString(id[i:])
		b.WriteRune(r)
		i += n
	}
	return b.String()
}

// maxShownID is how much of an id a message quotes: ids are meant to be
// short, but nothing stops a record from carrying a megabyte of one.
const maxShownID = 80

// ShowID quotes an id for a message, cut to its first 80 bytes (with its
// full length) when it is longer.
func ShowID(id string) string {
	id = IDText(id)
	if len(id) <= maxShownID {
		return strconv.Quote(id)
	}
	cut := maxShownID
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%s bytes in all)", strconv.Quote(id[:cut]), strconv.FormatInt(int64(len(id)), 10))
}
