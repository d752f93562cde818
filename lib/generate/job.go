package generate

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/conversation"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// job is one request record on its way through the run. It is kept small:
// ten thousand of them may be in flight.
type job struct {
	seq             int64  // input order, for --ordered
	line            []byte // the record as read, without a stale "error" member
	req             backend.Request
	promptTokens    int  // the record's, else len(input_ids), else an estimate
	hasPromptTokens bool // the record states its prompt size; the server's is not added
	collides        bool // the record already has response members: replace, do not append
	reserve         reservation
	server          *server              // the server of the current attempt
	kvTokens        int                  // what this request is expected to hold on its server
	params          []byte               // gen.params of a request with its own sampling parameters (openai-batch), else nil
	conv            *conversation.Source // the conversation to regenerate (--turns all), else nil
}

// responseKeys are the members generate adds; a record that already has one
// (an output re-fed by mistake, a previous run's fields) gets them replaced.
var responseKeys = map[string]bool{
	record.FieldOutputIDs: true, "text": true, "reasoning": true, "reasoning_details": true,
	"tool_calls": true, record.FieldFinishReason: true, "native_finish_reason": true,
	record.FieldCompletionTokens: true, record.FieldUsage: true, "gen": true,
}

// maxCount is the largest token count a record may state: 2^53, as in every
// tool, since sums beyond it are no longer exact.
const maxCount = 1 << 53

// missingInput explains a record without what the backend sends.
func missingInput(kind *backend.Kind) error {
	if kind.Input == backend.TokenIDs {
		return fmt.Errorf(`no %q: --%s %s sends token ids (run tokenize-prompts first, or use %s with messages)`,
			record.FieldInputIDs, flagBackend, kind.Name, orList(backendsTaking(backend.Messages)))
	}
	return fmt.Errorf(`no "messages": --%s %s sends the conversation (an array of {role, content})`, flagBackend, kind.Name)
}

// errEmptyPrompt explains a record whose token ids are an empty array.
var errEmptyPrompt = errors.New(`"input_ids" is empty: there is no prompt to answer`)

// parser turns input lines into jobs.
type parser struct {
	kind   *backend.Kind
	turns  bool // --turns all: each record is a conversation
	id     record.IDPath
	params backend.Params
	batch  *batchInput // --input-format openai-batch, else nil
}

func newParser(cfg *config) *parser {
	return &parser{kind: cfg.kind, id: record.NewIDPath(cfg.idPath), params: cfg.params, turns: cfg.turnsAll}
}

// parse validates line as one JSON object and builds its job; line is
// copied, since the reader reuses its buffer, and the request's messages
// point into the copy.
func (p *parser) parse(line []byte) (*job, error) {
	if p.batch != nil {
		return p.batch.parse(line)
	}
	line = bytes.Clone(line)
	var (
		idRaw, inputIDs, messages, tools, promptTok []byte
		hasError, collides                          bool
		id                                          = p.id.Match()
	)
	err := jsonl.ScanObject(line, func(m jsonl.Member) {
		switch string(m.Key) {
		case record.FieldInputIDs:
			inputIDs = m.Value
		case "messages":
			messages = m.Value
		case "tools":
			tools = m.Value
		case record.FieldPromptTokens:
			promptTok = m.Value
		case record.FieldError:
			hasError = true
		default:
			if responseKeys[string(m.Key)] {
				collides = true
			}
		}
		id.Visit(m)
	})
	if err != nil {
		return nil, err
	}
	if p.id.TopKey() != nil {
		idRaw, err = id.Result()
	} else {
		idRaw, err = p.id.Find(line)
	}
	if err != nil {
		return nil, err
	}
	j := &job{collides: collides}
	if len(idRaw) == 0 || idRaw[0] != '"' {
		return nil, fmt.Errorf("no string %q: every record needs an id (tokenize-prompts adds one; or pick a field with --id-path)", p.id)
	}
	// The request id is text (SGLang's rid): lone surrogates as escapes,
	// so that two ids that differ only in them stay two requests.
	j.req.ID = record.IDText(record.DecodeID(idRaw))
	if j.req.ID == "" {
		return nil, fmt.Errorf("%q is an empty string: ids must not be empty", p.id)
	}
	if len(promptTok) > 0 && !bytes.Equal(promptTok, []byte("null")) {
		n, err := strconv.ParseInt(string(promptTok), 10, 64)
		if err != nil && errors.Is(err, strconv.ErrRange) || err == nil && n > maxCount {
			return nil, fmt.Errorf("%q is %s, more than 2^53: no record holds that many tokens", record.FieldPromptTokens, promptTok)
		}
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is %s, not a non-negative integer", record.FieldPromptTokens, promptTok)
		}
		j.promptTokens, j.hasPromptTokens = int(n), true
	}
	switch p.kind.Input {
	case backend.TokenIDs:
		if len(inputIDs) == 0 || bytes.Equal(inputIDs, []byte("null")) {
			return nil, missingInput(p.kind)
		}
		ids, ok := parseIDs(inputIDs)
		if !ok {
			return nil, record.TokenIDsError(record.FieldInputIDs, inputIDs)
		}
		if len(ids) == 0 {
			return nil, errEmptyPrompt
		}
		j.req.InputIDs = ids
		if !j.hasPromptTokens {
			j.promptTokens = len(ids)
		}
	default:
		if len(messages) == 0 || messages[0] != '[' {
			return nil, missingInput(p.kind)
		}
		j.req.Messages = messages
		if len(tools) > 0 && tools[0] == '[' {
			j.req.Tools = tools
		}
		if !j.hasPromptTokens {
			switch n, ok := jsonl.IntArrayLen(inputIDs); {
			case ok && len(inputIDs) > 0:
				j.promptTokens = n
			default:
				// About three bytes of JSON a token: rather high than low,
				// since this only sizes reservations.
				j.promptTokens = (len(messages) + len(tools)) / 3
			}
		}
	}
	if p.turns {
		if j.conv, err = parseConversation(messages, tools); err != nil {
			return nil, err
		}
	}
	j.req.Params = p.params
	j.line = line
	if hasError {
		j.line = dropStaleError(j.line)
	}
	return j, nil
}

// parseIDs reads a JSON array of non-negative integers.
func parseIDs(raw []byte) ([]int, bool) {
	n, ok := jsonl.IntArrayLen(raw)
	if !ok {
		return nil, false
	}
	ids := make([]int, 0, n)
	v := 0
	in := false
	for _, c := range raw[1:] {
		switch {
		case c >= '0' && c <= '9':
			v = v*10 + int(c-'0')
			in = true
		case c == ',' || c == ']':
			if in {
				ids = append(ids, v)
			}
			v, in = 0, false
		}
	}
	return ids, len(ids) == n
}
