// Package benchdata makes the generate-shaped records that the benchmarks
// read: every field of synthpipe-records(7), with prompts of 500-1000 token
// ids and completions of 2000-4000, the shape that dominates real output
// files. The same seed gives the same records.
package benchdata

import (
	"fmt"
	"math/rand/v2"
	"strconv"
)

// NewRand returns the generator AppendRecord draws from.
func NewRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// Records returns n records, newline-terminated, as one block.
func Records(n int, seed uint64) []byte {
	rng := NewRand(seed)
	var b []byte
	for i := 0; i < n; i++ {
		b = AppendRecord(b, rng, i)
	}
	return b
}

// vocab is the id range of a typical modern tokenizer.
const vocab = 151_000

// AppendRecord appends one record and its newline to b.
func AppendRecord(b []byte, rng *rand.Rand, i int) []byte {
	prompt := 500 + rng.IntN(501)
	completion := 2000 + rng.IntN(2001)
	b = append(b, `{"id":"bench-`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `","messages":[{"role":"system","content":"You are a careful assistant."},{"role":"user","content":"Question `...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `: explain the proof step by step.\nBe brief."}],"input_ids":`...)
	b = appendIDs(b, rng, prompt)
	b = append(b, `,"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"output_ids":`...)
	b = appendIDs(b, rng, completion)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"text":"The proof goes in three steps. First, \"normalize\" \u00e9 the terms; then…","finish_reason":"stop","usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"cached_tokens":0},"gen":{"backend":"sglang","model":"bench-model","endpoint":"http://127.0.0.1:30000","attempts":1,"latency_ms":`...)
	b = strconv.AppendInt(b, int64(1000+rng.IntN(30000)), 10)
	b = append(b, `,"temperature":0.7,"top_p":0.95}}`+"\n"...)
	return b
}

// appendIDs appends a JSON array of n token ids.
func appendIDs(b []byte, rng *rand.Rand, n int) []byte {
	b = append(b, '[')
	for k := 0; k < n; k++ {
		if k > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(rng.IntN(vocab)), 10)
	}
	return append(b, ']')
}

// IDLen is the length of the ids AppendIDRecord writes, about that of a
// hash-derived id.
const IDLen = 30

// AppendIDRecord appends a record holding only the i-th of a sequence of
// distinct IDLen-character ids: what a done file costs dedupe-resume, without
// the bulk of the answers.
func AppendIDRecord(b []byte, i int) []byte {
	const hex = "0123456789abcdef"
	b = append(b, `{"id":"`...)
	x := uint64(i)*0x9e3779b97f4a7c15 + 1
	for k := 0; k < IDLen-10; k++ { // 20 scrambled hex digits
		x ^= x >> 29
		x *= 0xbf58476d1ce4e5b9
		b = append(b, hex[x>>60])
	}
	b = append(b, fmt.Sprintf("%010d", i)...) // 10 digits of i keep ids distinct
	return append(b, "\"}\n"...)
}
