package totrain

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/synthpipe/synthpipe/lib/chat"
)

// The conformance test checks to-train against references made outside
// synthpipe: the chat templates rendered by Python's jinja2 (in
// ../chattemplate/testdata/conformance) and the real tokenizer folders (in
// ../tokenizer/testdata/tokenizers, which lib/tokenizer's own tests prove
// identical to the official implementations).
const (
	conformanceDir = "../chattemplate/testdata/conformance"
	tokenizersDir  = "../tokenizer/testdata/tokenizers"
)

// conformanceFamilies pairs each tokenizer folder with the reference
// template of its model.
var conformanceFamilies = []struct{ tokenizer, template string }{
	{"qwen3", "qwen3"},
	{"deepseek_v3", "deepseek_v3"},
	{"llama3_1", "llama3_1"},
	{"gptoss", "gptoss"},
	{"kimi_k2", "kimi_k2_instruct"},
	{"kimi_k25", "kimi_k25_like_kite"},
}

// answeredCases are the reference cases whose conversation ends with an
// assistant turn: a generated record is their messages up to that turn plus
// the turn as generate's answer fields.
var answeredCases = []string{"train_full", "tools_dict_args", "reasoning_history"}

type referenceCase struct {
	Name     string            `json:"name"`
	Messages []json.RawMessage `json:"messages"`
	Tools    json.RawMessage   `json:"tools"`
}

type referenceRender struct {
	Template string `json:"template"`
	Case     string `json:"case"`
	OK       bool   `json:"ok"`
	Output   string `json:"output"`
	Error    string `json:"error"`
}

// referenceDate is the day the reference renders saw through strftime_now.
var referenceDate = time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC)

func TestConformanceEveryFamily(t *testing.T) {
	cases, renders := loadReferences(t)
	for _, fam := range conformanceFamilies {
		t.Run(fam.tokenizer, func(t *testing.T) {
			_, model := loadReferenceModel(t, fam.tokenizer, fam.template)
			for _, name := range answeredCases {
				t.Run(name, func(t *testing.T) {
					ref, ok := renders[fam.template+"/"+name]
					if !ok {
						t.Fatalf("no reference render of %s for %s", name, fam.template)
					}
					checkTokensConformance(t, model, cases[name], ref)
					checkSpecForgeConformance(t, cases[name])
				})
			}
		})
	}
}

// loadReferenceModel unpacks a family's tokenizer folder and loads it with
// the reference template, seeing the reference date.
func loadReferenceModel(t *testing.T, family, template string) (dir string, model *chat.Model) {
	t.Helper()
	dir = unpackTokenizerFolder(t, family)
	model, err := chat.Load(dir, templatePath(template), nil)
	if err != nil {
		t.Fatal(err)
	}
	model.Now = func() time.Time { return referenceDate }
	// The references are the templates rendered by plain jinja2, which
	// gives Kimi-K2.5's template no tools_ts_str.
	if err := model.SetToolDeclaration(chat.DeclarationJSON); err != nil {
		t.Fatal(err)
	}
	return dir, model
}

func templatePath(template string) string {
	return filepath.Join(conformanceDir, template+".jinja")
}

// TestDateFlag: to-train --date gives the template the day tokenize-prompts
// --date gave it (gpt-oss prints it in the system turn), so the sample
// matches the reference rendered on that day.
func TestDateFlag(t *testing.T) {
	cases, renders := loadReferences(t)
	dir, model := loadReferenceModel(t, "gptoss", "gptoss")
	records := filepath.Join(t.TempDir(), "generated.jsonl")
	if err := os.WriteFile(records, append(generatedRecord(t, cases["train_full"]), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Main([]string{"to-train", "-q", "--format", "tokens", "--tokenizer", dir, "--template", templatePath("gptoss"),
		"--date", referenceDate.Format(time.DateOnly), records}, nil, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var sample struct {
		InputIDs []int `json:"input_ids"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sample); err != nil {
		t.Fatalf("%v: %s", err, stdout.Bytes())
	}
	ref := renders["gptoss/train_full"].Output
	if !reflect.DeepEqual(sample.InputIDs, model.Encode(ref)) {
		got, _ := model.Tok.Decode(sample.InputIDs)
		t.Errorf("input_ids are not the reference rendering's ids\n got: %q\nwant: %q", got, ref)
	}
}

// checkTokensConformance: --format tokens gives the reference rendering's
// ids, and its loss mask covers exactly what follows the prompt.
func checkTokensConformance(t *testing.T, model *chat.Model, c referenceCase, ref referenceRender) {
	t.Helper()
	conv := &converter{format: formatTokens, model: model, idPath: "id"}
	out, err := oneSample(conv, generatedRecord(t, c))
	if !ref.OK {
		// The reference template refused the conversation: so must we,
		// for the same reason.
		_, reason, _ := strings.Cut(ref.Error, ": ")
		if err == nil || !strings.Contains(err.Error(), reason) {
			t.Errorf("convert: %v; the reference template raised %s", err, ref.Error)
		}
		return
	}
	if err != nil {
		t.Fatalf("convert: %v", err)
	}
	var sample struct {
		InputIDs []int `json:"input_ids"`
		LossMask []int `json:"loss_mask"`
	}
	if err := json.Unmarshal(out, &sample); err != nil {
		t.Fatalf("sample %s: %v", out, err)
	}
	want := model.Encode(ref.Output)
	if !reflect.DeepEqual(sample.InputIDs, want) {
		got, _ := model.Tok.Decode(sample.InputIDs)
		t.Fatalf("input_ids are not the reference rendering's ids\n got: %q\nwant: %q", got, ref.Output)
	}
	if len(sample.LossMask) != len(sample.InputIDs) {
		t.Fatalf("loss_mask has %d entries for %d ids", len(sample.LossMask), len(sample.InputIDs))
	}

	prompt, err := model.Render(messagesJSON(c.Messages[:len(c.Messages)-1]), c.Tools, true)
	if err != nil {
		t.Fatal(err)
	}
	answerText, ok := strings.CutPrefix(ref.Output, prompt)
	if !ok {
		t.Fatalf("the reference rendering does not start with the prompt rendered with the generation prompt\nprompt: %q\n  full: %q", prompt, ref.Output)
	}
	promptLen := len(model.Encode(prompt))
	for i, m := range sample.LossMask {
		if wantMask := boolInt(i >= promptLen); m != wantMask {
			t.Fatalf("loss_mask[%d] = %d, want %d (the prompt is %d tokens of %d)", i, m, wantMask, promptLen, len(sample.InputIDs))
		}
	}
	got, err := model.Tok.Decode(sample.InputIDs[promptLen:])
	if err != nil {
		t.Fatal(err)
	}
	if got != answerText {
		t.Errorf("the masked tokens decode to %q, want what the reference renders after the prompt: %q", got, answerText)
	}
}

// checkSpecForgeConformance: --format specforge gives back the case's
// conversation and tools.
func checkSpecForgeConformance(t *testing.T, c referenceCase) {
	t.Helper()
	conv := &converter{format: formatSpecForge, idPath: "id"}
	out, err := oneSample(conv, generatedRecord(t, c))
	if err != nil {
		t.Fatalf("convert: %v", err)
	}
	var sample struct {
		Conversations any `json:"conversations"`
		Tools         any `json:"tools"`
	}
	if err := json.Unmarshal(out, &sample); err != nil {
		t.Fatalf("sample %s: %v", out, err)
	}
	if want := jsonValue(t, messagesJSON(c.Messages)); !reflect.DeepEqual(sample.Conversations, want) {
		t.Errorf("conversations differ from the case's messages\n got: %v\nwant: %v", sample.Conversations, want)
	}
	if len(c.Tools) > 0 {
		if want := jsonValue(t, c.Tools); !reflect.DeepEqual(sample.Tools, want) {
			t.Errorf("tools differ from the case's\n got: %v\nwant: %v", sample.Tools, want)
		}
	}
}

// generatedRecord is the record generate would have written for a case:
// the conversation up to its last turn, and that turn as the answer.
func generatedRecord(t *testing.T, c referenceCase) []byte {
	t.Helper()
	var last struct {
		Role      string          `json:"role"`
		Content   string          `json:"content"`
		Reasoning string          `json:"reasoning_content"`
		ToolCalls json.RawMessage `json:"tool_calls"`
	}
	if err := json.Unmarshal(c.Messages[len(c.Messages)-1], &last); err != nil || last.Role != "assistant" {
		t.Fatalf("case %s does not end with an assistant turn (%v)", c.Name, err)
	}
	rec := map[string]any{
		"id":       c.Name,
		"messages": messagesJSON(c.Messages[:len(c.Messages)-1]),
		"text":     last.Content,
		// The references render with the templates' defaults: thinking on,
		// the effort unset. The record says so, as generate writes it.
		"thinking": true,
	}
	if len(c.Tools) > 0 {
		rec["tools"] = c.Tools
	}
	if last.Reasoning != "" {
		rec["reasoning"] = last.Reasoning
	}
	if len(last.ToolCalls) > 0 {
		rec["tool_calls"] = last.ToolCalls
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func messagesJSON(msgs []json.RawMessage) json.RawMessage {
	b, _ := json.Marshal(msgs)
	return b
}

func jsonValue(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// loadReferences reads the reference cases by name and the reference
// renders by "template/case".
func loadReferences(t *testing.T) (map[string]referenceCase, map[string]referenceRender) {
	t.Helper()
	var file struct {
		Cases []referenceCase `json:"cases"`
	}
	var renders []referenceRender
	for name, dst := range map[string]any{"cases.json": &file, "expected_python_jinja2.json": &renders} {
		data, err := os.ReadFile(filepath.Join(conformanceDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, dst); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	cases := map[string]referenceCase{}
	for _, c := range file.Cases {
		cases[c.Name] = c
	}
	byName := map[string]referenceRender{}
	for _, r := range renders {
		byName[r.Template+"/"+r.Case] = r
	}
	return cases, byName
}

// unpackTokenizerFolder lays out a family's tokenizer as the published model
// folder: testdata keeps the big files zstd-compressed, and the Kimi folders
// share one tiktoken.model in kimi_shared.
func unpackTokenizerFolder(t *testing.T, family string) string {
	t.Helper()
	dst := t.TempDir()
	srcs := []string{filepath.Join(tokenizersDir, family)}
	if strings.HasPrefix(family, "kimi") {
		srcs = append(srcs, filepath.Join(tokenizersDir, "kimi_shared"))
	}
	for _, src := range srcs {
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			name := e.Name()
			if base, ok := strings.CutSuffix(name, ".zst"); ok {
				if data, err = unzstd(data); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				name = base
			}
			if err := os.WriteFile(filepath.Join(dst, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dst
}

func unzstd(data []byte) ([]byte, error) {
	dec, err := zstd.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	return io.ReadAll(dec)
}

// oneSample is the one sample of a record of one answer.
func oneSample(conv *converter, rec []byte) ([]byte, error) {
	samples, err := conv.samples(rec)
	if err != nil {
		return nil, err
	}
	return samples[0], nil
}
