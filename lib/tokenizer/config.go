package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
)

// Config is what tokenizer_config.json (and chat_template.jinja beside it)
// says about using the tokenizer.
type Config struct {
	// ChatTemplate is the Jinja chat template: the config's chat_template
	// (a string, or the entry named "default" of the list form), else the
	// content of chat_template.jinja in the same folder.
	ChatTemplate string
	// BOSToken and EOSToken are the content of bos_token and eos_token,
	// which the file may give as strings or as {"content": ...} objects.
	BOSToken string
	EOSToken string
	// AddBOS tells whether the model expects BOS in front of a sequence:
	// add_bos_token when the config has it, else whether tokenizer.json's
	// post-processor inserts a special token before the sequence. Encode
	// never adds it; callers that want it prepend BOSID.
	AddBOS bool
	// BOSID is the id of BOSToken, or -1.
	BOSID int
}

// tokenizerConfigFile is the part of tokenizer_config.json synthpipe reads.
type tokenizerConfigFile struct {
	ChatTemplate       json.RawMessage            `json:"chat_template"`
	BOSToken           json.RawMessage            `json:"bos_token"`
	EOSToken           json.RawMessage            `json:"eos_token"`
	AddBOSToken        *bool                      `json:"add_bos_token"`
	TokenizerClass     string                     `json:"tokenizer_class"`
	AutoMap            map[string]json.RawMessage `json:"auto_map"`
	AddedTokensDecoder map[string]addedTokenJSON  `json:"added_tokens_decoder"`
}

type addedTokenJSON struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	Special    bool   `json:"special"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	SingleWord bool   `json:"single_word"`
	Normalized bool   `json:"normalized"`
}

func (a addedTokenJSON) token(id int) AddedToken {
	return AddedToken{ID: id, Content: a.Content, Special: a.Special, LStrip: a.LStrip, RStrip: a.RStrip,
		SingleWord: a.SingleWord, Normalized: a.Normalized}
}

func readTokenizerConfig(path string) (*tokenizerConfigFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c tokenizerConfigFile
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("tokenizer: parse %s: %w", path, err)
	}
	return &c, nil
}

// addedTokens returns added_tokens_decoder with ids from its keys.
func (c *tokenizerConfigFile) addedTokens() ([]AddedToken, error) {
	var out []AddedToken
	for key, a := range c.AddedTokensDecoder {
		id, err := strconv.Atoi(key)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: added_tokens_decoder key %q is not an id", key)
		}
		out = append(out, a.token(id))
	}
	return out, nil
}

// tokenContent reads a token given as "text" or {"content": "text"}.
func tokenContent(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return obj.Content
	}
	return ""
}

// chatTemplate reads chat_template as a string or as a list of
// {"name", "template"} entries, of which "default" is the chat template.
func chatTemplate(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if json.Unmarshal(raw, &named) == nil {
		for _, n := range named {
			if n.Name == "default" {
				return n.Template
			}
		}
	}
	return ""
}

// config builds the exported Config; addBOSFallback comes from the
// post-processor when the file has no add_bos_token.
func (c *tokenizerConfigFile) config(addBOSFallback bool) Config {
	cfg := Config{BOSID: -1, AddBOS: addBOSFallback}
	if c == nil {
		return cfg
	}
	cfg.ChatTemplate = chatTemplate(c.ChatTemplate)
	cfg.BOSToken = tokenContent(c.BOSToken)
	cfg.EOSToken = tokenContent(c.EOSToken)
	if c.AddBOSToken != nil {
		cfg.AddBOS = *c.AddBOSToken
	}
	return cfg
}
