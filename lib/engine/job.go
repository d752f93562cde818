package engine

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/conversation"
	"github.com/synthpipe/synthpipe/lib/flaggroup"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
	"github.com/synthpipe/synthpipe/lib/thinking"
)

// job is one request record on its way through the run. It is kept small:
// ten thousand of them may be in flight.
type job struct {
	seq             int64  // input order, for --ordered
	line            []byte // the record as read, without a stale "error" member
	req             backend.Request
	promptTokens    int  // the record's, else len(input_ids), else an estimate
	hasPromptTokens bool // the record states its prompt size; the server's is not added
	exactPrompt     bool // promptTokens is the record's or its ids' count, not an estimate
	collides        bool // the record already has response members: replace, do not append
	reserve         reservation
	pledge          pledge               // a conversation's later turns (--turns all)
	server          *server              // the server of the current attempt
	kvTokens        int                  // what this request is expected to hold on its server
	params          []byte               // gen.params of a request with its own sampling parameters (openai-batch), else nil
	conv            *conversation.Source // the conversation to regenerate (--turns all), else nil
	// newThinking: the thinking setting (req.Thinking) was chosen by this
	// run's --thinking, not read from the record, and is written on it.
	newThinking bool
	sample      int // which of the prompt's samples this is (--samples), 0 for none
}

// responseKeys are the members generate adds; a record that already has one
// (an output re-fed by mistake, a previous run's fields) gets them replaced.
var responseKeys = map[string]bool{
	record.FieldOutputIDs: true, record.FieldText: true, record.FieldReasoning: true, record.FieldReasoningDetails: true,
	record.FieldToolCalls: true, record.FieldFinishReason: true, record.FieldNativeFinishReason: true,
	record.FieldCompletionTokens: true, record.FieldUsage: true, record.FieldGen: true,
}

// maxCount is the largest token count a record may state: 2^53, as in every
// tool, since sums beyond it are no longer exact.
const maxCount = 1 << 53

// missingInput explains a record without what the backend sends.
func missingInput(kind *backend.Kind) error {
	if kind.Input == backend.TokenIDs {
		return fmt.Errorf(`no %q: --%s %s sends token ids (run tokenize-prompts first, or use %s with messages)`,
			record.FieldInputIDs, FlagBackend, kind.Name, flaggroup.OrList(flaggroup.BackendsTaking(backend.Messages)))
	}
	return fmt.Errorf(`no "messages": --%s %s sends the conversation (an array of {role, content})`, FlagBackend, kind.Name)
}

// errEmptyPrompt explains a record whose token ids are an empty array.
var errEmptyPrompt = errors.New(`"input_ids" is empty: there is no prompt to answer`)

// parser turns input lines into jobs.
type parser struct {
	kind     *backend.Kind
	turns    bool // --turns all: each record is a conversation
	thinking thinking.Mode
	nSamples int // --samples
	id       record.IDPath
	params   backend.Params
	batch    *batchInput // --input-format openai-batch, else nil
}

func newParser(cfg *Config) *parser {
	return &parser{kind: cfg.Kind, id: record.NewIDPath(cfg.IDPath), params: cfg.Params, turns: cfg.TurnsAll, thinking: cfg.Thinking, nSamples: cfg.Samples}
}

// parseAll parses line into its jobs: one, or one per sample (--samples).
func (p *parser) parseAll(line []byte) ([]*job, error) {
	if p.batch != nil {
		j, err := p.batch.parse(line)
		if err != nil {
			return nil, err
		}
		return []*job{j}, nil
	}
	j, s, err := p.parse(line)
	if err != nil {
		return nil, err
	}
	return p.samples(j, s)
}

// members are the fields of a request record that parse reads.
type members struct {
	idRaw, inputIDs, messages, tools, promptTok []byte
	sampleRaw, promptIDRaw                      []byte
	thinking                                    []byte // the record's own setting, as an object's members
	hasError, collides                          bool
}

// parse validates line as one JSON object and builds its job; line is
// copied, since the reader reuses its buffer, and the request's messages
// point into the copy. It also returns the sample the record is, if any.
func (p *parser) parse(line []byte) (*job, sampleOf, error) {
	line = bytes.Clone(line)
	m, err := p.scan(line)
	if err != nil {
		return nil, sampleOf{}, err
	}
	j := &job{collides: m.collides}
	if err := p.setID(j, m.idRaw); err != nil {
		return nil, sampleOf{}, err
	}
	if j.promptTokens, j.hasPromptTokens, err = promptTokensField(m.promptTok); err != nil {
		return nil, sampleOf{}, err
	}
	if err := p.setPrompt(j, &m); err != nil {
		return nil, sampleOf{}, err
	}
	if p.turns {
		if j.conv, err = parseConversation(m.messages, m.tools); err != nil {
			return nil, sampleOf{}, err
		}
	}
	sample, err := readSample(m.sampleRaw, m.promptIDRaw)
	if err != nil {
		return nil, sampleOf{}, err
	}
	// A sample's thinking setting is its prompt's, chosen by the prompt's id.
	choiceID := j.req.ID
	if sample.k > 0 {
		choiceID = sample.promptID
	}
	if err := p.setThinking(j, choiceID, m.thinking); err != nil {
		return nil, sampleOf{}, err
	}
	j.req.Params = p.params
	j.line = line
	if m.hasError {
		j.line = dropStaleError(j.line)
	}
	return j, sample, nil
}

// scan reads the members of line that parse needs, its id among them.
func (p *parser) scan(line []byte) (m members, err error) {
	id := p.id.Match()
	err = jsonl.ScanObject(line, func(mb jsonl.Member) {
		switch string(mb.Key) {
		case record.FieldInputIDs:
			m.inputIDs = mb.Value
		case record.FieldMessages:
			m.messages = mb.Value
		case record.FieldTools:
			m.tools = mb.Value
		case record.FieldPromptTokens:
			m.promptTok = mb.Value
		case record.FieldError:
			m.hasError = true
		case record.FieldSample:
			m.sampleRaw = mb.Value
		case record.FieldPromptID:
			m.promptIDRaw = mb.Value
		case record.FieldThinking, record.FieldReasoningEffort:
			m.thinking = fmt.Appendf(m.thinking, `,%q:%s`, mb.Key, mb.Value)
		default:
			if responseKeys[string(mb.Key)] {
				m.collides = true
			}
		}
		id.Visit(mb)
	})
	if err != nil {
		return m, err
	}
	if p.id.TopKey() != nil {
		m.idRaw, err = id.Result()
	} else {
		m.idRaw, err = p.id.Find(line)
	}
	return m, err
}

// setID sets j's request id from the record's (idRaw).
func (p *parser) setID(j *job, idRaw []byte) error {
	if len(idRaw) == 0 || idRaw[0] != '"' {
		return fmt.Errorf("no string %q: every record needs an id (tokenize-prompts adds one; or pick a field with --id-path)", p.id)
	}
	// The request id is text (SGLang's rid): lone surrogates as escapes,
	// so that two ids that differ only in them stay two requests.
	j.req.ID = record.IDText(record.DecodeID(idRaw))
	if j.req.ID == "" {
		return fmt.Errorf("%q is an empty string: ids must not be empty", p.id)
	}
	return nil
}

// promptTokensField reads a record's prompt_tokens (raw); ok false when it
// has none.
func promptTokensField(raw []byte) (n int, ok bool, err error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, false, nil
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil && errors.Is(err, strconv.ErrRange) || err == nil && v > maxCount {
		return 0, false, fmt.Errorf("%q is %s, more than 2^53: no record holds that many tokens", record.FieldPromptTokens, raw)
	}
	if err != nil || v < 0 {
		return 0, false, fmt.Errorf("%q is %s, not a non-negative integer", record.FieldPromptTokens, raw)
	}
	return int(v), true, nil
}

// setPrompt sets j's prompt, the input ids or the messages its backend
// takes, and its size.
func (p *parser) setPrompt(j *job, m *members) error {
	switch p.kind.Input {
	case backend.TokenIDs:
		if len(m.inputIDs) == 0 || bytes.Equal(m.inputIDs, []byte("null")) {
			return missingInput(p.kind)
		}
		ids, ok := parseIDs(m.inputIDs)
		if !ok {
			return record.TokenIDsError(record.FieldInputIDs, m.inputIDs)
		}
		if len(ids) == 0 {
			return errEmptyPrompt
		}
		j.req.InputIDs = ids
		if !j.hasPromptTokens {
			j.promptTokens = len(ids)
		}
		j.exactPrompt = true
	default:
		if len(m.messages) == 0 || m.messages[0] != '[' {
			return missingInput(p.kind)
		}
		j.req.Messages = m.messages
		if len(m.tools) > 0 && m.tools[0] == '[' {
			j.req.Tools = m.tools
		}
		j.exactPrompt = j.hasPromptTokens
		if !j.hasPromptTokens {
			switch n, ok := jsonl.IntArrayLen(m.inputIDs); {
			case ok && len(m.inputIDs) > 0:
				j.promptTokens, j.exactPrompt = n, true
			default:
				// About conversation.BytesPerToken bytes of JSON a token:
				// rather high than low, since this only sizes reservations.
				j.promptTokens = (len(m.messages) + len(m.tools)) / conversation.BytesPerToken
			}
		}
	}
	return nil
}

// setThinking gives j the thinking setting it is generated with: the
// record's own (tokenize-prompts --thinking rendered its prompt so), else
// the one --thinking chooses for its id. A record whose setting differs
// from --thinking's choice is refused rather than generated either way,
// and so is a prompt already rendered into token ids without a setting,
// which no request field can change.
func (p *parser) setThinking(j *job, id string, members []byte) error {
	var c thinking.Choice
	var ok bool
	var err error
	if members != nil {
		members[0] = '{'
		c, ok, err = thinking.FromRecord(append(members, '}'))
	}
	if err != nil {
		return err
	}
	if ok {
		if p.thinking.IsSet() {
			if want := p.thinking.Choose(id); want != c {
				return fmt.Errorf("the record was rendered with %s but --%s %s chooses %s for its id: give generate the --%s and --%s tokenize-prompts had, or leave --%s out to follow the record",
					c, thinking.FlagThinking, p.thinking, want, thinking.FlagThinking, thinking.FlagSeed, thinking.FlagThinking)
			}
		}
		j.req.Thinking = &c
		return nil
	}
	if !p.thinking.IsSet() {
		return nil
	}
	if p.kind.Input == backend.TokenIDs && !p.turns {
		return fmt.Errorf(`no %q on the record: its input_ids were rendered without --%s, and --%s %s sends them as they are (run tokenize-prompts --%s %s)`,
			record.FieldThinking, thinking.FlagThinking, FlagBackend, p.kind.Name, thinking.FlagThinking, p.thinking)
	}
	c = p.thinking.Choose(id)
	j.req.Thinking, j.newThinking = &c, true
	return nil
}

// parseIDs reads a JSON array of non-negative integers.
func parseIDs(raw []byte) ([]int, bool) { return jsonl.AppendInts(nil, raw) }
