package tokstat

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/record"
)

// detail is what the HTML report draws beyond the table's figures: the
// token limits answers were asked under and soft failures by kind (a
// conversation's turns are in stats.conv, which the table shows too).
// Only --html reads these fields, so the other outputs keep their speed.
type detail struct {
	maxTokens map[int64]int64 // gen.params.max_tokens -> answers asked under it
	soft      map[string]int64
}

func newDetail() *detail {
	return &detail{maxTokens: map[int64]int64{}, soft: map[string]int64{}}
}

// Soft failures: answers written, yet not what was asked for (as generate's
// summary and status file count them), and conversations cut short.
const (
	softTruncated = "truncated (length)"
	softAborted   = "aborted"
	softFiltered  = "content filter"
	// a turn of a conversation cut at max_tokens (the conversation ends
	// there, "ended": "length")
	softTurnTruncated = "turn truncated (length)"
)

// add reads one record's detail fields. Records with an error are only
// errors: they have no answer to describe.
// isLimit reports whether a max_tokens is one to draw: a whole number from
// 1 to the longest answer counted (lengths are held as uint32). Another
// (-5, 1e300, "NaN") limits nothing, and drawn it would stretch the
// histogram's axis past what its labels can say.
func isLimit(r gjson.Result) bool {
	return r.Type == gjson.Number && r.Num >= 1 && r.Num <= math.MaxUint32 && r.Num == math.Trunc(r.Num)
}

func (d *detail) add(line []byte, info record.Info) {
	if info.HasError {
		return
	}
	r := gjson.GetManyBytes(line, "gen.params.max_tokens", "max_tokens")
	switch {
	case isLimit(r[0]):
		d.maxTokens[r[0].Int()]++
	case isLimit(r[1]):
		d.maxTokens[r[1].Int()]++
	}
	switch info.FinishReason {
	case "length":
		d.soft[softTruncated]++
	case "abort":
		d.soft[softAborted]++
	case "content_filter":
		d.soft[softFiltered]++
	}
	if info.Conversation != nil {
		for _, t := range info.Conversation.Turns {
			if t.FinishReason == "length" {
				d.soft[softTurnTruncated]++
			}
		}
	}
}

// onlyConversations reports whether every answer of s is a conversation:
// its charts are then of turns.
func onlyConversations(s *stats) bool {
	return s.conv != nil && s.conv.count == s.answers()
}

// limits lists the max_tokens values, the most used first.
func (d *detail) limits() []int64 {
	var out []int64
	for v := range d.maxTokens {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b int64) int { return cmp.Or(cmp.Compare(d.maxTokens[b], d.maxTokens[a]), cmp.Compare(a, b)) })
	return out
}

// countsByName is a count map as bars, the largest first.
func countsByName(m map[string]int64) []chartBar {
	var out []chartBar
	for k, v := range m {
		out = append(out, chartBar{label: k, value: float64(v)})
	}
	slices.SortFunc(out, func(a, b chartBar) int { return cmp.Or(cmp.Compare(b.value, a.value), cmp.Compare(a.label, b.label)) })
	return out
}

// turnBars is the turns-per-conversation map as bars, by number of turns.
func turnBars(m map[int64]int64) []chartBar {
	var keys []int64
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []chartBar
	for _, k := range keys {
		label := strconv.FormatInt(k, 10) + " turns"
		if k == 1 {
			label = "1 turn"
		}
		out = append(out, chartBar{label: label, value: float64(m[k])})
	}
	return out
}
