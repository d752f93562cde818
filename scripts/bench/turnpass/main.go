// Command turnpass builds the requests of one pass of the naive way of
// regenerating conversations, for scripts/bench/turns.sh: turn K of every
// conversation still going, each prompt the conversation so far with the
// model's answers of the earlier passes, rendered with the model's chat
// template. The passes are sent with generate --turns last, one after the
// other, so a conversation's next turn waits for every other conversation's
// turn before it.
//
//	turnpass -tokenizer builtin:kimi-k2.5 CONVS PASS1_OUT ... > PASSK_IN
//
// CONVS is tokenize-prompts --turns all output; PASSn_OUT are the outputs
// of generate on the earlier passes (output_ids and finish_reason by id).
// It writes {"id", "input_ids"} lines, the ids of the conversations still
// going.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/synthpipe/synthpipe/lib/answerformat"
	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/conversation"
)

type convLine struct {
	ID       string          `json:"id"`
	Messages json.RawMessage `json:"messages"`
	Tools    json.RawMessage `json:"tools"`
}

type answerLine struct {
	ID           string `json:"id"`
	OutputIDs    []int  `json:"output_ids"`
	FinishReason string `json:"finish_reason"`
}

func main() {
	tokPath := flag.String("tokenizer", "builtin:kimi-k2.5", "the model's tokenizer (and its chat template)")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: turnpass -tokenizer TOK CONVS [PASS_OUT...]")
		os.Exit(64)
	}
	if err := run(*tokPath, flag.Arg(0), flag.Args()[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "turnpass:", err)
		os.Exit(1)
	}
}

func run(tokPath, convsPath string, passPaths []string) error {
	model, err := chat.Load(tokPath, "auto", nil)
	if err != nil {
		return err
	}
	format, err := answerformat.ForTokenizer(model.Tok, tokPath)
	if err != nil {
		return err
	}
	passes := make([]map[string]answerLine, len(passPaths))
	for i, p := range passPaths {
		if passes[i], err = readAnswers(p); err != nil {
			return err
		}
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	return eachLine(convsPath, func(line []byte) error {
		var c convLine
		if err := json.Unmarshal(line, &c); err != nil {
			return err
		}
		src, err := conversation.Parse(c.Messages, c.Tools)
		if err != nil {
			return fmt.Errorf("%s: %w", c.ID, err)
		}
		ids, err := replay(model, format, src.Walk(conversation.Options{}), c.ID, passes)
		if err != nil || ids == nil {
			return err
		}
		b, _ := json.Marshal(map[string]any{"id": c.ID, "input_ids": ids})
		out.Write(append(b, '\n'))
		return nil
	})
}

// replay walks the conversation through the earlier passes' answers and
// returns the next turn's prompt, nil when the conversation has ended.
func replay(model *chat.Model, format *answerformat.Format, wk *conversation.Walk, id string, passes []map[string]answerLine) ([]int, error) {
	for _, pass := range passes {
		if wk.Ended() != "" {
			return nil, nil
		}
		prompt, err := render(model, wk)
		if err != nil {
			return nil, err
		}
		ans, ok := pass[id]
		if !ok {
			return nil, nil // failed in that pass: it goes no further
		}
		a, err := format.Read(prompt, ans.OutputIDs)
		t := conversation.Turn{Answer: a, FinishReason: ans.FinishReason, OutputIDs: ans.OutputIDs}
		if err != nil {
			t.ReadError = err.Error()
		}
		wk.Add(t)
	}
	if wk.Ended() != "" {
		return nil, nil
	}
	return render(model, wk)
}

func render(model *chat.Model, wk *conversation.Walk) ([]int, error) {
	text, err := model.Render(wk.Messages(), wk.Tools(), true)
	if err != nil {
		return nil, err
	}
	return model.Encode(text), nil
}

func readAnswers(path string) (map[string]answerLine, error) {
	m := map[string]answerLine{}
	err := eachLine(path, func(line []byte) error {
		var a answerLine
		if err := json.Unmarshal(line, &a); err != nil {
			return err
		}
		m[a.ID] = a
		return nil
	})
	return m, err
}

func eachLine(path string, f func([]byte) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<26)
	for n := 1; sc.Scan(); n++ {
		if err := f(sc.Bytes()); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}
