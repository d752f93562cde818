package record

import (
	"fmt"
	"io"

	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// NoCount says what a record lacks when it carries no token count of any
// kind (Info.Counted false and no --path count): the tools that count
// tokens name such records instead of counting them as 0 in silence.
const NoCount = "carries no token count (no prompt_tokens, completion_tokens, input_ids, output_ids or usage)"

// CountHint says how budget-cut counts records that carry no token count.
const CountHint = "--path names the number that counts them (generate --output-format openai-batch: " +
	"--path response.body.usage.total_tokens), or --count records cuts by records"

// Sum is what SumTokens read.
type Sum struct {
	Tokens  int64 // under the mode (or the Scanner's count path)
	Records int64 // records without an error
	// Uncounted records carry no token count (see NoCount): counted as 0
	// tokens; FirstUncounted names the first one (FILE:LINE: record (id "x")).
	Uncounted      int64
	FirstUncounted string
	// Provenance is who made the records (their gen members).
	Provenance Provenance
}

// SumTokens counts the tokens already spent in existing output files (the
// --already of budget-cut and generate). A torn last line is not counted:
// that record will be redone. Records that carry an error count nothing:
// failures never reach an output file, and a stray one spent no answer.
func SumTokens(stdin io.Reader, names []string, opt jsonl.Options, s *Scanner, mode CountMode) (Sum, error) {
	var sum Sum
	in, err := jsonl.Open(stdin, names, ScanAhead(opt, s))
	if err != nil {
		return sum, err
	}
	defer in.Close()
	for in.Next() {
		info, err := Scanned(in)
		if err != nil {
			if err := in.Invalid(err); err != nil {
				return sum, err
			}
			continue
		}
		if info.HasError {
			continue
		}
		if !info.Counted && !info.HasCustom {
			if sum.Uncounted == 0 {
				sum.FirstUncounted = in.Pos() + ": record" + IDNote(info)
			}
			sum.Uncounted++
		}
		sum.Tokens += info.Tokens(mode)
		sum.Records++
		sum.Provenance.Add(info.Gen)
	}
	return sum, in.Err()
}

// IDNote is " (id X)" for a record with an id, for messages that name it.
func IDNote(info Info) string {
	if info.HasID {
		return fmt.Sprintf(" (id %s)", ShowID(info.ID))
	}
	return ""
}

// scanned is a line scanned ahead (see ScanAhead).
type scanned struct {
	info Info
	err  error
}

// ScanAhead returns opt set to scan every record with s as the reader reads
// it, on the spare CPUs for large files (see jsonl.Options.Parallel); read
// each result with Scanned. s is only read by Scan, so sharing it between
// goroutines is safe.
func ScanAhead(opt jsonl.Options, s *Scanner) jsonl.Options {
	opt.Prepare = func(line []byte, reuse any) any {
		sc, _ := reuse.(*scanned)
		if sc == nil {
			sc = new(scanned)
		}
		sc.info, sc.err = s.Scan(line)
		return sc
	}
	opt.Parallel = true
	return opt
}

// Scanned is the current record of a reader opened with ScanAhead options:
// its Info, or why it is not a valid record.
func Scanned(in *jsonl.Reader) (Info, error) {
	sc := in.Prepared().(*scanned)
	return sc.info, sc.err
}
