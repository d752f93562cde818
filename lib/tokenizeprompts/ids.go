package tokenizeprompts

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// isInteger reports whether a JSON number is written as an integer.
func isInteger(raw []byte) bool {
	digits := bytes.TrimPrefix(raw, []byte("-"))
	if len(digits) == 0 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// derivedIDHexDigits is how much of the SHA-256 a derived id keeps: 64 bits,
// so that a billion prompts collide with a chance of about 3 in 100,000.
const derivedIDHexDigits = 16

// sourceID reads the record's own id from raw (the value at --id-path, nil
// when absent). A string is kept; a number becomes its decimal text (7 ->
// "7", 1e3 -> "1000"). ok is false when the record has no usable id (absent,
// null or ""), and an id is then derived.
func sourceID(idPath string, raw []byte) (id string, ok bool, err error) {
	if raw == nil || bytes.Equal(raw, nullJSON) {
		return "", false, nil
	}
	switch c := raw[0]; {
	case c == '"':
		s := record.DecodeID(raw)
		return s, s != "", nil
	case c == '-' || c >= '0' && c <= '9':
		return numberID(raw), true, nil
	}
	return "", false, fmt.Errorf("the id at --id-path %q is %s: ids must be strings or numbers", idPath, jsonl.Kind(raw))
}

// numberID writes a JSON number as a decimal string: integers as they are
// written, others without an exponent.
func numberID(raw []byte) string {
	if isInteger(raw) {
		return string(raw) // as written, even beyond 64 bits
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return string(raw)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// derivedID names a prompt that has no id of its own: prefix followed by the
// first 16 hex digits of the SHA-256 of the prompt as canonical JSON (see
// canonicalPrompt). The same prompt gets the same id on every run and
// machine, whatever the source's key order or spacing, and whatever chat
// template or tokenizer renders it; identical prompts share an id, so
// dedupe-resume treats them as one.
func derivedID(prefix string, p *prompt) (string, error) {
	canon, err := canonicalPrompt(p)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return prefix + hex.EncodeToString(sum[:])[:derivedIDHexDigits], nil
}

// canonicalPrompt is the JSON text a derived id hashes: {"messages": [...],
// "tools": [...]} for a conversation (tools omitted when absent), {"text":
// "..."} for a rendered text; objects with their keys sorted, no spaces,
// strings as encoding/json writes them with HTML escaping off, numbers as
// the source wrote them. The messages are those written to the output:
// after --system and after the dropped answer.
func canonicalPrompt(p *prompt) ([]byte, error) {
	var raw []byte
	if p.isText() {
		var err error
		if raw, err = marshal(map[string]any{record.FieldText: p.text}); err != nil {
			return nil, err
		}
	} else {
		// Both parts are JSON already; the decoding below reads them
		// whatever their spacing, so they are joined as they are.
		raw = append([]byte(`{"`+record.FieldMessages+`":`), p.messagesJSON()...)
		if p.tools != nil {
			raw = append(append(raw, `,"`+record.FieldTools+`":`...), p.tools...)
		}
		raw = append(raw, '}')
	}
	// Decoding and encoding again sorts the keys of every nested object.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return marshal(v)
}
