// Package record knows the record contract between the synthpipe tools: where
// a record's id is, how many tokens it holds, how it ended. It reads what it
// needs in one pass over the line, validating it as it goes, and never
// decodes a token-id array just to learn its length.
package record

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// Info is what the stream tools need to know about one record.
type Info struct {
	ID               string // "" when the record has none (see HasID)
	HasID            bool
	PromptTokens     int64
	CompletionTokens int64
	FinishReason     string // normalized reason, "" when absent
	HasError         bool   // carries an "error" member that is not null
	Custom           int64  // the number at the Scanner's count path
	HasCustom        bool
	// Counted: the record carries a token count of some kind (a count,
	// the ids, usage, a conversation's turns); one without is 0 only
	// because nothing could be counted.
	Counted bool
	// Conversation is set for a regenerated conversation (generate
	// --turns all): its turns' counts and why it ended. PromptTokens and
	// CompletionTokens are then summed over its turns (ConversationTotals).
	Conversation *ConversationInfo
	// Sample is which of its prompt's answers the record is (generate
	// --samples, FieldSample), 0 for none; PromptID is then its prompt's
	// id (FieldPromptID).
	Sample   int
	PromptID string
	// Gen is the record's "gen" member as it stands in the line (valid
	// only as long as the line), nil when absent: who made the answer.
	Gen []byte
}

// ConversationInfo is what the tools read of a regenerated conversation.
type ConversationInfo struct {
	Turns   []TurnCount
	Ended   string
	Trained int64 // its last prompt and last answer: what training sees
}

// Tokens is the record's token count under mode.
func (in Info) Tokens(mode CountMode) int64 {
	if in.HasCustom {
		return in.Custom
	}
	switch mode {
	case CountPrompt:
		return in.PromptTokens
	case CountCompletion:
		return in.CompletionTokens
	}
	return in.PromptTokens + in.CompletionTokens
}

// TrainedTokens is the length of the sequence a trainer sees for the
// record: its prompt and answer, or a conversation once (its last prompt and
// answer, ConversationTotals); 0 for an error record, which is not trained.
func (in Info) TrainedTokens() int64 {
	switch {
	case in.HasError:
		return 0
	case in.Conversation != nil:
		return in.Conversation.Trained
	}
	return in.PromptTokens + in.CompletionTokens
}

// PastTrainLength is how many of TrainedTokens a trainer with sequence
// length maxLength cuts off (SpecForge's max_length: it truncates each
// sample to it); 0 when maxLength is 0 (no length given).
func (in Info) PastTrainLength(maxLength int64) int64 {
	if maxLength <= 0 {
		return 0
	}
	return max(0, in.TrainedTokens()-maxLength)
}

// TrainCut counts what a trainer with sequence length MaxLength cuts off
// records: those longer than it, the tokens past it, and the tokens all
// the records counted give a trainer.
type TrainCut struct {
	MaxLength                int64
	Records, Tokens, Trained int64
}

// Add counts one record (nothing when MaxLength is 0).
func (c *TrainCut) Add(in Info) {
	if c.MaxLength <= 0 {
		return
	}
	c.Trained += in.TrainedTokens()
	if cut := in.PastTrainLength(c.MaxLength); cut > 0 {
		c.Records++
		c.Tokens += cut
	}
}

// Truncated reports whether the answer stopped at its length limit.
func (in Info) Truncated() bool { return in.FinishReason == "length" }

// Scanner reads Info from lines. Its zero value is not ready: use NewScanner.
type Scanner struct {
	id       IDPath
	idTop    []byte // the id's key when it is a top-level member
	needID   bool
	useCount string // gjson path for a custom count, or ""
	// borrowIDs: Info.ID views the line instead of copying it (see
	// BorrowingIDs).
	borrowIDs bool
}

// NewScanner returns a Scanner. idPath is a gjson path ("id", "meta.uid");
// needID makes a missing or non-string id an error. countPath, if not empty,
// is a gjson path whose number is the record's count (Info.Custom), whatever
// the mode.
func NewScanner(idPath string, needID bool, countPath string) *Scanner {
	s := &Scanner{id: NewIDPath(idPath), needID: needID, useCount: countPath}
	s.idTop = s.id.TopKey()
	return s
}

// BorrowingIDs returns a copy of s whose Info.ID, when the id has no
// escapes, shares the line's memory instead of being copied: no allocation
// per record, for a caller that copies each id (or drops it) before the line
// is reused. Such an id is valid only as long as the line is.
func (s *Scanner) BorrowingIDs() *Scanner {
	c := *s
	c.borrowIDs = true
	return &c
}

func isPlainKey(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '.', '*', '?', '|', '#', '@', '\\', '!', '=', '<', '>', '%', '[', ']', '{', '}', '(', ')':
			return false
		}
	}
	return p != ""
}

// Scan validates line as one JSON object and returns its Info. Errors say what
// is wrong with the record; the caller adds the file and line.
func (s *Scanner) Scan(line []byte) (Info, error) { return s.ScanVisit(line, nil) }

// MemberVisitor is shown each top-level member of a record as Scan crosses
// it (softfail.Members, which picks what its checks read).
type MemberVisitor interface{ Visit(jsonl.Member) }

// ScanVisit is Scan that also shows also (when not nil) each top-level
// member as it is crossed, in order: a caller that needs other members
// than Info's gets them in the same pass over the line. When Scan fails,
// also may have seen some of the members.
func (s *Scanner) ScanVisit(line []byte, also MemberVisitor) (Info, error) {
	var (
		in Info
		r  scannedMembers
		id = IDMatch{key: s.idTop}
	)
	err := jsonl.ScanObject(line, func(m jsonl.Member) {
		key := MemberKey(m.Key)
		switch string(key) {
		case FieldPromptTokens:
			r.promptTok = m.Value
		case FieldCompletionTokens:
			r.complTok = m.Value
		case FieldInputIDs:
			r.inIDs = m.Value
		case FieldOutputIDs:
			r.outIDs = m.Value
		case FieldUsage:
			r.usage = m.Value
		case FieldFinishReason:
			r.finish = m.Value
		case FieldError:
			in.HasError = !bytes.Equal(m.Value, nullLit)
		case FieldTurns:
			r.turns = m.Value
		case FieldEnded:
			r.ended = m.Value
		case FieldSample:
			r.sample = m.Value
		case FieldPromptID:
			r.promptID = m.Value
		case FieldGen:
			in.Gen = m.Value
		}
		if s.idTop != nil && bytes.Equal(key, s.idTop) {
			id.raw = m.Value
			id.times++
		}
		if also != nil {
			also.Visit(m)
		}
	})
	if err != nil {
		return in, err
	}
	var idRaw []byte
	if s.idTop != nil {
		idRaw, err = id.Result()
	} else {
		idRaw, err = s.id.Find(line)
	}
	if err != nil {
		return in, err
	}
	if err := s.readID(&in, idRaw); err != nil {
		return in, err
	}
	// Not "return in, s.readCounts(&in, ...)": the order in which a return
	// list reads in and calls readCounts is not specified.
	err = s.readCounts(&in, line, &r)
	return in, err
}

// scannedMembers are the raw values of the members ScanVisit reads, nil
// for those the record does not have.
type scannedMembers struct {
	promptTok, complTok, inIDs, outIDs, usage []byte
	finish, turns, ended                      []byte
	sample, promptID                          []byte
}

// readCounts fills in's counts, finish reason, sample and conversation
// from the members r of line.
func (s *Scanner) readCounts(in *Info, line []byte, r *scannedMembers) (err error) {
	if in.PromptTokens, err = countSide(FieldPromptTokens, r.promptTok, FieldInputIDs, r.inIDs, r.usage); err != nil {
		return err
	}
	in.Counted = !isNull(r.promptTok) || !isNull(r.complTok) || !isNull(r.inIDs) || !isNull(r.outIDs) ||
		!isNull(usageMember(r.usage, FieldPromptTokens)) || !isNull(usageMember(r.usage, FieldCompletionTokens)) ||
		isConversation(r.turns, r.ended)
	if s.useCount != "" {
		if err := s.readCustom(in, line); err != nil {
			return err
		}
	}
	if in.CompletionTokens, err = countSide(FieldCompletionTokens, r.complTok, FieldOutputIDs, r.outIDs, r.usage); err != nil {
		return err
	}
	if len(r.finish) > 0 && r.finish[0] == '"' {
		in.FinishReason = finishReason(r.finish)
	}
	if err := readSample(in, r.sample, r.promptID); err != nil {
		return err
	}
	if isConversation(r.turns, r.ended) {
		return readConversation(in, r.turns, r.ended)
	}
	return nil
}

// readCustom reads the count at budget-cut --path.
func (s *Scanner) readCustom(in *Info, line []byte) error {
	r := gjson.GetBytes(line, s.useCount)
	if !r.Exists() {
		return fmt.Errorf("no value at --path %q", s.useCount)
	}
	n, err := parseCount([]byte(r.Raw))
	if err != nil {
		return fmt.Errorf("value at --path %q is %s, %w", s.useCount, r.Raw, err)
	}
	in.Custom, in.HasCustom = n, true
	return nil
}

// readConversation counts a regenerated conversation from its turns, by
// ConversationTotals, whatever its top-level counts say; its finish reason
// is its last turn's (a conversation cut by the token limit is truncated).
func readConversation(in *Info, turns, ended []byte) error {
	ts, err := ReadTurns(turns)
	if err != nil {
		return err
	}
	c := &ConversationInfo{Turns: ts, Ended: DecodeID(ended)}
	in.PromptTokens, in.CompletionTokens, c.Trained = ConversationTotals(ts)
	if n := len(ts); n > 0 && in.FinishReason == "" {
		in.FinishReason = ts[n-1].FinishReason
	}
	in.Conversation = c
	return nil
}

var nullLit = []byte("null")

// finishReason unquotes a finish_reason, without allocating for the reasons
// nearly every record has.
func finishReason(raw []byte) string {
	switch string(raw) {
	case `"stop"`:
		return "stop"
	case `"length"`:
		return "length"
	}
	return DecodeID(raw)
}

func (s *Scanner) readID(in *Info, raw []byte) error {
	switch {
	case raw == nil:
		if s.needID {
			return fmt.Errorf("no %q field: every record needs a string id (pick another field with --id-path)", s.id.path)
		}
	case raw[0] != '"':
		if s.needID {
			return fmt.Errorf("%q is %s, not a string: ids must be JSON strings (pick another field with --id-path)", s.id.path, jsonl.Kind(raw))
		}
	default:
		if s.borrowIDs && bytes.IndexByte(raw, '\\') < 0 {
			in.ID = unsafe.String(&raw[1], len(raw)-2) // between the quotes
		} else {
			in.ID = DecodeID(raw)
		}
		in.HasID = true
		if in.ID == "" && s.needID {
			return fmt.Errorf("%q is an empty string: ids must not be empty", s.id.path)
		}
	}
	return nil
}

// MemberKey is a member's key as decoders read it: keys are almost never
// escaped (and then cost nothing here), but "prompt\u005ftokens" is still
// prompt_tokens.
func MemberKey(raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw
	}
	return []byte(DecodeID(append(append([]byte{'"'}, raw...), '"')))
}

// errNotCount explains a count field of the wrong type.
var errNotCount = errors.New("not a non-negative integer")

// errCountTooLarge refuses a count that no record can hold. Letting it in
// would wrap the sums around: a budget would see a negative total and pass
// everything after it.
var errCountTooLarge = errors.New("more than 2^53: no record holds that many tokens")

// maxExactFloat is the largest integer a float64 holds exactly (2^53).
const maxExactFloat = 1 << 53

// parseCount reads a token count: a non-negative JSON integer, or a number
// with an integral value such as 1000.0 or 1e3 (some backends write floats),
// up to 2^53: beyond it a float is no longer exact, and sums of counts could
// overflow.
func parseCount(raw []byte) (int64, error) {
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		switch {
		case n < 0:
			return 0, errNotCount
		case n > maxExactFloat:
			return 0, errCountTooLarge
		}
		return n, nil
	}
	if len(raw) == 0 || raw[0] == '"' || !jsonl.Valid(raw) {
		return 0, errNotCount
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	switch {
	case err == nil && f > maxExactFloat, errors.Is(err, strconv.ErrRange) && f > 0:
		return 0, errCountTooLarge
	case err != nil || f < 0 || f != math.Trunc(f):
		return 0, errNotCount
	}
	return int64(f), nil
}

// isNull reports whether a member's raw value is JSON null: an absent count.
func isNull(raw []byte) bool { return raw == nil || bytes.Equal(raw, nullLit) }

// countSide is the count for one side of a record: the explicit count field,
// else the length of the id array, else the backend's usage figure. A null
// anywhere reads as absent.
func countSide(countField string, count []byte, idsField string, ids, usage []byte) (int64, error) {
	if !isNull(count) {
		n, err := parseCount(count)
		if err != nil {
			return 0, fmt.Errorf("%q is %s, %w", countField, count, err)
		}
		return n, nil
	}
	if !isNull(ids) {
		n, ok := jsonl.IntArrayLen(ids)
		if !ok {
			return 0, TokenIDsError(idsField, ids)
		}
		return int64(n), nil
	}
	if v := usageMember(usage, countField); !isNull(v) {
		n, err := parseCount(v)
		if err != nil {
			return 0, fmt.Errorf("\"usage.%s\" is %s, %w", countField, v, err)
		}
		return n, nil
	}
	return 0, nil
}

// usageMember is the raw value of usage's member key, nil when usage is not
// an object or has no such member. Like every JSON decoder, the last of
// duplicate keys wins (gjson would take the first).
func usageMember(usage []byte, key string) []byte {
	if len(usage) == 0 || usage[0] != '{' {
		return nil
	}
	var v []byte
	jsonl.ScanObject(usage, func(m jsonl.Member) {
		if string(MemberKey(m.Key)) == key {
			v = m.Value
		}
	}) // usage was validated with the record
	return v
}

// CheckVocab refuses a token id of raw (the value of field, an array of
// token ids already checked) that a tokenizer of vocab ids does not have.
func CheckVocab(field string, raw []byte, vocab int) error {
	i, v := 0, -1
	for _, c := range raw {
		switch {
		case c >= '0' && c <= '9':
			if v < 0 {
				v = 0
			}
			v = v*10 + int(c-'0')
		case c == ',' || c == ']':
			if v >= vocab {
				return fmt.Errorf("%s[%d] is %d, past the tokenizer's vocabulary (ids 0 to %d): was the record made with another model?", field, i, v, vocab-1)
			}
			if v >= 0 {
				i++
			}
			v = -1
		}
	}
	return nil
}

// TokenIDsError explains why raw, the value of field, is not an array of
// token ids (integers from 0 to 2^31-1): its type, or its first bad element.
func TokenIDsError(field string, raw []byte) error {
	if len(raw) == 0 || raw[0] != '[' {
		return fmt.Errorf("%s is %s, want an array of token ids", field, jsonl.Kind(raw))
	}
	i, bad := 0, ""
	gjson.ParseBytes(raw).ForEach(func(_, v gjson.Result) bool {
		if n, err := strconv.ParseUint(v.Raw, 10, 64); err != nil || n > jsonl.MaxTokenID {
			bad = v.Raw
			return false
		}
		i++
		return true
	})
	if len(bad) > 40 {
		bad = bad[:40] + "..."
	}
	return fmt.Errorf("%s[%d] is %s: token ids are integers from 0 to %d", field, i, bad, jsonl.MaxTokenID)
}
