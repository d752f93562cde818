package record

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/tidwall/sjson"

	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// Several answers per prompt (generate --samples N). One owner for the
// rule, since generate makes the samples and dedupe-resume finds which are
// missing: sample k (1-based) of the prompt with id ID is its own record
// with the id SampleID(ID, k), and carries FieldSample (k) and
// FieldPromptID (ID).

// SampleSep joins a prompt's id and its sample number.
const SampleSep = "#"

// MaxSamples bounds --samples: more answers to one prompt than this is a
// typo, not a dataset.
const MaxSamples = 1 << 16

// SampleID is the id of sample k of the prompt id: the prompt's own id for
// k = 1, so that an output made without --samples holds the first sample of
// each prompt and a later run with --samples N adds only the others; id#k
// for k >= 2.
func SampleID(id string, k int) string {
	if k <= 1 {
		return id
	}
	return id + SampleSep + strconv.Itoa(k)
}

// SampleSeed is the sampling seed of sample k: base + k - 1, where base is
// --seed (0 when it is not given), so that the samples of one prompt get
// distinct seeds and a rerun sends each sample with the seed it had.
func SampleSeed(base int64, k int) int64 { return base + int64(k) - 1 }

// readSample reads a record's sample number and its prompt's id.
func readSample(in *Info, sample, promptID []byte) (err error) {
	in.Sample, in.PromptID, err = ParseSample(sample, promptID)
	return err
}

// ParseSample reads the raw FieldSample and FieldPromptID members of a
// record: 0 for a record without "sample" (or with null), which is no
// sample.
func ParseSample(sample, promptID []byte) (int, string, error) {
	if len(sample) == 0 || isNull(sample) {
		return 0, "", nil
	}
	k, err := strconv.Atoi(string(sample))
	if err != nil || k < 1 || k > MaxSamples {
		return 0, "", fmt.Errorf("%q is %s: want a sample number from 1 to %d (generate --samples writes it)", FieldSample, sample, MaxSamples)
	}
	if len(promptID) == 0 || promptID[0] != '"' {
		return 0, "", fmt.Errorf("%q is %d but there is no string %q: a sample names the id of its prompt", FieldSample, k, FieldPromptID)
	}
	return k, DecodeID(promptID), nil
}

// SampleLine is a prompt record's line made into sample k's: its id (at
// idPath) replaced by SampleID(promptID, k), sample 1 keeping it, and
// FieldPromptID and FieldSample added before the closing brace. line is
// one valid JSON object without those members; it is not modified.
func SampleLine(line []byte, idPath IDPath, promptID string, k int) ([]byte, error) {
	if k > 1 {
		var err error
		if line, err = sjson.SetBytes(bytes.Clone(line), idPath.String(), SampleID(promptID, k)); err != nil {
			return nil, fmt.Errorf("cannot write sample %d's id at --id-path %q: %v", k, idPath, err)
		}
	}
	end := bytes.LastIndexByte(line, '}')
	head := bytes.TrimRight(line[:end], " \t\r\n")
	out := make([]byte, 0, len(head)+len(promptID)+40)
	out = append(out, head...)
	if head[len(head)-1] != '{' {
		out = append(out, ',')
	}
	out = append(out, `"`+FieldPromptID+`":`...)
	out = jsonl.AppendString(out, promptID)
	out = append(out, `,"`+FieldSample+`":`...)
	out = strconv.AppendInt(out, int64(k), 10)
	return append(out, '}'), nil
}
