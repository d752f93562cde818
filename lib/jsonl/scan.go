package jsonl

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"unicode/utf8"
	"unsafe"
)

// SyntaxError says where a line stops being JSON. Offset counts bytes from the
// start of the line, from 1, as an editor's column would.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// byte classes for the scanner's hot loops
const (
	clOther = iota
	clDigit
	clSpace
	clComma
)

var class [256]uint8

func init() {
	for c := '0'; c <= '9'; c++ {
		class[c] = clDigit
	}
	for _, c := range " \t\r\n" {
		class[c] = clSpace
	}
	class[','] = clComma
}

// Member is one top-level member of an object: its key (without quotes, still
// escaped) and its raw value.
type Member struct {
	Key   []byte
	Value []byte
}

// ScanObject checks that line is exactly one JSON object (surrounding white
// space allowed) and calls visit, if not nil, for each of its top-level
// members in order. It is strict (RFC 8259, valid UTF-8 in strings) and fast
// on the shape that dominates generated data: long arrays of small integers,
// which it crosses in one tight loop without decoding them.
func ScanObject(line []byte, visit func(Member)) error {
	s := scanner{b: line}
	s.skipSpace()
	if s.i >= len(s.b) {
		return s.fail("empty line where a JSON object was expected")
	}
	if s.b[s.i] != '{' {
		if bytes.HasPrefix(s.b[s.i:], utf8BOM) {
			// Reader drops a BOM on a file's first line only: one here comes
			// from files joined with cat, each with its own BOM.
			return &SyntaxError{Offset: s.i + 1, Msg: "a UTF-8 byte order mark (BOM) starts the line: only a file's first line may have one (files joined with cat? pass them as separate arguments)"}
		}
		if err := s.value(0); err != nil {
			return err
		}
		return &SyntaxError{Offset: 1, Msg: "a record must be a JSON object, not " + Kind(line[skipLeading(line):])}
	}
	if err := s.object(0, visit); err != nil {
		return err
	}
	return s.end()
}

// IntArrayLen counts the elements of v, the raw text of an array of token
// ids (integers from 0 to MaxTokenID), without decoding them. ok is false
// when v is not such an array (it may still be valid JSON of another shape).
func IntArrayLen(v []byte) (n int, ok bool) {
	if len(v) == 0 || v[0] != '[' {
		return 0, false
	}
	s := scanner{b: v, i: 1}
	n, ok = s.intRun()
	if !ok || s.i != len(v) {
		return 0, false
	}
	return n, true
}

// AppendInts appends the ids of v, an array that IntArrayLen accepts, to
// dst in one scan of its digits, without a float parse per id and with room
// for them made once; ok is false, with dst as it was, when v is not such an
// array (a sign, a fraction, an exponent, a leading zero, a larger id, a
// non-number), which a caller's general path then reads or refuses. It reads
// a string (gjson's raw values) or bytes (a record's member) alike, neither
// copied to be read.
func AppendInts[T string | []byte](dst []int, raw T) (ids []int, ok bool) {
	return appendInts(dst, readOnlyBytes(raw))
}

// readOnlyBytes is v's bytes, those of a string shared rather than copied:
// the caller must not write to them.
func readOnlyBytes[T string | []byte](v T) []byte {
	if s, ok := any(v).(string); ok {
		return unsafe.Slice(unsafe.StringData(s), len(s))
	}
	return any(v).([]byte)
}

func appendInts(dst []int, v []byte) (ids []int, ok bool) {
	n, ok := IntArrayLen(v)
	if !ok {
		return dst, false
	}
	dst = slices.Grow(dst, n)
	id, in := 0, false
	for _, c := range v[1:] {
		switch {
		case c >= '0' && c <= '9':
			id = id*10 + int(c-'0')
			in = true
		case c == ',' || c == ']':
			if in {
				dst = append(dst, id)
			}
			id, in = 0, false
		}
	}
	return dst, true
}

// Valid reports whether b is one JSON value of any kind.
func Valid(b []byte) bool {
	s := scanner{b: b}
	s.skipSpace()
	if err := s.value(0); err != nil {
		return false
	}
	return s.end() == nil
}

func skipLeading(b []byte) int {
	i := 0
	for i < len(b) && class[b[i]] == clSpace {
		i++
	}
	return i
}

// Kind names the type of a raw JSON value for messages ("an array",
// "null", ...); "missing" for no value at all.
func Kind(raw []byte) string {
	if len(raw) == 0 {
		return "missing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 10000

type scanner struct {
	b []byte
	i int
}

func (s *scanner) fail(msg string) error {
	if s.i >= len(s.b) {
		return &SyntaxError{Offset: len(s.b) + 1, Msg: "unexpected end of line: " + msg}
	}
	return &SyntaxError{Offset: s.i + 1, Msg: fmt.Sprintf("%s, found %s", msg, quoteByte(s.b[s.i]))}
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("'%c'", c)
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

func (s *scanner) end() error {
	s.skipSpace()
	if s.i != len(s.b) {
		return s.fail("expected end of line after the JSON value")
	}
	return nil
}

func (s *scanner) skipSpace() {
	for s.i < len(s.b) && class[s.b[s.i]] == clSpace {
		s.i++
	}
}

func (s *scanner) value(depth int) error {
	if depth > maxDepth {
		return s.fail("nesting deeper than 10000")
	}
	if s.i >= len(s.b) {
		return s.fail("expected a value")
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.str()
	case c == '{':
		return s.object(depth, nil)
	case c == '[':
		return s.array(depth)
	case c == '-' || class[c] == clDigit:
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.fail("expected a value")
}

func (s *scanner) literal(word string) error {
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return nil
	}
	return s.fail("expected " + word)
}

// object crosses an object from its '{', calling visit (when not nil) with
// each member: ScanObject's top level, and every nested object with nil.
func (s *scanner) object(depth int, visit func(Member)) error {
	s.i++ // '{'
	s.skipSpace()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.skipSpace()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return s.fail("expected a string key")
		}
		k0 := s.i + 1
		if err := s.str(); err != nil {
			return err
		}
		key := s.b[k0 : s.i-1]
		s.skipSpace()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return s.fail("expected ':' after key")
		}
		s.i++
		s.skipSpace()
		v0 := s.i
		if err := s.value(depth + 1); err != nil {
			return err
		}
		if visit != nil {
			visit(Member{Key: key, Value: s.b[v0:s.i]})
		}
		s.skipSpace()
		if s.i >= len(s.b) {
			return s.fail("expected ',' or '}'")
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.fail("expected ',' or '}'")
		}
	}
}

func (s *scanner) array(depth int) error {
	s.i++ // '['
	if _, ok := s.intRun(); ok {
		return nil
	}
	s.skipSpace()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for {
		s.skipSpace()
		if err := s.value(depth + 1); err != nil {
			return err
		}
		s.skipSpace()
		if s.i >= len(s.b) {
			return s.fail("expected ',' or ']'")
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.fail("expected ',' or ']'")
		}
	}
}

// intRun crosses an array of non-negative integers ("[1, 22,333]") from just
// after its '[' and returns the element count. It gives up (ok=false,
// position unchanged) on anything else, including a number too large for a
// uint64, leaving the general path to parse and report it.
//
// Token-id arrays are most of the bytes of generated data, and the length of
// each number is random, so a byte-at-a-time loop spends its time in
// mispredicted branches. Instead it checks 16 bytes at a time with SWAR
// masks: a chunk of digits and commas whose elements are well formed only
// adds its commas to the count. Anything unusual in a chunk (white space, the
// closing ']', an element "0", a run of 8 digits) sends one element through
// the byte-at-a-time path, which then hands back to the fast one.
func (s *scanner) intRun() (n int, ok bool) {
	b, i := s.b, s.i
	for i < len(b) && class[b[i]] == clSpace {
		i++
	}
	if i < len(b) && b[i] == ']' {
		s.i = i + 1
		return 0, true
	}
	first := i            // no element starts before this
	start := uint64(0x80) // 0x80 when b[i] is the first byte of an element, else 0
	commas := 0           // separators seen: the count is commas+1
	run := 0              // digits that end the word before b[i]
	for {
		if blockScan {
			i, start, run, commas = intBlocks(b, i, start, run, commas)
		}
		i, start, _, commas = intWords(b, i, start, run, commas)
		if start == 0 { // back up to the start of the number the fast path was in
			for i > first && class[b[i-1]] == clDigit {
				i--
			}
		} else { // the fast path stopped after a comma: white space may follow it
			for i < len(b) && class[b[i]] == clSpace {
				i++
			}
		}
		// one element, byte by byte
		d0 := i
		if i >= len(b) || class[b[i]] != clDigit {
			return 0, false
		}
		if b[i] == '0' && i+1 < len(b) && class[b[i+1]] == clDigit {
			return 0, false
		}
		for i < len(b) && class[b[i]] == clDigit {
			i++
		}
		if !fitsTokenID(b[d0:i]) {
			return 0, false
		}
		for i < len(b) && class[b[i]] == clSpace {
			i++
		}
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			commas++
			i++
			for i < len(b) && class[b[i]] == clSpace {
				i++
			}
			start, run = 0x80, 0
		case ']':
			s.i = i + 1
			return commas + 1, true
		default:
			return 0, false
		}
	}
}

// intWords is intRun's word path, 16 bytes at a time as two words: the
// second's checks do not wait for the first's, so the processor overlaps
// them. A word may be only digits and commas (no white space, no closing
// ']'), with no empty element, no element that starts with '0' (a leading
// zero, or the id 0), and not 8 digits in a row (maybe a number too long for
// a uint64); else it stops and the byte-at-a-time path takes one element.
func intWords(b []byte, i int, start uint64, run, commas int) (int, uint64, int, int) {
	for i+16 <= len(b) {
		w0 := binary.LittleEndian.Uint64(b[i:])
		w1 := binary.LittleEndian.Uint64(b[i+8:])
		d0, sep0 := digitMask(w0), byteMask(w0, ',')
		d1, sep1 := digitMask(w1), byteMask(w1, ',')
		if d0|sep0 != hiBits || d1|sep1 != hiBits || d0 == hiBits || d1 == hiBits {
			break
		}
		// A number of up to 9 digits is a valid token id; a longer one
		// (across two words) must go through the byte path's check.
		nd0, nd1 := ^d0&hiBits, ^d1&hiBits
		if run+bits.TrailingZeros64(nd0)>>3 > 9 || bits.LeadingZeros64(nd0)>>3+bits.TrailingZeros64(nd1)>>3 > 9 {
			break
		}
		starts0 := sep0<<8 | start    // bytes that begin an element
		starts1 := sep1<<8 | sep0>>56 // (w1's first, if w0 ends in a comma)
		if starts0&(sep0|zeroMask(w0))|starts1&(sep1|zeroMask(w1)) != 0 {
			break
		}
		commas += bits.OnesCount64(sep0 | sep1>>1) // the two masks' bits do not overlap
		start = sep1 >> 56
		run = bits.LeadingZeros64(nd1) >> 3
		i += 16
	}
	return i, start, run, commas
}

// intBlocks is intRun's fastest path, 64 bytes at a time: it crosses blocks
// of only digits and commas whose elements are well formed (none empty, none
// with a leading zero, none of 10 digits or more), adds their commas to the
// count, and stops before any other block, which the 16-byte path and the
// byte-at-a-time one then take. start and run are intRun's: 0x80 when b[i]
// begins an element, and the digits just before b[i].
func intBlocks(b []byte, i int, start uint64, run, commas int) (int, uint64, int, int) {
	if hasAVX2 {
		n, start, run, commas := intBlocksAVX2(b[i:], start, run, commas)
		return i + n, start, run, commas
	}
	return intBlocksMasks(b, i, start, run, commas)
}

// intBlocksMasks is intBlocks with each block's masks from blockMasksSSE2
// (intBlocksAVX2 is the same loop in assembly).
func intBlocksMasks(b []byte, i int, start uint64, run, commas int) (int, uint64, int, int) {
	for i+64 <= len(b) {
		d, c, z := blockMasksSSE2(&b[i])
		if d|c != ^uint64(0) {
			break
		}
		starts := c<<1 | start>>7 // bytes that begin an element
		// an empty element, or a '0' that begins one and is followed by a
		// digit (or by the next block, unseen yet)
		if starts&c != 0 || starts&z&(d>>1|1<<63) != 0 {
			break
		}
		// 10 digits in a row may pass MaxTokenID: the byte path checks them
		r2 := d & (d >> 1)
		r8 := r2 & (r2 >> 2)
		r8 &= r8 >> 4
		if run+bits.TrailingZeros64(^d) > 9 || r8&(r2>>8) != 0 {
			break
		}
		commas += bits.OnesCount64(c)
		start = c >> 63 << 7
		run = bits.LeadingZeros64(^d)
		i += 64
	}
	return i, start, run, commas
}

// MaxTokenID is the largest token id accepted: ids are int32 in every
// tokenizer and server (SGLang, vLLM, the training loaders), and a larger one
// would wrap around on its way there.
const MaxTokenID = 1<<31 - 1

// maxTokenIDDigits is MaxTokenID in decimal.
const maxTokenIDDigits = "2147483647"

// fitsTokenID reports whether the decimal digits d (no leading zeros) are at
// most MaxTokenID.
func fitsTokenID(d []byte) bool {
	switch {
	case len(d) < len(maxTokenIDDigits):
		return true
	case len(d) > len(maxTokenIDDigits):
		return false
	}
	return string(d) <= maxTokenIDDigits
}

// SWAR helpers: each byte of a uint64 is one input byte (little endian); a
// mask has the high bit of a byte set where the byte matches.
const (
	loBits uint64 = 0x0101010101010101
	hiBits uint64 = 0x8080808080808080
	low7   uint64 = 0x7f7f7f7f7f7f7f7f
)

// byteMask marks the bytes of w equal to c, exactly (no false positives
// from borrows, unlike the classic haszero trick).
func byteMask(w uint64, c byte) uint64 {
	x := w ^ (loBits * uint64(c))
	return ^((x&low7 + low7) | x | low7)
}

// digitMask marks the bytes of w that are '0'...'9'.
func digitMask(w uint64) uint64 {
	t := w & low7
	ge0 := t + loBits*(0x80-'0')     // high bit set iff byte >= '0'
	gt9 := t + loBits*(0x80-('9'+1)) // high bit set iff byte > '9'
	return ge0 &^ gt9 &^ w & hiBits
}

// zeroMask marks the bytes of w that are '0', given that all of them are
// digits or commas: of those, '0' is the one whose low nibble is 0, and
// adding 0x0f to the nibble carries into bit 4 for every other one.
func zeroMask(w uint64) uint64 {
	nonzero := (w&0x0f0f0f0f0f0f0f0f + 0x0f0f0f0f0f0f0f0f) & 0x1010101010101010
	return (^nonzero & 0x1010101010101010) << 3
}

// stringStopMask marks the bytes of w that end a run of plain string bytes:
// '"', '\\' and control characters. Bytes >= 0x80 are not marked.
func stringStopMask(w uint64) uint64 {
	ctl := ^((w&low7 + loBits*(0x80-0x20)) | w) & hiBits // < 0x20
	return byteMask(w, '"') | byteMask(w, '\\') | ctl
}

func (s *scanner) number() error {
	b := s.b
	if b[s.i] == '-' {
		s.i++
	}
	if s.i >= len(b) || class[b[s.i]] != clDigit {
		return s.fail("expected a digit")
	}
	if b[s.i] == '0' {
		s.i++
		if s.i < len(b) && class[b[s.i]] == clDigit {
			return s.fail("leading zero in a number")
		}
	} else {
		for s.i < len(b) && class[b[s.i]] == clDigit {
			s.i++
		}
	}
	if s.i < len(b) && b[s.i] == '.' {
		s.i++
		if s.i >= len(b) || class[b[s.i]] != clDigit {
			return s.fail("expected a digit after '.'")
		}
		for s.i < len(b) && class[b[s.i]] == clDigit {
			s.i++
		}
	}
	if s.i < len(b) && (b[s.i] == 'e' || b[s.i] == 'E') {
		s.i++
		if s.i < len(b) && (b[s.i] == '+' || b[s.i] == '-') {
			s.i++
		}
		if s.i >= len(b) || class[b[s.i]] != clDigit {
			return s.fail("expected a digit in the exponent")
		}
		for s.i < len(b) && class[b[s.i]] == clDigit {
			s.i++
		}
	}
	return nil
}

func (s *scanner) str() error {
	b := s.b
	start := s.i
	s.i++ // opening quote
	ascii := true
	for s.i < len(b) {
		// Cross plain bytes 8 at a time: most of a long answer's text;
		// in the word that holds a stop, up to the stop (a byte at a
		// time, each went through the word's masks again: a short key's
		// closing quote cost up to 8 of them).
		var high uint64
		for s.i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[s.i:])
			if stop := stringStopMask(w); stop != 0 {
				plain := bits.TrailingZeros64(stop) >> 3
				high |= w & (1<<(8*plain) - 1)
				s.i += plain
				break
			}
			high |= w
			s.i += 8
		}
		if high&hiBits != 0 {
			ascii = false
		}
		if s.i >= len(b) {
			break
		}
		c := b[s.i]
		switch {
		case c == '"':
			s.i++
			if !ascii && !utf8.Valid(b[start:s.i]) {
				s.i = start + firstInvalidUTF8(b[start:s.i])
				return s.fail("invalid UTF-8 in a string")
			}
			return nil
		case c == '\\':
			if err := s.escape(); err != nil {
				return err
			}
			continue
		case c < 0x20:
			return s.fail("control character in a string (escape it)")
		case c >= 0x80:
			ascii = false
		}
		s.i++
	}
	return s.fail("unterminated string")
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return 0
}

func (s *scanner) escape() error {
	b := s.b
	s.i++ // backslash
	if s.i >= len(b) {
		return s.fail("unterminated escape")
	}
	switch b[s.i] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i++
		return nil
	case 'u':
		s.i++
		for k := 0; k < 4; k++ {
			if s.i >= len(b) || !isHex(b[s.i]) {
				return s.fail("expected 4 hex digits after \\u")
			}
			s.i++
		}
		return nil
	}
	return s.fail("invalid escape")
}

func isHex(c byte) bool {
	return class[c] == clDigit || (c|0x20 >= 'a' && c|0x20 <= 'f')
}

// MaxDepth is the deepest nesting of arrays and objects any tool accepts,
// from a file or from a server. Recursive parsers (gjson's validation among
// them) use one stack frame per level: twelve megabytes of "[" would
// overflow the stack and crash the tool, so bytes from outside are checked
// with WithinDepth before such a parser sees them.
const MaxDepth = maxDepth

// WithinDepth reports whether the arrays and objects of b nest at most
// limit deep. It only counts brackets outside strings, in one pass without
// recursion, and says nothing else about b's validity.
func WithinDepth(b []byte, limit int) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '[', '{':
			if depth++; depth > limit {
				return false
			}
		case ']', '}':
			depth--
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		}
	}
	return true
}
