package tokstat

import (
	"cmp"
	"slices"

	"github.com/synthpipe/synthpipe/lib/record"
)

// noFinishReason names the records that have no finish_reason.
const noFinishReason = "none"

// stats is the health of one group of records (a file, a --by value, or all).
type stats struct {
	name             string
	records          int64
	promptTokens     int64
	completionTokens int64
	errors           int64
	truncated        int64
	duplicates       int64
	missingIDs       int64
	invalidLines     int64
	torn             int64
	finishReasons    map[string]int64
	soft             map[string]int64 // soft failures by kind (lib/softfail)
	lengths          []uint32         // completion tokens of each answer, for exact percentiles
	conv             *convStats       // regenerated conversations, nil until one is read
	// With --max-train-length: the records longer than it, and the
	// tokens a trainer with that sequence length cuts off them.
	trainCut record.TrainCut
	detail   *detail // only for --html
}

func newStats(name string) *stats {
	return &stats{name: name, finishReasons: map[string]int64{}, soft: map[string]int64{}}
}

// add counts one record. A record that carries an error counts as a record
// and an error but spends no tokens, as budget-cut --already counts it.
func (s *stats) add(info record.Info, duplicate bool) {
	s.records++
	if duplicate {
		s.duplicates++
	}
	if !info.HasID {
		s.missingIDs++
	}
	reason := info.FinishReason
	if reason == "" {
		reason = noFinishReason
	}
	s.finishReasons[reason]++
	if info.HasError {
		s.errors++
		return
	}
	if info.Truncated() {
		s.truncated++
	}
	s.addTokens(info)
	s.lengths = append(s.lengths, uint32(min(info.CompletionTokens, 1<<32-1)))
	if info.Conversation != nil {
		if s.conv == nil {
			s.conv = newConvStats()
		}
		s.conv.add(info.Conversation)
	}
}

// addTrainLength counts what a trainer with sequence length maxLength
// cuts off the record (nothing when maxLength is 0).
func (s *stats) addTrainLength(info record.Info, maxLength int64) {
	s.trainCut.MaxLength = maxLength
	s.trainCut.Add(info)
}

// pastTrainShare is the share of the tokens a trainer would see that it
// cuts off.
func (s *stats) pastTrainShare() float64 {
	if s.totalTokens() == 0 {
		return 0
	}
	return float64(s.trainCut.Tokens) / float64(s.totalTokens())
}

// addSoft counts an answer's soft failures.
func (s *stats) addSoft(kinds []string) {
	for _, k := range kinds {
		s.soft[k]++
	}
}

// addTokens counts only the tokens of a record: all that --total needs.
func (s *stats) addTokens(info record.Info) {
	if info.HasError {
		return
	}
	s.promptTokens += info.PromptTokens
	s.completionTokens += info.CompletionTokens
}

// sortByName orders groups by name.
func sortByName(groups []*stats) {
	slices.SortFunc(groups, func(a, b *stats) int { return cmp.Compare(a.name, b.name) })
}

// answers is the number of records without an error.
func (s *stats) answers() int64 { return s.records - s.errors }

// totalTokens is prompt plus completion tokens.
func (s *stats) totalTokens() int64 { return s.promptTokens + s.completionTokens }

// truncatedShare is the fraction of answers cut at their length limit.
func (s *stats) truncatedShare() float64 {
	if s.answers() == 0 {
		return 0
	}
	return float64(s.truncated) / float64(s.answers())
}

// distribution summarizes completion lengths with exact percentiles.
type distribution struct {
	count              int
	mean               float64
	p50, p90, p99, max uint32
}

// distribution sorts the lengths (once) and reads the percentiles by the
// nearest-rank method: p is the smallest length with at least p% of the
// answers at or below it.
func (s *stats) distribution() distribution { return distributionOf(s.lengths) }

// distributionOf sorts v in place and summarizes it.
func distributionOf(v []uint32) distribution {
	n := len(v)
	if n == 0 {
		return distribution{}
	}
	slices.Sort(v)
	rank := func(p int) uint32 { return v[(p*n+99)/100-1] }
	var sum uint64
	for _, x := range v {
		sum += uint64(x)
	}
	return distribution{count: n, mean: float64(sum) / float64(n),
		p50: rank(50), p90: rank(90), p99: rank(99), max: v[n-1]}
}

// budgetUse is a group's standing against --budget.
type budgetUse struct {
	budget, used, left int64
	percent            float64
}

func (s *stats) budgetUse(budget int64) budgetUse {
	u := budgetUse{budget: budget, used: s.totalTokens(), left: max(budget-s.totalTokens(), 0)}
	if budget > 0 {
		u.percent = 100 * float64(u.used) / float64(budget)
	}
	return u
}

// reasonsByCount lists the finish reasons of all groups, the most frequent in
// total first, so that the table's columns are the same for every group.
func reasonsByCount(total *stats) []string { return byCount(total.finishReasons) }

// byCount lists the keys of a count map, the largest count first.
func byCount(m map[string]int64) []string {
	names := make([]string, 0, len(m))
	for r := range m {
		names = append(names, r)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b))
	})
	return names
}
