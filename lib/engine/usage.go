package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// maxUsageCount is the largest token count a server may report for one
// answer: token ids are below 2^31, and no context holds more.
const maxUsageCount = math.MaxInt32

// usageCheck decides what an answer used. A server's usage is what the
// budgets, the summary and the written record count, but only once it is
// plausible: a count of 0 or more, whole, within what was asked for or what
// the answer holds, and agreeing with the ids the server returned. What is
// missing or implausible is counted from the answer itself (its ids, the
// tokenizer's ids with --tokenizer, else its bytes, which no tokenizer
// beats), so that no record is written that the other tools refuse and no
// budget undercounts. The first such answer is named on stderr (even with
// -q: it is about the data); the summary counts them all.
type usageCheck struct {
	warn     func(format string, args ...any)
	once     sync.Once
	replaced atomic.Int64 // answers whose usage was counted from the answer
}

// check corrects res's counts in place; serverIDs says that res.OutputIDs
// came from the server, not from re-tokenizing the text.
func (u *usageCheck) check(j *job, res *backend.Result, serverIDs bool, server string) {
	usage := gjson.ParseBytes(res.Usage)
	var problems []string
	say := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	asked := j.req.Params.MaxTokens
	completion, why := reportedCount(usage, "completion_tokens")
	switch {
	case why != "":
		n, from := answerTokens(res, asked)
		say("completion_tokens %s; counted %d from %s", why, n, from)
		completion = n
	case serverIDs && completion != len(res.OutputIDs):
		say("completion_tokens %d, but %d output_ids came back; counted %d", completion, len(res.OutputIDs), len(res.OutputIDs))
		completion = len(res.OutputIDs)
	case completion > asked && res.OutputIDs == nil && completion > visibleBytes(res):
		n, from := answerTokens(res, asked)
		say("completion_tokens %d, more than the %d asked for and than the answer's %d bytes hold; counted %d from %s",
			completion, asked, visibleBytes(res), n, from)
		completion = n
	}
	res.CompletionTokens = completion

	prompt, why := reportedCount(usage, "prompt_tokens")
	switch {
	case why != "" && !usage.Get("prompt_tokens").Exists() && j.hasPromptTokens:
		// No figure, and none needed: the record states its prompt size.
	case why != "":
		say("prompt_tokens %s; counted %d from the request", why, j.promptTokens)
		prompt = j.promptTokens
	case j.req.InputIDs != nil && prompt != len(j.req.InputIDs):
		say("prompt_tokens %d for a prompt of %d input_ids; counted %d", prompt, len(j.req.InputIDs), len(j.req.InputIDs))
		prompt = len(j.req.InputIDs)
	}
	res.PromptTokens = prompt

	if res.Cost != nil {
		if c := *res.Cost; math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
			say("cost %v is not an amount of 0 or more; counted at the worst-case price", c)
			res.Cost = nil
		}
	}
	res.CachedTokens = min(max(res.CachedTokens, 0), prompt)
	res.ReasoningTokens = min(max(res.ReasoningTokens, 0), completion)

	if len(problems) == 0 {
		return
	}
	res.Usage = countedUsage(res.Usage, res)
	u.replaced.Add(1)
	u.once.Do(func() {
		u.warn("%s: implausible usage in the answer to %s: %s (further answers like it are counted the same way; the summary says how many)",
			server, record.ShowID(j.req.ID), strings.Join(problems, "; "))
	})
}

// reportedCount is a usage member as a token count, with why it cannot be
// one ("" when it can).
func reportedCount(usage gjson.Result, key string) (int, string) {
	if !usage.IsObject() {
		return 0, "missing (the answer has no usage)"
	}
	v := usage.Get(key)
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return 0, "missing"
	case v.Type != gjson.Number:
		return 0, fmt.Sprintf("is %s, not a number", v.Raw)
	}
	f := v.Float()
	switch {
	case f < 0:
		return 0, fmt.Sprintf("%s is negative", v.Raw)
	case f != math.Trunc(f):
		return 0, fmt.Sprintf("%s is not a whole number", v.Raw)
	case f > maxUsageCount:
		return 0, fmt.Sprintf("%s is more than any answer holds", v.Raw)
	}
	n, err := strconv.Atoi(v.Raw)
	if err != nil {
		n = int(f) // 1e3, 1000.0: whole, and small enough
	}
	return n, ""
}

// countedUsage is the usage written with an answer whose usage was
// corrected: the server's object with the token counts that were counted,
// and without a cost that was not an amount, so that whoever sums the
// usage later sums what the budgets counted.
func countedUsage(raw json.RawMessage, res *backend.Result) json.RawMessage {
	if !jsonl.Valid(raw) || !gjson.ParseBytes(raw).IsObject() {
		raw = []byte(`{}`)
	}
	out := []byte(raw)
	set := func(key string, v any) {
		if next, err := sjson.SetBytes(out, key, v); err == nil {
			out = next
		}
	}
	set("prompt_tokens", res.PromptTokens)
	set("completion_tokens", res.CompletionTokens)
	if gjson.GetBytes(out, "total_tokens").Exists() {
		set("total_tokens", res.PromptTokens+res.CompletionTokens)
	}
	if res.Cost == nil && gjson.GetBytes(out, "cost").Exists() {
		if next, err := sjson.DeleteBytes(out, "cost"); err == nil {
			out = next
		}
	}
	return out
}

// answerTokens counts an answer's tokens from the answer itself: its ids
// when there are any, else its bytes (a token is at least one byte), at most
// what was asked for.
func answerTokens(res *backend.Result, asked int) (int, string) {
	if res.OutputIDs != nil {
		return len(res.OutputIDs), "its output_ids"
	}
	n := visibleBytes(res)
	if n > asked {
		return asked, fmt.Sprintf("the %d asked for (its %d bytes hold no more; pass --tokenizer to count exactly)", asked, n)
	}
	return n, "its bytes, an upper bound (pass --tokenizer to count exactly)"
}

// visibleBytes is the size of what an answer returned: text, reasoning and
// tool calls.
func visibleBytes(res *backend.Result) int {
	return len(res.Text) + len(res.Reasoning) + len(res.ToolCalls)
}
