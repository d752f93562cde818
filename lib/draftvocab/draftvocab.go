// Package draftvocab chooses an EAGLE-3 draft model's reduced vocabulary
// from the tokens it is trained on, as SpecForge does
// (specforge/data/preprocessing.py: generate_vocab_mapping_file counts the
// loss-masked tokens, process_token_dict_to_mappings keeps the most
// frequent), so that a mapping made here is the one SpecForge would make
// from the same samples in the same order.
package draftvocab

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
)

// Counter counts the loss-masked tokens of training samples. It keeps the
// order in which tokens were first seen: SpecForge's Counter keeps that
// insertion order, and its most_common breaks ties by it.
type Counter struct {
	counts map[int]int64
	order  []int // tokens in the order first seen
	seen   []int // scratch: one sample's ids
}

// NewCounter returns an empty counter.
func NewCounter() *Counter { return &Counter{counts: map[int]int64{}} }

// AddSample counts one sample's loss-masked ids. Within a sample, tokens
// new to the counter are added in increasing id order: SpecForge counts a
// sample with torch's unique(), which returns its ids sorted, and updates
// its Counter from that.
func (c *Counter) AddSample(masked []int) {
	c.seen = append(c.seen[:0], masked...)
	slices.Sort(c.seen)
	for i, id := range c.seen {
		if i > 0 && c.seen[i-1] == id {
			c.counts[id]++
			continue
		}
		if _, ok := c.counts[id]; !ok {
			c.order = append(c.order, id)
		}
		c.counts[id]++
	}
}

// Distinct is the number of distinct tokens counted.
func (c *Counter) Distinct() int { return len(c.order) }

// Mapping is a draft vocabulary, in the fields SpecForge saves (d2t, t2d)
// and the sizes and counts it was chosen from.
type Mapping struct {
	DraftVocabSize  int `json:"draft_vocab_size"`
	TargetVocabSize int `json:"target_vocab_size"`
	// D2T holds offsets: draft id i is target id i + D2T[i].
	D2T []int `json:"d2t"`
	// T2D tells, for each target id, whether the draft has it.
	T2D []bool `json:"t2d"`
	// Counts are the loss-masked tokens counted, as [id, count] pairs in the
	// order first seen (the order that breaks ties), before any padding.
	Counts [][2]int64 `json:"counts"`
	// Covered is the share of the counted tokens the draft vocabulary holds
	// (the "top N token frequency ratio" SpecForge prints); not written.
	Covered float64 `json:"-"`
}

// Mapping chooses the draft vocabulary of draft tokens for a target model of
// target tokens:
//
//  1. fewer distinct tokens than draft: the lowest ids not counted are added
//     with count 0, in increasing order, until there are draft of them (the
//     ids below draft only, as SpecForge takes them from range(draft));
//  2. the draft most frequent tokens are kept, ties going to the token seen
//     first (Counter.most_common is a stable sort by count);
//  3. the kept ids, sorted, give d2t[i] = id[i] - i and t2d[id] = true.
func (c *Counter) Mapping(draft, target int) (*Mapping, error) {
	if draft <= 0 || target <= 0 {
		return nil, fmt.Errorf("vocabulary sizes must be positive (draft %d, target %d)", draft, target)
	}
	if draft > target {
		return nil, fmt.Errorf("a draft vocabulary of %d is larger than the target's %d", draft, target)
	}
	m := &Mapping{DraftVocabSize: draft, TargetVocabSize: target, Counts: make([][2]int64, len(c.order))}
	var total, kept int64
	for i, id := range c.order {
		if id >= target {
			return nil, fmt.Errorf("token %d is past the target vocabulary of %d: the samples are not this model's (or give its vocab_size)", id, target)
		}
		m.Counts[i] = [2]int64{int64(id), c.counts[id]}
		total += c.counts[id]
	}
	order := c.padded(draft)
	// A stable sort keeps first-seen order among equal counts.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(c.counts[b], c.counts[a]) })
	used := slices.Clone(order[:min(draft, len(order))])
	slices.Sort(used)
	m.D2T = make([]int, len(used))
	m.T2D = make([]bool, target)
	for i, id := range used { // all below target: counted ids were checked, padding is below draft
		m.D2T[i] = id - i
		m.T2D[id] = true
		kept += c.counts[id]
	}
	if total > 0 {
		m.Covered = float64(kept) / float64(total)
	}
	return m, nil
}

// padded is the counted tokens in first-seen order, followed by the lowest
// ids below draft not counted, as many as it takes to reach draft tokens.
// (SpecForge's releases before it sorted the missing ids took them in a
// Python set's order, which is increasing unless counted ids at or past
// draft leave a few high ids missing; the current one takes them sorted.)
func (c *Counter) padded(draft int) []int {
	order := slices.Clone(c.order)
	for id := 0; id < draft && len(order) < draft; id++ {
		if _, ok := c.counts[id]; !ok {
			order = append(order, id)
		}
	}
	return order
}

// JSON is the mapping as one JSON document.
func (m *Mapping) JSON() []byte {
	b, _ := json.Marshal(m) // ints and bools: cannot fail
	return append(b, '\n')
}
