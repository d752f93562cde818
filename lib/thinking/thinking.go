// Package thinking decides, per record, whether a model answers with its
// thinking on or off (or at which reasoning effort), and records the choice
// on the record. The choice is a seeded hash of the record's id, so that
// tokenize-prompts, generate and to-train, and every rerun of them, make the
// same one: a prompt rendered with thinking off is generated and trained
// with thinking off.
package thinking

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/record"
)

// Flag names shared by the tools that render or send prompts.
const (
	FlagThinking = "thinking"
	FlagSeed     = "thinking-seed"
)

// Template variables set for a choice. Templates read one name or the
// other (Kimi-K2.5 and DeepSeek thinking, Qwen3 enable_thinking, gpt-oss
// reasoning_effort); one they do not read is ignored.
const (
	varThinking       = "thinking"
	varEnableThinking = "enable_thinking"
	varEffort         = "reasoning_effort"
)

// Flags are --thinking and --thinking-seed, the same in every tool.
func Flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: FlagThinking, EnvVars: []string{"SYNTHPIPE_THINKING"},
			Usage: "thinking per record (`MODE`): on, off, mix:P (a share P of the records, 0.3 or 30%, with thinking, chosen by a seeded hash of the id), or effort:LEVEL=W,... (reasoning_effort levels by weight, e.g. effort:low=1,medium=2,high=1)"},
		&cli.StringFlag{Name: FlagSeed, Value: "0", EnvVars: []string{"SYNTHPIPE_THINKING_SEED"},
			Usage: "`SEED` of --thinking's per-record choice: the same seed makes the same choice in every tool and run"},
	}
}

// Mode is a parsed --thinking value. The zero Mode is unset: records are
// left as they are.
type Mode struct {
	spec   string
	share  float64 // the share with thinking on: 1 for on, 0 for off
	levels []level // effort levels, when given
	seed   string
}

type level struct {
	name   string
	weight float64
}

// Choice is the setting of one record.
type Choice struct {
	Thinking bool
	Effort   string // "" unless by effort levels
}

// FromFlags reads --thinking and --thinking-seed.
func FromFlags(c *cli.Context) (Mode, error) {
	m, err := Parse(c.String(FlagThinking), c.String(FlagSeed))
	if err != nil {
		return m, exitcode.Usagef("--%s %v", FlagThinking, err)
	}
	return m, nil
}

// Parse reads a --thinking value; "" is the unset Mode.
func Parse(spec, seed string) (Mode, error) {
	m := Mode{spec: spec, seed: seed}
	kind, arg, _ := strings.Cut(spec, ":")
	switch kind {
	case "":
		return m, nil
	case "on":
		m.share = 1
	case "off":
		m.share = 0
	case "mix":
		p, err := parseShare(arg)
		if err != nil {
			return m, fmt.Errorf("%q: %v", spec, err)
		}
		m.share = p
	case "effort":
		levels, err := parseLevels(arg)
		if err != nil {
			return m, fmt.Errorf("%q: %v", spec, err)
		}
		m.share, m.levels = 1, levels
	default:
		return m, fmt.Errorf("%q: want on, off, mix:P or effort:LEVEL=W[,LEVEL=W]", spec)
	}
	if (kind == "on" || kind == "off") && arg != "" {
		return m, fmt.Errorf("%q: %s takes no value", spec, kind)
	}
	return m, nil
}

// parseShare reads P of mix:P: 0.3 or 30%.
func parseShare(s string) (float64, error) {
	scale := 1.0
	if t, ok := strings.CutSuffix(s, "%"); ok {
		s, scale = t, 100
	}
	p, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(p) || p < 0 || p/scale > 1 {
		return 0, fmt.Errorf("the share %q must be a number from 0 to 1 (0.3) or a percentage (30%%)", s)
	}
	return p / scale, nil
}

// parseLevels reads effort:low=1,medium=2; a level without =W weighs 1.
func parseLevels(s string) ([]level, error) {
	var levels []level
	for _, part := range strings.Split(s, ",") {
		name, w, hasWeight := strings.Cut(part, "=")
		weight := 1.0
		if hasWeight {
			var err error
			if weight, err = strconv.ParseFloat(w, 64); err != nil || weight < 0 || math.IsInf(weight, 0) || math.IsNaN(weight) {
				return nil, fmt.Errorf("level %q: the weight must be a number, 0 or more", part)
			}
		}
		if name == "" {
			return nil, fmt.Errorf("empty level name (want e.g. effort:low=1,high=3)")
		}
		levels = append(levels, level{name, weight})
	}
	var total float64
	for _, l := range levels {
		total += l.weight
	}
	if total <= 0 {
		return nil, fmt.Errorf("the weights add up to 0")
	}
	return levels, nil
}

// IsSet reports whether --thinking was given.
func (m Mode) IsSet() bool { return m.spec != "" }

// String is the --thinking value as given.
func (m Mode) String() string { return m.spec }

// Share is the share of records asked to think (1 for on and effort levels).
func (m Mode) Share() float64 { return m.share }

// Choose is the setting of the record with this id.
func (m Mode) Choose(id string) Choice {
	u := m.draw(id)
	if len(m.levels) > 0 {
		return Choice{Thinking: true, Effort: m.pickLevel(u)}
	}
	return Choice{Thinking: u < m.share}
}

// draw maps the seed and id to a number in [0, 1), uniformly: the first 8
// bytes of SHA-256("synthpipe-thinking" NUL seed NUL id), as a fraction of
// 2^64. The same seed and id give the same number on every machine.
func (m Mode) draw(id string) float64 {
	h := sha256.New()
	h.Write([]byte("synthpipe-thinking\x00"))
	h.Write([]byte(m.seed))
	h.Write([]byte{0})
	h.Write([]byte(id))
	var sum [sha256.Size]byte
	v := binary.BigEndian.Uint64(h.Sum(sum[:0])[:8])
	return float64(v>>11) / (1 << 53) // 53 bits: exact in a float64, below 1
}

// pickLevel takes the level whose slice of the cumulative weights holds u.
func (m Mode) pickLevel(u float64) string {
	var total float64
	for _, l := range m.levels {
		total += l.weight
	}
	at := u * total
	for _, l := range m.levels {
		if at < l.weight {
			return l.name
		}
		at -= l.weight
	}
	return m.levels[len(m.levels)-1].name
}

// String is the choice as the record writes it: "thinking true",
// "thinking false" or "reasoning_effort high".
func (c Choice) String() string {
	if c.Effort != "" {
		return record.FieldReasoningEffort + " " + c.Effort
	}
	return record.FieldThinking + " " + strconv.FormatBool(c.Thinking)
}

// TemplateArgs are the template variables of the choice.
func (c Choice) TemplateArgs() map[string]json.RawMessage {
	if c.Effort != "" {
		q, _ := json.Marshal(c.Effort)
		return map[string]json.RawMessage{varEffort: q}
	}
	b := json.RawMessage(strconv.FormatBool(c.Thinking))
	return map[string]json.RawMessage{varThinking: b, varEnableThinking: b}
}

// WithTemplateArgs returns extra with the choice's variables added (a new
// map: extra is shared between workers).
func (c Choice) WithTemplateArgs(extra map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(extra)+2)
	for k, v := range extra {
		out[k] = v
	}
	for k, v := range c.TemplateArgs() {
		out[k] = v
	}
	return out
}

// AppendFields appends the record members of the choice,
// `,"thinking":true` and `,"reasoning_effort":"high"` when by level.
func (c Choice) AppendFields(b []byte) []byte {
	b = append(b, `,"`+record.FieldThinking+`":`...)
	b = strconv.AppendBool(b, c.Thinking)
	if c.Effort != "" {
		b = append(b, `,"`+record.FieldReasoningEffort+`":`...)
		q, _ := json.Marshal(c.Effort)
		b = append(b, q...)
	}
	return b
}

// ConflictingTemplateArg names a --template-arg that --thinking sets too,
// or returns "" when there is none: the two would disagree.
func ConflictingTemplateArg(extra map[string]json.RawMessage) string {
	for _, k := range []string{varThinking, varEnableThinking, varEffort} {
		if _, ok := extra[k]; ok {
			return k
		}
	}
	return ""
}

// switchRef finds a template's own use of a thinking variable: the name
// not after a dot or a quote (message.thinking and message['thinking'] are
// a turn's reasoning, not the switch).
var switchRef = regexp.MustCompile(`(?:^|[^.\w'"])(` + varEnableThinking + `|` + varThinking + `|` + varEffort + `)\b`)

// SwitchIn names the thinking variable a chat template's source reads, or
// "" when it reads none: such a template renders a conversation
// differently with thinking on and off, so a record must say which.
func SwitchIn(templateSource string) string {
	if m := switchRef.FindStringSubmatch(templateSource); m != nil {
		return m[1]
	}
	return ""
}

// ArgValues describes the values of a thinking variable, for messages:
// "LEVEL" for reasoning_effort, "true or false" for the others.
func ArgValues(name string) string {
	if name == varEffort {
		return "LEVEL"
	}
	return "true or false"
}

// FromRecord reads the choice a record carries. ok is false when it has no
// "thinking" member; a member that is not true or false is an error.
func FromRecord(line []byte) (c Choice, ok bool, err error) {
	r := gjson.GetManyBytes(line, record.FieldThinking, record.FieldReasoningEffort)
	switch r[0].Type {
	case gjson.Null:
		if r[0].Exists() {
			return c, false, fmt.Errorf("%q is null: want true or false", record.FieldThinking)
		}
		if r[1].Type == gjson.String && r[1].Str != "" {
			return Choice{Thinking: true, Effort: r[1].Str}, true, nil
		}
		return c, false, nil
	case gjson.True, gjson.False:
		c.Thinking = r[0].Bool()
	default:
		return c, false, fmt.Errorf("%q is %s: want true or false", record.FieldThinking, r[0].Raw)
	}
	if r[1].Exists() && r[1].Type != gjson.Null {
		if r[1].Type != gjson.String {
			return c, false, fmt.Errorf("%q is %s: want a level such as \"high\"", record.FieldReasoningEffort, r[1].Raw)
		}
		c.Effort = r[1].Str
	}
	return c, true, nil
}
