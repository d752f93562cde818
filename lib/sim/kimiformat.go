package sim

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/tokenizer"
)

// The values of Config.AnswerFormat.
const (
	// AnswerWords: output ids drawn from the prompt's hash, shown as
	// words (the default; see ExpectedOutputIDs).
	AnswerWords = ""
	// AnswerKimiK25: answers written as Kimi-K2.5 writes them, in the
	// bundled Kimi-K2.5 tokenizer's ids; see kimiFormat.
	AnswerKimiK25 = "kimi-k2.5"
)

// kimiFormat writes a /generate answer to an input_ids prompt as Kimi-K2.5
// writes it, so that a client reads it back as it reads the model's:
//
//	[REASONING</think>]CONTENT<|im_end|>
//	[REASONING</think>]<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:I
//	    <|tool_call_argument_begin|>{"query": "..."}<|tool_call_end|>...<|tool_calls_section_end|><|im_end|>
//
// Reasoning comes first when the prompt ends with <think> (thinking on);
// Config.ReasoningShare of the answer's length is reasoning. The answer
// calls tools when the prompt declares tools and its last turn is the
// user's naming some of them: it calls each named tool once, in the order
// the user first names them. After a tool result, or with no tool named, it
// answers in words. Everything is a function of the prompt's ids and the
// drawn length, so answers are deterministic.
type kimiFormat struct {
	tok *tokenizer.Tokenizer
	// words are the ids of " the", " of", ... (the words of the default
	// format), the answers' plain tokens.
	words                                                          []int
	thinkStart, thinkEnd, imEnd                                    int
	sectionBegin, sectionEnd, callBegin, argBegin, callEnd, imUser int
	imSystem, imAssistant                                          int
	special                                                        map[int]bool
}

var (
	kimiOnce   sync.Once
	kimiShared *kimiFormat
	kimiErr    error
)

// loadKimiFormat loads the bundled Kimi-K2.5 tokenizer once per process.
func loadKimiFormat() (*kimiFormat, error) {
	kimiOnce.Do(func() {
		tok, err := chat.LoadTokenizer(chat.BuiltinPrefix + "kimi-k2.5")
		if err != nil {
			kimiErr = fmt.Errorf("sim: answer format %s: %w", AnswerKimiK25, err)
			return
		}
		k := &kimiFormat{tok: tok, special: map[int]bool{}}
		for _, a := range tok.AddedTokens() {
			k.special[a.ID] = true
		}
		ids := map[string]*int{"<think>": &k.thinkStart, "</think>": &k.thinkEnd, "<|im_end|>": &k.imEnd,
			"<|tool_calls_section_begin|>": &k.sectionBegin, "<|tool_calls_section_end|>": &k.sectionEnd,
			"<|tool_call_begin|>": &k.callBegin, "<|tool_call_argument_begin|>": &k.argBegin,
			"<|tool_call_end|>": &k.callEnd, "<|im_user|>": &k.imUser, "<|im_system|>": &k.imSystem,
			"<|im_assistant|>": &k.imAssistant}
		for s, p := range ids {
			id, ok := tok.TokenID(s)
			if !ok {
				kimiErr = fmt.Errorf("sim: answer format %s: the bundled tokenizer has no %s", AnswerKimiK25, s)
				return
			}
			*p = id
		}
		for _, w := range words {
			k.words = append(k.words, tok.Encode(" "+w, false)[0])
		}
		kimiShared = k
	})
	return kimiShared, kimiErr
}

// word is plain token i of the answer to prompt key.
func (k *kimiFormat) word(key uint64, i int) int {
	return k.words[splitmix64(key+uint64(i+1)*golden)%uint64(len(k.words))]
}

// answer is the whole answer to prompt: natural plain tokens in all
// (reasoning and content, or reasoning and the calls' arguments), then
// <|im_end|>.
func (k *kimiFormat) answer(prompt []int, key uint64, natural int, reasoningShare float64) []int {
	var out []int
	pos := 0
	if len(prompt) > 0 && prompt[len(prompt)-1] == k.thinkStart {
		r := int(math.Round(reasoningShare * float64(natural)))
		for ; pos < r; pos++ {
			out = append(out, k.word(key, pos))
		}
		out = append(out, k.thinkEnd)
	}
	if calls := k.calledTools(prompt); len(calls) > 0 {
		out = append(out, k.sectionBegin)
		for i, name := range calls {
			out = append(out, k.callBegin)
			out = k.tok.AppendEncode(out, fmt.Sprintf("functions.%s:%d", name, i), false)
			out = append(out, k.argBegin)
			query := wordOf(k.word(key, pos)) + " " + wordOf(k.word(key, pos+1))
			pos += 2
			out = k.tok.AppendEncode(out, fmt.Sprintf(`{"query": %q}`, query), false)
			out = append(out, k.callEnd)
		}
		out = append(out, k.sectionEnd)
	} else {
		for ; pos < max(natural, 1); pos++ {
			out = append(out, k.word(key, pos))
		}
	}
	return append(out, k.imEnd)
}

// tsType finds the tools a Kimi-K2.5 prompt declares, in TypeScript
// ("type NAME = (") or, for templates without it, as JSON ("name": "NAME").
var (
	tsType   = regexp.MustCompile(`(?m)^type ([\w.\-]+) = `)
	jsonName = regexp.MustCompile(`"name":\s*"([\w.\-]+)"`)
)

// calledTools are the tools the answer calls: those the prompt declares
// that its last turn, when it is the user's, names.
func (k *kimiFormat) calledTools(prompt []int) []string {
	declared := k.section(prompt, k.imSystem, "tool_declare")
	if declared == "" {
		return nil
	}
	names := tsType.FindAllStringSubmatch(declared, -1)
	if len(names) == 0 {
		names = jsonName.FindAllStringSubmatch(declared, -1)
	}
	var tools []string
	for _, m := range names {
		tools = append(tools, m[1])
	}
	return namedIn(tools, k.lastTurn(prompt))
}

// namedIn are the tools text names, each once, in the order text first
// names them.
func namedIn(tools []string, text string) []string {
	type mention struct {
		name string
		at   int
	}
	var found []mention
	for _, name := range tools {
		if at := strings.Index(text, name); at >= 0 && !slices.ContainsFunc(found, func(m mention) bool { return m.name == name }) {
			found = append(found, mention{name, at})
		}
	}
	slices.SortStableFunc(found, func(a, b mention) int { return a.at - b.at })
	out := make([]string, len(found))
	for i, m := range found {
		out[i] = m.name
	}
	return out
}

// section decodes the first block that opens with the start id and the
// role name, up to its <|im_end|>; "" when there is none.
func (k *kimiFormat) section(prompt []int, start int, role string) string {
	for i, id := range prompt {
		if id != start {
			continue
		}
		end := i + 1
		for end < len(prompt) && prompt[end] != k.imEnd {
			end++
		}
		text, _ := k.tok.Decode(prompt[i+1 : end])
		if strings.HasPrefix(text, role) {
			return text
		}
	}
	return ""
}

// lastTurn decodes the prompt's last turn before the assistant's (the
// generation prompt) when it is the user's; "" otherwise (a tool result, a
// system turn).
func (k *kimiFormat) lastTurn(prompt []int) string {
	gen := len(prompt) - 1
	for gen >= 0 && prompt[gen] != k.imAssistant {
		gen--
	}
	for i := gen - 1; i >= 0; i-- {
		switch prompt[i] {
		case k.imUser:
			end := i + 1
			for end < gen && prompt[end] != k.imEnd {
				end++
			}
			text, _ := k.tok.Decode(prompt[i+1 : end])
			return text
		case k.imSystem, k.imAssistant:
			return ""
		}
	}
	return ""
}

// text shows ids as SGLang does with skip_special_tokens: the special
// tokens left out.
func (k *kimiFormat) text(ids []int) string {
	plain := make([]int, 0, len(ids))
	for _, id := range ids {
		if id < k.tok.VocabSize() && !k.isSpecial(id) {
			plain = append(plain, id)
		}
	}
	s, _ := k.tok.Decode(plain)
	return s
}

func (k *kimiFormat) isSpecial(id int) bool { return k.special[id] }
