// Package turnstest reads the Kimi-K2.5 turn-by-turn reference of
// lib/answerformat/testdata (see LICENSES.md there) for the tests of
// lib/answerformat and lib/conversation.
package turnstest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/klauspost/compress/zstd"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// File is the reference, relative to the top of the repository (see
// lib/answerformat/testdata/LICENSES.md).
const File = "lib/answerformat/testdata/kimi_turns.jsonl.zst"

// Conversation is one conversation of the turn-by-turn reference.
type Conversation struct {
	ID    string          `json:"id"`
	Tools json.RawMessage `json:"tools"`
	Turns []Turn          `json:"turns"`
}

// Turn is one regenerated turn: the conversation so far, its prompt as
// Kimi-K2.5's tokenizer renders it, the answer's tokens decoded and the
// assistant message it reads back as.
type Turn struct {
	PromptMessages     json.RawMessage `json:"prompt_messages"`
	ExpectedPromptText string          `json:"expected_prompt_text"`
	AnswerText         string          `json:"answer_text"`
	AnswerMessage      json.RawMessage `json:"answer_message"`
}

// Read reads the reference at path (a zstd-compressed JSONL file),
// for the tests of this package and of lib/conversation.
func Read(path string) ([]Conversation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	var out []Conversation
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var c Conversation
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, sc.Err()
}

// SourceMessages are the messages of the source conversation c was
// regenerated from: its final conversation with every assistant turn
// replaced by another model's (other words, other call ids, no
// reasoning), so that a regeneration that sent any of the source's
// answers, or kept its call ids, is caught.
func SourceMessages(c Conversation) []string {
	last := c.Turns[len(c.Turns)-1]
	var msgs []string
	for i, m := range append(gjson.ParseBytes(last.PromptMessages).Array(), gjson.ParseBytes(last.AnswerMessage)) {
		raw := m.Raw
		switch m.Get("role").String() {
		case "assistant":
			raw, _ = sjson.Set(raw, "content", fmt.Sprintf("Another model's answer %d.", i))
			raw, _ = sjson.Delete(raw, "reasoning_content")
			for j, call := range m.Get("tool_calls").Array() {
				raw, _ = sjson.Set(raw, fmt.Sprintf("tool_calls.%d.id", j), "src_"+call.Get("id").String())
			}
		case "tool":
			raw, _ = sjson.Set(raw, "tool_call_id", "src_"+m.Get("tool_call_id").String())
		}
		msgs = append(msgs, raw)
	}
	return msgs
}
