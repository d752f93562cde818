package estimate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/conversation"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// allGroup names the one group of an estimate without --by.
const allGroup = "all"

// group is one dataset: the records still to do, in input order, and what
// its done file says.
type group struct {
	name  string
	todo  []todo
	done  doneStats
	convs int64 // of todo, conversations
}

// todo is one record still to do: its prompt and, for a conversation
// (tokenize-prompts --turns all), the assistant turns it asks for and the
// tokens the source's user and tool turns add to each later prompt.
type todo struct {
	prompt int
	turns  int // 0: a record of one answer
	growth int
}

// doneStats is what a done file tells of one dataset.
type doneStats struct {
	records   int64
	spent     int64 // tokens held, as budget-cut --already counts them
	answers   []int // completion tokens of each answer
	truncated int64 // answers that stopped at their limit
	// Timings of the answers, by the backend that made them.
	sglang, openai timings
}

// timings are answer lengths beside their latencies.
type timings struct {
	maxTokens  int // the largest max_tokens asked (gen.params), 0: unknown
	prompts    []float64
	lengths    []float64
	latencies  []float64 // seconds
	firstToken []float64 // seconds to the first token, when streamed
}

// decodeRate is the tokens per second one request got, and the fixed part
// of its latency (queueing, prefill, the round trip): the least-squares line
// of latency over answer length. A fit needs 8 answers with lengths that
// differ; with fewer the plain ratio serves.
func (t timings) decodeRate() (rate, overhead float64, ok bool) {
	n := float64(len(t.lengths))
	if n == 0 {
		return 0, 0, false
	}
	var sx, sy, sxx, sxy float64
	for i, x := range t.lengths {
		y := t.latencies[i]
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	if den := n*sxx - sx*sx; n >= 8 && den > 0 {
		slope := (n*sxy - sx*sy) / den
		if slope > 0 {
			return 1 / slope, max((sy-slope*sx)/n, 0), true
		}
	}
	if sy <= 0 {
		return 0, 0, false
	}
	return sx / sy, 0, true
}

// timedRun is the answers as jobs of the batch model, in file order.
func (t timings) timedRun() timedRun {
	out := make([]timedJob, len(t.lengths))
	for i := range out {
		out[i] = timedJob{job{int(t.prompts[i]), int(t.lengths[i])}, t.latencies[i]}
	}
	return timedRun{jobs: out, maxTokens: t.maxTokens}
}

// reader reads records, grouping them by the value at --by (a record of a
// done file without a dataset field is in its folder's dataset: see
// record.Grouper).
type reader struct {
	by    string
	input jsonl.Options
	scan  *record.Scanner
	// todo and done group the records to do and the done files' apart,
	// so that each warns of its own.
	todo, done *record.Grouper
}

func newReader(by string, input jsonl.Options) *reader {
	return &reader{by: by, input: input, scan: record.NewScanner("", false, ""),
		todo: record.NewGrouper(by), done: record.NewGrouper(by)}
}

func (rd *reader) groupOf(g *record.Grouper, in *jsonl.Reader) string {
	if rd.by == "" {
		return allGroup
	}
	return g.Of(in.Bytes(), in.Name(), in.Pos())
}

// warnings are what the groupers have to say once the input is read.
func (rd *reader) warnings() []string {
	if rd.by == "" {
		return nil
	}
	var out []string
	for _, w := range rd.done.Warnings() {
		out = append(out, "done files: "+w)
	}
	return append(out, rd.todo.Warnings()...)
}

// errNoPrompt is a record to do that says nothing of its prompt's size.
var errNoPrompt = errors.New("record has no prompt_tokens or input_ids: estimate reads tokenized records (run tokenize-prompts first)")

// readPrompts reads the records still to do. Groups come in order of name
// with --by, as tokstat prints them.
func (rd *reader) readPrompts(stdin io.Reader, names []string) ([]*group, error) {
	in, err := jsonl.Open(stdin, names, record.ScanAhead(rd.input, rd.scan))
	if err != nil {
		return nil, err
	}
	defer in.Close()
	byName := map[string]*group{}
	var groups []*group
	for in.Next() {
		info, err := record.Scanned(in)
		if err == nil && info.PromptTokens <= 0 {
			err = errNoPrompt
		}
		if err != nil {
			if err := in.Invalid(err); err != nil {
				return nil, err
			}
			continue
		}
		t, err := readTodo(in.Bytes(), info)
		if err != nil {
			if err := in.Invalid(err); err != nil {
				return nil, err
			}
			continue
		}
		name := rd.groupOf(rd.todo, in)
		g := byName[name]
		if g == nil {
			g = &group{name: name}
			byName[name] = g
			groups = append(groups, g)
		}
		g.todo = append(g.todo, t)
		if t.turns > 0 {
			g.convs++
		}
	}
	if err := in.Err(); err != nil {
		return nil, err
	}
	if rd.by != "" {
		slices.SortFunc(groups, func(a, b *group) int { return strings.Compare(a.name, b.name) })
	}
	return groups, nil
}

// readTodo reads a record to do. A conversation (one with
// conversation_turns, as tokenize-prompts --turns all writes it) is checked
// as generate --turns all checks it, and its later prompts expected to grow
// as generate's budget expects them to (conversation.Source.Growth).
func readTodo(line []byte, info record.Info) (todo, error) {
	t := todo{prompt: int(info.PromptTokens)}
	r := gjson.GetManyBytes(line, record.FieldConversationTurns, record.FieldMessages, record.FieldTools)
	if !r[0].Exists() {
		return t, nil
	}
	if !r[1].IsArray() {
		return t, fmt.Errorf(`a conversation record (%q) without its "messages": estimate reads tokenize-prompts --turns all's records`, record.FieldConversationTurns)
	}
	var tools json.RawMessage
	if r[2].IsArray() {
		tools = json.RawMessage(r[2].Raw)
	}
	src, err := conversation.Parse(json.RawMessage(r[1].Raw), tools)
	if err != nil {
		return t, err
	}
	t.turns, t.growth = src.Turns(), int(math.Round(src.Growth()))
	return t, nil
}

// readDone reads done files: per group, the tokens they hold, the answer
// lengths and how long the answers took. A torn last line is not counted
// (it will be redone); records that carry an error count nothing.
func (rd *reader) readDone(stdin io.Reader, names []string) (map[string]*doneStats, error) {
	out := map[string]*doneStats{}
	if len(names) == 0 {
		return out, nil
	}
	in, err := jsonl.Open(stdin, names, record.ScanAhead(rd.input, rd.scan))
	if err != nil {
		return nil, err
	}
	defer in.Close()
	for in.Next() {
		info, err := record.Scanned(in)
		if err != nil {
			if err := in.Invalid(err); err != nil {
				return nil, err
			}
			continue
		}
		if info.HasError {
			continue
		}
		line := in.Bytes()
		name := rd.groupOf(rd.done, in)
		d := out[name]
		if d == nil {
			d = &doneStats{}
			out[name] = d
		}
		d.records++
		d.spent += info.Tokens(record.CountTotal)
		d.add(line, info)
	}
	return out, in.Err()
}

// add counts a done record's answers: its one answer, or each turn of a
// conversation (generate --turns all), which is what --max-tokens bounds
// and what the answers to come are drawn from.
func (d *doneStats) add(line []byte, info record.Info) {
	gen := gjson.GetBytes(line, record.FieldGen)
	t := &d.sglang
	if gen.Get("backend").String() == "openai" {
		t = &d.openai
	}
	t.maxTokens = max(t.maxTokens, int(gen.Get("params.max_tokens").Int()))
	if info.Conversation == nil {
		d.answer(t, info.PromptTokens, info.CompletionTokens, info.Truncated(), gen.Get("latency_ms"), gen.Get("first_token_ms"))
		return
	}
	turns := gjson.GetBytes(line, record.FieldTurns).Array()
	for i, c := range info.Conversation.Turns {
		var latency, first gjson.Result
		if i < len(turns) {
			latency, first = turns[i].Get("latency_ms"), turns[i].Get("first_token_ms")
		}
		d.answer(t, c.Prompt, c.Completion, c.FinishReason == "length", latency, first)
	}
}

// answer counts one answer, and its timing when it has one.
func (d *doneStats) answer(t *timings, prompt, completion int64, truncated bool, latency, firstToken gjson.Result) {
	d.answers = append(d.answers, int(completion))
	if truncated {
		d.truncated++
	}
	if !latency.Exists() || completion <= 0 {
		return
	}
	t.prompts = append(t.prompts, float64(prompt))
	t.lengths = append(t.lengths, float64(completion))
	t.latencies = append(t.latencies, latency.Float()/1000)
	if firstToken.Exists() {
		t.firstToken = append(t.firstToken, firstToken.Float()/1000)
	}
}

// dataErrorf is invalid input data: exit 65.
func dataErrorf(format string, args ...any) error { return exitcode.DataErrorf(format, args...) }
