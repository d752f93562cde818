package conversation

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/answerformat"
	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/chattemplate"
	"github.com/synthpipe/synthpipe/lib/cputime"
	"github.com/synthpipe/synthpipe/lib/tokenizer"
)

// benchTurns is the number of assistant turns of the conversation the
// benchmarks below regenerate.
const benchTurns = 20

// benchConversation is a chat of benchTurns turns: a system prompt, a first
// user turn holding a document of ~800 words, then short questions; and the
// answers a thinking model gives, reasoning (which Kimi-K2.5's template
// drops from earlier turns) and ~100 words of content each.
func benchConversation(b *testing.B) (*Source, []answerformat.Answer) {
	words := strings.Fields("model token data batch prompt answer cache queue alpha beta gamma delta sigma omega lambda kappa")
	text := func(seed, n int) string {
		var s strings.Builder
		for k := range n {
			s.WriteString(words[(seed*31+k*k*7+k)%len(words)])
			s.WriteByte(" .,\n"[k%7%4])
		}
		return s.String()
	}
	msgs := []string{`{"role":"system","content":"You answer questions about documents."}`}
	var answers []answerformat.Answer
	for k := range benchTurns {
		user := fmt.Sprintf("And what of point %d in the document?", k)
		if k == 0 {
			user = "Read this document: " + text(k, 800)
		}
		q, _ := json.Marshal(user)
		msgs = append(msgs, `{"role":"user","content":`+string(q)+`}`, `{"role":"assistant","content":"source answer"}`)
		answers = append(answers, answerformat.Answer{Reasoning: text(k+1, 60), Content: text(k+2, 100), Closed: true})
	}
	src, err := Parse(json.RawMessage("["+strings.Join(msgs, ",")+"]"), nil)
	if err != nil {
		b.Fatal(err)
	}
	return src, answers
}

// BenchmarkTurnPrompts regenerates a conversation of benchTurns turns with
// Kimi-K2.5's template and tokenizer, as generate --turns all does on a
// token-id backend: each turn, the conversation so far is rendered and
// encoded. One op is the whole conversation. incremental is what generate
// does (chat.TurnPrompts): each prompt rendered through the conversation's
// MessageCache (its loops replay what they wrote for the messages the last
// prompt held) and encoded from where it parts from the last one;
// incremental-render only renders, as incremental does (its share of
// incremental); incremental-encode only encodes, each prompt from the last
// one's ids (the prompts rendered before timing; it finds where a prompt
// parts from the last by comparing them, which incremental is told), and
// first-encode encodes the first prompt alone: what encoding costs apart
// from the template, and how much of it the first prompt's document takes;
// whole renders every prompt from scratch and encodes it from its start;
// render only renders, from scratch; walk builds no prompt, only walks the
// conversation (adding each answer to it), which every way above does too.
// cpu-ns/op is the CPU
// time the process spent per op, the garbage collector's included: on a
// busy machine, a steadier measure than the wall time of ns/op.
func BenchmarkTurnPrompts(b *testing.B) {
	m, err := chat.Load(chat.BuiltinPrefix+"kimi-k2.5", chat.TemplateAuto, nil)
	if err != nil {
		b.Fatal(err)
	}
	src, answers := benchConversation(b)
	// texts are the conversation's prompts, turn by turn.
	var texts []string
	w := src.Walk(Options{})
	for _, a := range answers {
		text, err := m.Render(w.Messages(), w.Tools(), true)
		if err != nil {
			b.Fatal(err)
		}
		texts = append(texts, text)
		w.Add(Turn{Answer: a, FinishReason: "stop", PromptTokens: 1})
	}
	// turns is what a conversation keeps from one turn to the next.
	type turns struct {
		prompts chat.TurnPrompts
		cache   chattemplate.MessageCache
		last    *tokenizer.Encoding
	}
	ways := []struct {
		name   string
		prompt func(p *turns, w *Walk) (int, error)
	}{
		{"incremental", func(p *turns, w *Walk) (int, error) {
			ids, err := p.prompts.Next(m, w.MessageList(), w.Tools())
			return len(ids), err
		}},
		{"incremental-render", func(p *turns, w *Walk) (int, error) {
			text, err := m.Template.RenderOver(chattemplate.Options{
				MessageList: w.MessageList(), Tools: w.Tools(), AddGenerationPrompt: true, Cache: &p.cache,
				BOSToken: m.Tok.Config().BOSToken, EOSToken: m.Tok.Config().EOSToken, Extra: m.Extra,
			})
			return len(text), err
		}},
		{"incremental-encode", func(p *turns, w *Walk) (int, error) {
			p.last = m.Tok.ExtendOver(p.last, texts[len(w.Turns())])
			return len(p.last.IDs), nil
		}},
		{"first-encode", func(_ *turns, w *Walk) (int, error) {
			if len(w.Turns()) > 0 {
				return 1, nil
			}
			return len(m.Encode(texts[0])), nil
		}},
		{"whole", func(_ *turns, w *Walk) (int, error) {
			text, err := m.Render(w.Messages(), w.Tools(), true)
			return len(m.Encode(text)), err
		}},
		{"render", func(_ *turns, w *Walk) (int, error) {
			text, err := m.Render(w.Messages(), w.Tools(), true)
			return len(text), err
		}},
		{"walk", func(*turns, *Walk) (int, error) { return 1, nil }},
	}
	for _, way := range ways {
		b.Run(way.name, func(b *testing.B) {
			b.ReportAllocs()
			start, _ := cputime.Process()
			defer func() {
				end, _ := cputime.Process()
				b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
			}()
			for b.Loop() {
				w := src.Walk(Options{})
				var p turns
				for _, a := range answers {
					n, err := way.prompt(&p, w)
					if err != nil {
						b.Fatal(err)
					}
					w.Add(Turn{Answer: a, FinishReason: "stop", PromptTokens: n})
				}
				if w.Ended() != EndDone {
					b.Fatalf("ended %q", w.Ended())
				}
			}
		})
	}
}
