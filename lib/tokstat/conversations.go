package tokstat

import (
	"strconv"

	"github.com/synthpipe/synthpipe/lib/record"
)

// convStats is what a group's regenerated conversations (generate --turns
// all) say beyond their tokens: how many turns each made, why each ended,
// and each turn's answer: max_tokens holds per turn, so a turn's length and
// finish reason are what to look at.
type convStats struct {
	count       int64
	perConv     []uint32         // generated turns of each conversation
	byTurns     map[int64]int64  // generated turns -> conversations
	ended       map[string]int64 // why they ended: done, length, mismatch, budget, ...
	turnLengths []uint32         // completion tokens of each turn
	turnFinish  map[string]int64
}

func newConvStats() *convStats {
	return &convStats{byTurns: map[int64]int64{}, ended: map[string]int64{}, turnFinish: map[string]int64{}}
}

// add counts one conversation.
func (c *convStats) add(ci *record.ConversationInfo) {
	c.count++
	n := len(ci.Turns)
	c.perConv = append(c.perConv, uint32(min(n, 1<<32-1)))
	c.byTurns[int64(n)]++
	ended := ci.Ended
	if ended == "" {
		ended = noFinishReason
	}
	c.ended[ended]++
	for _, t := range ci.Turns {
		c.turnLengths = append(c.turnLengths, uint32(min(max(t.Completion, 0), 1<<32-1)))
		reason := t.FinishReason
		if reason == "" {
			reason = noFinishReason
		}
		c.turnFinish[reason]++
	}
}

// turns is how many turns the conversations made in all.
func (c *convStats) turns() int64 { return int64(len(c.turnLengths)) }

// conversations returns s's conversation figures, empty when it has none,
// so that every group of a table has its columns.
func (s *stats) conversations() *convStats {
	if s.conv == nil {
		return newConvStats()
	}
	return s.conv
}

// convSections are the table's columns for conversations: their number,
// the turns each made (mean and percentiles), each turn's completion length,
// and why they ended (one column per reason, the most frequent first).
func convSections(total *stats) [][]metric {
	if total.conv == nil {
		return nil
	}
	turns := []metric{
		count("conversations", "convs", func(r row) int64 { return r.conv.count }),
		count("turns", "turns", func(r row) int64 { return r.conv.turns() }),
		{"turns_mean", "turns/conv", kindMean, func(r row) float64 { return r.turnsDist.mean }},
		count("turns_p50", "p50", func(r row) int64 { return int64(r.turnsDist.p50) }),
		count("turns_p90", "p90", func(r row) int64 { return int64(r.turnsDist.p90) }),
		count("turns_max", "max", func(r row) int64 { return int64(r.turnsDist.max) }),
	}
	lengths := []metric{
		{"turn_completion_mean", "turn mean", kindMean, func(r row) float64 { return r.turnDist.mean }},
		count("turn_completion_p50", "p50", func(r row) int64 { return int64(r.turnDist.p50) }),
		count("turn_completion_p90", "p90", func(r row) int64 { return int64(r.turnDist.p90) }),
		count("turn_completion_p99", "p99", func(r row) int64 { return int64(r.turnDist.p99) }),
		count("turn_completion_max", "max", func(r row) int64 { return int64(r.turnDist.max) }),
	}
	var ended []metric
	for _, reason := range byCount(total.conv.ended) {
		ended = append(ended, count("ended_"+reason, "ended "+reason, func(r row) int64 { return r.conv.ended[reason] }))
	}
	return [][]metric{turns, lengths, ended}
}

// jsonConversations is a group's conversations in --json.
type jsonConversations struct {
	Count             int64            `json:"count"`
	Turns             int64            `json:"turns"`
	TurnsPerConv      jsonDistribution `json:"turns_per_conversation"`
	ByTurns           map[string]int64 `json:"conversations_by_turns"`
	Ended             map[string]int64 `json:"ended"`
	TurnCompletion    jsonDistribution `json:"turn_completion_length"`
	TurnFinishReasons map[string]int64 `json:"turn_finish_reasons"`
}

func (r row) jsonConversations() *jsonConversations {
	c := r.conv
	by := map[string]int64{}
	for n, k := range c.byTurns {
		by[strconv.FormatInt(n, 10)] = k
	}
	return &jsonConversations{Count: c.count, Turns: c.turns(), TurnsPerConv: r.turnsDist.json(), ByTurns: by,
		Ended: c.ended, TurnCompletion: r.turnDist.json(), TurnFinishReasons: c.turnFinish}
}
