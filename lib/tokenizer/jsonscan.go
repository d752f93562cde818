package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Hand-written readers for the two big parts of tokenizer.json, the vocab
// object and the merges array, which hold most of its megabytes:
// reflection-based decoding made loading several times slower. The input
// has already been validated by encoding/json.

// jsonCursor walks a validated JSON value.
type jsonCursor struct {
	data []byte
	// text is data as one string, made once: the strings read are slices
	// of it, not a copy each (half a million merges, each a string).
	text string
	pos  int
}

func newJSONCursor(data []byte) *jsonCursor {
	return &jsonCursor{data: data, text: string(data)}
}

func (c *jsonCursor) skipSpace() {
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

// expect consumes b after optional space.
func (c *jsonCursor) expect(b byte) error {
	c.skipSpace()
	if c.pos >= len(c.data) || c.data[c.pos] != b {
		return fmt.Errorf("json: want %q at offset %d", b, c.pos)
	}
	c.pos++
	return nil
}

// peek returns the next non-space byte, or 0 at the end.
func (c *jsonCursor) peek() byte {
	c.skipSpace()
	if c.pos >= len(c.data) {
		return 0
	}
	return c.data[c.pos]
}

// str reads a string; escaped strings, rare in tokenizer files, go through
// encoding/json for exact JSON unescaping (surrogate pairs included).
func (c *jsonCursor) str() (string, error) {
	if err := c.expect('"'); err != nil {
		return "", err
	}
	start, escaped := c.pos, false
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case '\\':
			escaped = true
			c.pos += 2
			continue
		case '"':
			end := c.pos
			c.pos++
			if !escaped {
				return c.text[start:end], nil
			}
			var s string
			err := json.Unmarshal(c.data[start-1:c.pos], &s)
			return s, err
		}
		c.pos++
	}
	return "", fmt.Errorf("json: unterminated string at offset %d", start)
}

func (c *jsonCursor) integer() (int, error) {
	c.skipSpace()
	start := c.pos
	for c.pos < len(c.data) && (c.data[c.pos] == '-' || (c.data[c.pos] >= '0' && c.data[c.pos] <= '9')) {
		c.pos++
	}
	return strconv.Atoi(string(c.data[start:c.pos]))
}

// list calls item for each element of an array.
func (c *jsonCursor) list(item func() error) error {
	if err := c.expect('['); err != nil {
		return err
	}
	if c.peek() == ']' {
		c.pos++
		return nil
	}
	for {
		if err := item(); err != nil {
			return err
		}
		switch c.peek() {
		case ',':
			c.pos++
		case ']':
			c.pos++
			return nil
		default:
			return fmt.Errorf("json: want , or ] at offset %d", c.pos)
		}
	}
}

// readVocab reads {"token": id, ...}.
func readVocab(data []byte) (map[string]int, error) {
	c := newJSONCursor(data)
	vocab := make(map[string]int, len(data)/16)
	if err := c.expect('{'); err != nil {
		return nil, err
	}
	if c.peek() == '}' {
		return vocab, nil
	}
	for {
		key, err := c.str()
		if err != nil {
			return nil, err
		}
		if err := c.expect(':'); err != nil {
			return nil, err
		}
		id, err := c.integer()
		if err != nil {
			return nil, fmt.Errorf("json: vocab id of %q: %w", key, err)
		}
		vocab[key] = id
		switch c.peek() {
		case ',':
			c.pos++
		case '}':
			return vocab, nil
		default:
			return nil, fmt.Errorf("json: want , or } at offset %d", c.pos)
		}
	}
}

// readMerges reads merges written as "left right" strings or as
// ["left", "right"] pairs.
func readMerges(data []byte) ([][2]string, error) {
	c := newJSONCursor(data)
	if c.peek() == 'n' { // null
		return nil, nil
	}
	pairs := make([][2]string, 0, len(data)/16) // "Ġt he", : some 10 to 20 bytes each
	err := c.list(func() error {
		if c.peek() == '[' {
			var pair [2]string
			n := 0
			err := c.list(func() error {
				s, err := c.str()
				if n < 2 {
					pair[n] = s
				}
				n++
				return err
			})
			if err == nil && n != 2 {
				err = fmt.Errorf("merge %d has %d parts", len(pairs), n)
			}
			pairs = append(pairs, pair)
			return err
		}
		s, err := c.str()
		if err != nil {
			return err
		}
		for i := 0; i < len(s); i++ {
			if s[i] == ' ' {
				pairs = append(pairs, [2]string{s[:i], s[i+1:]})
				return nil
			}
		}
		return fmt.Errorf("merge %d %q has no space", len(pairs), s)
	})
	return pairs, err
}

// findModelTables finds the model's "vocab" and "merges" values in a
// tokenizer.json by a quick scan of its structure, nil for one it does not
// find, so that reading them can start before encoding/json has decoded
// (and validated) the whole file; their text is compared with what the
// decoding finds before they are used. The last of duplicate keys wins, as
// in encoding/json; a key spelled with escapes or in other letter cases,
// which encoding/json also matches, is not found here (and read after the
// decoding).
func findModelTables(data []byte) (vocab, merges []byte) {
	c := &jsonCursor{data: data}
	c.members(func(key []byte) bool {
		if string(key) != "model" {
			return c.skipValue()
		}
		if c.peek() != '{' {
			return c.skipValue()
		}
		vocab, merges = nil, nil
		return c.members(func(key []byte) bool {
			c.skipSpace()
			start := c.pos
			if !c.skipValue() {
				return false
			}
			switch string(key) {
			case "vocab":
				vocab = data[start:c.pos]
			case "merges":
				merges = data[start:c.pos]
			}
			return true
		})
	})
	return vocab, merges
}

// members calls member with each key of the object at the cursor, the
// cursor before the key's value, which member must consume; it stops at the
// object's end or when member returns false, and reports which.
func (c *jsonCursor) members(member func(key []byte) bool) bool {
	if c.expect('{') != nil {
		return false
	}
	if c.peek() == '}' {
		c.pos++
		return true
	}
	for {
		if c.peek() != '"' {
			return false
		}
		start := c.pos + 1
		if !c.skipString() {
			return false
		}
		key := c.data[start : c.pos-1]
		if c.expect(':') != nil || !member(key) {
			return false
		}
		switch c.peek() {
		case ',':
			c.pos++
		case '}':
			c.pos++
			return true
		default:
			return false
		}
	}
}

// skipValue moves the cursor past the value at it (after space), without
// checking that it is valid JSON, and reports whether the value ended
// before the data did.
func (c *jsonCursor) skipValue() bool {
	depth := 0
	for c.skipSpace(); c.pos < len(c.data); c.skipSpace() {
		switch c.data[c.pos] {
		case '"':
			if !c.skipString() {
				return false
			}
		case '{', '[':
			depth++
			c.pos++
		case '}', ']':
			if depth == 0 {
				return false
			}
			depth--
			c.pos++
		default: // a number, a literal, or inside a container ',' and ':'
			for c.pos < len(c.data) && !endsScalar(c.data[c.pos]) {
				c.pos++
			}
			if depth > 0 && c.pos < len(c.data) && (c.data[c.pos] == ',' || c.data[c.pos] == ':') {
				c.pos++
			}
		}
		if depth == 0 {
			return true
		}
	}
	return false
}

// skipString moves the cursor past the string that starts at it.
func (c *jsonCursor) skipString() bool {
	c.pos++ // the opening quote
	for {
		i := bytes.IndexByte(c.data[c.pos:], '"')
		if i < 0 {
			c.pos = len(c.data)
			return false
		}
		c.pos += i + 1
		backslashes := 0
		for j := c.pos - 2; j >= 0 && c.data[j] == '\\'; j-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return true
		}
	}
}

// endsScalar tells the bytes that end a number or a literal.
func endsScalar(b byte) bool {
	switch b {
	case ',', ':', '{', '}', '[', ']', '"', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}
