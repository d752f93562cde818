package engine

import (
	"fmt"

	"github.com/synthpipe/synthpipe/lib/record"
)

// Several answers per prompt (--samples N). The reader turns each prompt
// record into N jobs, one per sample, before the dispatcher sees them: each
// is a request of its own to every part of the run (its budget
// reservation, its retries, its line in the output or the errors file), so
// that budgets count samples and a resume redoes exactly the missing ones.
// Sample k has the id record.SampleID(ID, k) and the seed
// record.SampleSeed(--seed, k), and carries "sample" and "prompt_id". A
// record that carries "sample" already (dedupe-resume --samples made it, or
// an errors file re-fed) is that one sample, sent with its own seed.

// sampleOf is what a record says of the sample it is: its number (0 when it
// is a prompt) and its prompt's id.
type sampleOf struct {
	k        int
	promptID string
}

// readSample reads the "sample" and "prompt_id" members of a record.
func readSample(sample, promptID []byte) (sampleOf, error) {
	k, id, err := record.ParseSample(sample, promptID)
	return sampleOf{k: k, promptID: record.IDText(id)}, err
}

// samples turns a parsed record into its jobs: itself when it is a sample
// already or --samples is 1, else one job per sample.
func (p *parser) samples(j *job, s sampleOf) ([]*job, error) {
	if s.k > 0 {
		p.seedSample(j, s.k)
		return []*job{j}, nil
	}
	if p.nSamples <= 1 {
		return []*job{j}, nil
	}
	// The thinking setting this run chose is the prompt's, chosen by its
	// id: written on each sample's line now, so that a sample re-fed from
	// the errors file (under its own id) keeps it.
	line := j.line
	if j.newThinking {
		line = addMembers(line, appendThinking(nil, j), false)
		j.newThinking = false
	}
	jobs := make([]*job, 0, p.nSamples)
	for k := 1; k <= p.nSamples; k++ {
		sj := *j
		id := record.SampleID(j.req.ID, k)
		l, err := record.SampleLine(line, p.id, j.req.ID, k)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", FlagSamples, err)
		}
		sj.line, sj.req.ID = l, id
		p.seedSample(&sj, k)
		jobs = append(jobs, &sj)
	}
	return jobs, nil
}

// seedSample sends j, sample k, with the sample's own seed.
func (p *parser) seedSample(j *job, k int) {
	var base int64
	if p.params.Seed != nil {
		base = *p.params.Seed
	}
	seed := record.SampleSeed(base, k)
	j.req.Params.Seed = &seed
	j.sample = k
}
