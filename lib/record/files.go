package record

import (
	"io"

	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// SumTokens counts the tokens already spent in existing output files (the
// --already of budget-cut and generate). A torn last line is not counted:
// that record will be redone. Records that carry an error count nothing:
// failures never reach an output file, and a stray one spent no answer.
func SumTokens(stdin io.Reader, names []string, opt jsonl.Options, s *Scanner, mode CountMode) (tokens, records int64, err error) {
	in, err := jsonl.Open(stdin, names, ScanAhead(opt, s))
	if err != nil {
		return 0, 0, err
	}
	defer in.Close()
	for in.Next() {
		info, err := Scanned(in)
		if err != nil {
			if err := in.Invalid(err); err != nil {
				return tokens, records, err
			}
			continue
		}
		if info.HasError {
			continue
		}
		tokens += info.Tokens(mode)
		records++
	}
	return tokens, records, in.Err()
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
	opt.Prepare = func(line []byte) any {
		info, err := s.Scan(line)
		return scanned{info, err}
	}
	opt.Parallel = true
	return opt
}

// Scanned is the current record of a reader opened with ScanAhead options:
// its Info, or why it is not a valid record.
func Scanned(in *jsonl.Reader) (Info, error) {
	sc := in.Prepared().(scanned)
	return sc.info, sc.err
}
