package bundle

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/synthpipe/synthpipe/lib/tokenizer"
)

// TestExtractTokenizer unpacks the tokenizer folder and loads it: the Kimi
// vocabulary with K2.5's special tokens and chat template.
func TestExtractTokenizer(t *testing.T) {
	dir, err := ExtractTokenizer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tiktoken.model", "tokenizer_config.json", "chat_template.jinja", "LICENSE.kimi"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := tok.TokenID("<think>"); !ok || id != 163606 {
		t.Errorf("<think> is %d, %v; want 163606 (a K2.5 special token)", id, ok)
	}
	cfg := tok.Config()
	if cfg.ChatTemplate == "" || cfg.BOSToken != "[BOS]" || cfg.EOSToken != "[EOS]" {
		t.Errorf("config: template %d bytes, BOS %q, EOS %q", len(cfg.ChatTemplate), cfg.BOSToken, cfg.EOSToken)
	}
	if got := tok.Encode("Hello world", true); len(got) != 2 {
		t.Errorf("Hello world: %v", got)
	}
}

// TestPrompts checks the sample prompts: 400 records over four datasets,
// every input shape present.
func TestPrompts(t *testing.T) {
	r, err := Prompts()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	datasets := map[string]int{}
	shapes := map[string]int{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%s: %v", sc.Bytes(), err)
		}
		var ds string
		json.Unmarshal(rec["dataset"], &ds)
		datasets[ds]++
		shapes[shapeOf(rec)]++
		for _, feature := range []string{`"tools"`, `"tool_calls"`, `"function_call"`, `"reasoning_content"`, `"history"`, `"type":"text"`} {
			if bytes.Contains(sc.Bytes(), []byte(feature)) {
				shapes[feature]++
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range datasets {
		total += n
	}
	if total != 400 || len(datasets) != 4 {
		t.Errorf("datasets %v: want 400 records in chat, code, math and tools", datasets)
	}
	for _, s := range []string{"messages", "sharegpt", "specforge", "prompt", "alpaca", "text",
		`"tools"`, `"tool_calls"`, `"function_call"`, `"reasoning_content"`, `"history"`, `"type":"text"`} {
		if shapes[s] == 0 {
			t.Errorf("no record of shape %s (have %v)", s, shapes)
		}
	}
}

func shapeOf(rec map[string]json.RawMessage) string {
	var turns []map[string]json.RawMessage
	switch {
	case rec["messages"] != nil:
		return "messages"
	case rec["conversations"] != nil:
		json.Unmarshal(rec["conversations"], &turns)
		if turns[0]["from"] != nil {
			return "sharegpt"
		}
		return "specforge"
	case rec["prompt"] != nil:
		return "prompt"
	case rec["instruction"] != nil:
		return "alpaca"
	case rec["text"] != nil:
		return "text"
	}
	return "unknown"
}
