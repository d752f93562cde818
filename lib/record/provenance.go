package record

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/tidwall/gjson"
)

// Resume that knows what it resumes: the records a run resumes (the done
// files of dedupe-resume, the --already files of generate) say in "gen" who
// made them. Provenance tallies, per field that changes what an answer
// teaches, the values seen and how many records had each, so that a run can
// say when it would mix answers of another model, backend or sampling
// parameters into one dataset. Compared: gen.backend, gen.model and
// gen.params without max_tokens (generate caps it per request at what the
// prompt leaves of the context length, so it differs within one run) and
// without seed's per-sample value (gen.sample_seed is not in params). Not
// compared: the endpoint (several servers serve one model), attempts,
// latency.

// Provenance fields compared, in the order they are reported.
var provenanceFields = [...]string{"backend", "model", "params"}

// Provenance tallies the gen members of records.
type Provenance struct {
	counts [len(provenanceFields)]map[string]int64
	order  [len(provenanceFields)][]string // values in the order first seen
	params map[string]string               // raw params -> canonical, since one run's records share them
	// Records counts the records with a gen member.
	Records int64
}

// Add tallies one record's raw gen member (nil: the record has none).
func (p *Provenance) Add(gen []byte) {
	if len(gen) == 0 || gen[0] != '{' {
		return
	}
	p.Records++
	g := gjson.ParseBytes(gen)
	p.add(0, g.Get("backend").String())
	p.add(1, g.Get("model").String())
	raw := g.Get("params").Raw
	canon, ok := p.params[raw]
	if !ok {
		canon = CanonicalParams([]byte(raw))
		if p.params == nil {
			p.params = map[string]string{}
		}
		if len(p.params) < 1024 { // a few per run; never unbounded
			p.params[raw] = canon
		}
	}
	p.add(2, canon)
}

func (p *Provenance) add(i int, v string) {
	if p.counts[i] == nil {
		p.counts[i] = map[string]int64{}
	}
	if _, seen := p.counts[i][v]; !seen {
		p.order[i] = append(p.order[i], v)
	}
	p.counts[i][v]++
}

// CanonicalParams is a gen.params object as compared: its members sorted,
// max_tokens left out; "" for none.
func CanonicalParams(raw []byte) string {
	var m map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil || m == nil {
		return ""
	}
	delete(m, "max_tokens")
	b, _ := json.Marshal(m) // map keys come out sorted
	return string(b)
}

// Run is what this run makes its records with; an empty value is not
// compared (generate without --model on SGLang names no model).
type Run struct {
	Backend, Model string
	Params         string // CanonicalParams of the run's gen.params
}

// Difference is one field whose values differ.
type Difference struct {
	Field string
	// Values with how many records had each, most first; with a Run, the
	// values that are not the run's.
	Values []string
	Counts []int64
	Run    string // the run's value; "" when compared among the records
}

// String says it for a message: "a" on 12 records, "b" on 3 records.
func (d Difference) String() string {
	s := ""
	for i, v := range d.Values {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s on %d record", showValue(v), d.Counts[i])
		if d.Counts[i] != 1 {
			s += "s"
		}
	}
	if d.Run != "" {
		s += "; this run: " + showValue(d.Run)
	}
	return s
}

func showValue(v string) string {
	if v == "" {
		return "(none)"
	}
	if len(v) > 0 && v[0] == '{' {
		return v
	}
	return strconv.Quote(v)
}

// Mixed lists the fields whose values differ among the records.
func (p *Provenance) Mixed() []Difference {
	var out []Difference
	for i, f := range provenanceFields {
		if len(p.order[i]) > 1 {
			out = append(out, p.difference(i, f, ""))
		}
	}
	return out
}

// Against lists the fields where some records differ from run.
func (p *Provenance) Against(run Run) []Difference {
	var out []Difference
	for i, want := range [...]string{run.Backend, run.Model, run.Params} {
		if want == "" || p.counts[i] == nil {
			continue
		}
		if len(p.order[i]) == 1 && p.order[i][0] == want {
			continue
		}
		d := p.difference(i, provenanceFields[i], want)
		if len(d.Values) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// difference lists field i's values, most records first, leaving out run.
func (p *Provenance) difference(i int, field, run string) Difference {
	d := Difference{Field: field, Run: run}
	vals := append([]string(nil), p.order[i]...)
	sort.SliceStable(vals, func(a, b int) bool { return p.counts[i][vals[a]] > p.counts[i][vals[b]] })
	for _, v := range vals {
		if run != "" && v == run {
			continue
		}
		d.Values = append(d.Values, v)
		d.Counts = append(d.Counts, p.counts[i][v])
	}
	return d
}
