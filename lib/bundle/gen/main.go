// Command gen writes synthpipe's sample prompts (lib/bundle/prompts/*.jsonl.zst):
// a few hundred records in four datasets (chat, code, math, tools; one file
// each, as datasets usually come) and in every input shape tokenize-prompts
// reads, made up from word lists here, so that they carry no third-party text
// and come out the same on every run.
//
//	go run ./lib/bundle/gen -o lib/bundle/prompts
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
)

// Counts per dataset: 400 records in all.
const (
	chatRecords  = 130
	codeRecords  = 100
	mathRecords  = 100
	toolsRecords = 70
)

func main() {
	out := flag.String("o", "", "write DATASET.jsonl.zst files into `DIR` (default: plain JSONL of all datasets on stdout)")
	flag.Parse()
	for _, d := range generate() {
		if *out == "" {
			os.Stdout.Write(d.data)
			continue
		}
		path := filepath.Join(*out, d.name+".jsonl.zst")
		if err := os.WriteFile(path, compress(d.data), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}

// dataset is one dataset's prompts as JSONL.
type dataset struct {
	name string
	data []byte
}

func compress(data []byte) []byte {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		panic(err)
	}
	return enc.EncodeAll(data, nil)
}

// obj is a JSON object that keeps its keys in the order they were set.
type obj []kv

type kv struct {
	k string
	v any
}

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := encode(f.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// generator draws every choice from one seeded source.
type generator struct {
	r    *rand.Rand
	out  bytes.Buffer
	n    int
	seen map[string]bool // the fields of the records written without an id
}

func generate() []dataset {
	g := &generator{r: rand.New(rand.NewPCG(2026, 11)), seen: map[string]bool{}}
	var sets []dataset
	for _, d := range []struct {
		name  string
		count int
		make  func(i int) obj
	}{
		{"chat", chatRecords, g.chat},
		{"code", codeRecords, g.code},
		{"math", mathRecords, g.math},
		{"tools", toolsRecords, g.tools},
	} {
		for i := range d.count {
			g.emit(d.name, i, g.unique(func() obj { return d.make(i) }))
		}
		sets = append(sets, dataset{d.name, bytes.Clone(g.out.Bytes())})
		g.out.Reset()
	}
	return sets
}

// unique draws fields until they differ from those of every record so far
// that had no id either: such records get ids derived from their prompt,
// and the same prompt twice would share one (the demo's dedupe-resume would
// drop it). Records with ids may repeat a prompt, as real datasets do.
func (g *generator) unique(draw func() obj) obj {
	for range 1000 {
		fields := draw()
		if g.n%5 != noIDSlot {
			return fields
		}
		key, err := encode(fields)
		if err != nil {
			panic(err)
		}
		if !g.seen[string(key)] {
			g.seen[string(key)] = true
			return fields
		}
	}
	panic("gen: no new prompt in 1000 draws: widen the word lists")
}

// noIDSlot is the record, one in five, written without an id.
const noIDSlot = 4

// emit writes one record: an id in one of the three forms sources use (a
// string, a number, none), the dataset, the shape's fields.
func (g *generator) emit(dataset string, i int, fields obj) {
	var rec obj
	switch g.n % 5 {
	case 0, 1, 2:
		rec = append(rec, kv{"id", fmt.Sprintf("%s-%04d", dataset, i)})
	case 3:
		rec = append(rec, kv{"id", 100000 + g.n})
	case noIDSlot: // no id: tokenize-prompts derives one
	}
	rec = append(rec, kv{"dataset", dataset})
	rec = append(rec, fields...)
	if g.n%7 == 0 {
		rec = append(rec, kv{"source", "synthpipe-sample"})
	}
	b, err := encode(rec)
	if err != nil {
		panic(err)
	}
	g.out.Write(b)
	g.out.WriteByte('\n')
	g.n++
}

func (g *generator) pick(list []string) string { return list[g.r.IntN(len(list))] }

func msg(role, content string) obj { return obj{{"role", role}, {"content", content}} }

func turn(from, value string) obj { return obj{{"from", from}, {"value", value}} }

var (
	systems = []string{
		"You are a helpful assistant.",
		"You are a concise assistant. Answer in as few words as the question allows.",
		"You are a patient tutor who explains each step.",
		"You are an expert software engineer. Prefer clear, idiomatic code.",
		"Answer in plain English, without lists.",
	}
	chatTopics = []string{
		"tides", "sourdough bread", "the water cycle", "compound interest", "solar eclipses",
		"migrating birds", "a vegetable garden", "jet lag", "learning a second language",
		"bicycle maintenance", "caring for houseplants", "how vaccines work", "saving energy at home",
		"writing a cover letter", "planning a small wedding", "composting", "a first marathon",
		"reading more books", "photographing the night sky", "brewing tea",
	}
	chatAsks = []string{
		"Can you explain %s to a ten-year-old?",
		"What are three common mistakes people make with %s?",
		"Give me a short overview of %s.",
		"I keep reading about %s. What is the one thing I should understand first?",
		"Write a friendly paragraph about %s for a newsletter.",
		"What questions should I ask an expert on %s?",
		"Summarize %s in two sentences.",
	}
	followUps = []string{
		"Thanks! Can you make it shorter?",
		"Could you give an example?",
		"How would that change in winter?",
		"And what should I avoid?",
		"Please say that again as a checklist.",
	}
	languages = []string{"Go", "Python", "Rust", "TypeScript", "C", "Java", "SQL", "Bash"}
	codeTasks = []string{
		"reverses a singly linked list",
		"parses a date in YYYY-MM-DD form and reports invalid input",
		"counts the words in a file, ignoring case",
		"merges two sorted arrays into one sorted array",
		"checks whether a string is a palindrome, ignoring punctuation",
		"computes a moving average over a stream of numbers",
		"retries an HTTP request with exponential backoff",
		"finds duplicate files by content hash",
		"implements an LRU cache with a fixed capacity",
		"splits a CSV line that may contain quoted commas",
	}
	snippets = []string{
		"func sum(xs []int) int {\n\ttotal := 0\n\tfor i := 0; i <= len(xs); i++ {\n\t\ttotal += xs[i]\n\t}\n\treturn total\n}",
		"def mean(values):\n    return sum(values) / len(values)\n",
		"SELECT name, COUNT(*) FROM orders GROUP BY customer_id;",
		"for f in $(ls *.txt); do wc -l $f; done",
		"fn first_word(s: &String) -> &str {\n    &s[..s.find(' ').unwrap()]\n}",
		"const total = items.reduce((a, b) => a + b.price);",
	}
	codeAsks = []string{
		"Find the bug in this code and fix it.",
		"Explain what this code does, line by line.",
		"Rewrite this code to handle empty input.",
		"Add tests for this code.",
	}
	names  = []string{"Ana", "Bo", "Chen", "Dara", "Emil", "Farah", "Goran", "Hana", "Ivo", "Juno"}
	things = []string{"apples", "marbles", "stamps", "tickets", "books", "coins", "shells", "pencils"}
)

func (g *generator) chat(i int) obj {
	topic := g.pick(chatTopics)
	ask := fmt.Sprintf(g.pick(chatAsks), topic)
	sys := g.pick(systems)
	switch i % 7 {
	case 0: // OpenAI messages, one turn
		return obj{{"messages", []any{msg("system", sys), msg("user", ask)}}}
	case 1: // OpenAI messages, several turns ending in the answer to redo
		return obj{{"messages", []any{
			msg("user", ask),
			msg("assistant", "Here is a first answer about "+topic+"."),
			msg("user", g.pick(followUps)),
			msg("assistant", "A shorter answer about "+topic+"."),
		}}}
	case 2: // content as a list of text parts
		return obj{{"messages", []any{obj{{"role", "user"}, {"content", []any{
			obj{{"type", "text"}, {"text", ask}},
			obj{{"type", "text"}, {"text", "Keep it under 100 words."}},
		}}}}}}
	case 3: // ShareGPT
		return obj{{"conversations", []any{
			turn("system", sys), turn("human", ask), turn("gpt", "An answer about "+topic+"."),
			turn("human", g.pick(followUps)),
		}}}
	case 4: // SpecForge
		return obj{{"conversations", []any{msg("user", ask), msg("assistant", "An answer about "+topic+".")}}}
	case 5: // prompt with a system
		return obj{{"system", sys}, {"prompt", ask}}
	default: // Alpaca with history
		return obj{
			{"instruction", g.pick(followUps)},
			{"input", ""},
			{"output", "A revised answer."},
			{"history", [][]string{{ask, "A first answer about " + topic + "."}}},
		}
	}
}

func (g *generator) code(i int) obj {
	lang := g.pick(languages)
	task := fmt.Sprintf("Write a %s function that %s.", lang, g.pick(codeTasks))
	snippet := g.pick(snippets)
	switch i % 5 {
	case 0:
		return obj{{"messages", []any{msg("system", systems[3]), msg("user", task)}}}
	case 1: // Alpaca with an input
		return obj{{"instruction", g.pick(codeAsks)}, {"input", snippet}, {"output", "The fixed code."}}
	case 2:
		return obj{{"prompt", task + " Include a short usage example."}}
	case 3: // ShareGPT
		return obj{{"conversations", []any{turn("human", g.pick(codeAsks)+"\n\n```\n"+snippet+"\n```")}}}
	default: // an earlier answer with its reasoning
		return obj{{"messages", []any{
			msg("user", task),
			obj{{"role", "assistant"}, {"content", "Here is a first version."}, {"reasoning_content", "The user wants " + lang + "; start simple."}},
			msg("user", "Now make it generic and document it."),
		}}}
	}
}

func (g *generator) math(i int) obj {
	a, b, c := 2+g.r.IntN(97), 2+g.r.IntN(29), 2+g.r.IntN(9)
	who, what := g.pick(names), g.pick(things)
	problems := []string{
		fmt.Sprintf("%s has %d %s and gives away %d of them to each of %d friends. How many are left?", who, a*c+b, what, b/2+1, c),
		fmt.Sprintf("What is %d × %d + %d?", a, b, c),
		fmt.Sprintf("Solve for x: %dx + %d = %d.", c, b, c*a+b),
		fmt.Sprintf("A rectangle is %d cm by %d cm. What are its area and its perimeter?", a, b),
		fmt.Sprintf("What is the sum of the first %d odd numbers? Explain the pattern.", a),
		fmt.Sprintf("%s reads %d pages a day. How many days until a %d-page book is finished?", who, b, a*b+c),
	}
	problem := problems[g.r.IntN(len(problems))]
	switch i % 5 {
	case 0:
		return obj{{"prompt", problem}}
	case 1:
		return obj{{"instruction", "Solve the problem and give the final answer on its own line."}, {"input", problem}}
	case 2: // SpecForge
		return obj{{"conversations", []any{msg("system", systems[2]), msg("user", problem)}}}
	case 3: // already rendered in Kimi's chat format
		return obj{{"text", "<|im_system|>system<|im_middle|>" + systems[2] + "<|im_end|>" +
			"<|im_user|>user<|im_middle|>" + problem + "<|im_end|><|im_assistant|>assistant<|im_middle|>"}}
	default:
		return obj{{"messages", []any{msg("user", problem+" Think step by step.")}}}
	}
}

var (
	weatherTool = obj{{"type", "function"}, {"function", obj{
		{"name", "get_weather"},
		{"description", "Get the current weather for a city."},
		{"parameters", obj{{"type", "object"}, {"properties", obj{
			{"city", obj{{"type", "string"}, {"description", "City name"}}},
			{"unit", obj{{"type", "string"}, {"enum", []string{"celsius", "fahrenheit"}}}},
		}}, {"required", []string{"city"}}}},
	}}}
	calcTool = obj{{"type", "function"}, {"function", obj{
		{"name", "calculator"},
		{"description", "Evaluate an arithmetic expression."},
		{"parameters", obj{{"type", "object"}, {"properties", obj{
			{"expression", obj{{"type", "string"}}},
		}}, {"required", []string{"expression"}}}},
	}}}
	// searchSchema is a bare function schema, as LLaMA-Factory stores tools.
	searchSchema = obj{
		{"name", "search_notes"},
		{"description", "Search the user's notes."},
		{"parameters", obj{{"type", "object"}, {"properties", obj{
			{"query", obj{{"type", "string"}}},
		}}, {"required", []string{"query"}}}},
	}
	cities = []string{"Lisbon", "Osaka", "Nairobi", "Quito", "Oslo", "Hanoi", "Perth", "Tbilisi"}
)

func (g *generator) tools(i int) obj {
	city := g.pick(cities)
	switch i % 4 {
	case 0: // a fresh request with tools offered
		return obj{
			{"messages", []any{msg("user", "What's the weather in "+city+" right now?")}},
			{"tools", []any{weatherTool, calcTool}},
		}
	case 1: // a call made and answered: generate the next assistant turn
		args := fmt.Sprintf(`{"city": %q, "unit": "celsius"}`, city)
		return obj{
			{"messages", []any{
				msg("user", "Should I take an umbrella in "+city+" today?"),
				obj{{"role", "assistant"}, {"content", ""}, {"tool_calls", []any{obj{
					{"id", fmt.Sprintf("functions.get_weather:%d", i)}, {"type", "function"},
					{"function", obj{{"name", "get_weather"}, {"arguments", args}}},
				}}}},
				obj{{"role", "tool"}, {"tool_call_id", fmt.Sprintf("functions.get_weather:%d", i)}, {"name", "get_weather"},
					{"content", fmt.Sprintf(`{"temp": %d, "sky": %q}`, 5+g.r.IntN(25), g.pick([]string{"rain", "clear", "clouds"}))}},
			}},
			{"tools", []any{weatherTool}},
		}
	case 2: // ShareGPT with function_call and observation, tools as a string
		expr := fmt.Sprintf("%d * %d", 10+g.r.IntN(90), 10+g.r.IntN(90))
		call, _ := encode(obj{{"name", "calculator"}, {"arguments", obj{{"expression", expr}}}})
		tools, _ := encode([]any{calcTool.function()})
		return obj{
			{"conversations", []any{
				turn("human", "What is "+expr+"?"),
				turn("function_call", string(call)),
				turn("observation", `{"result": "done"}`),
			}},
			{"tools", string(tools)},
		}
	default: // SpecForge with a bare schema
		return obj{
			{"conversations", []any{msg("user", "Find my notes about "+g.pick(chatTopics)+".")}},
			{"tools", []any{searchSchema}},
		}
	}
}

// function returns the "function" member of a tool.
func (o obj) function() any {
	for _, f := range o {
		if f.k == "function" {
			return f.v
		}
	}
	return nil
}
