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
	in, err := jsonl.Open(stdin, names, opt)
	if err != nil {
		return 0, 0, err
	}
	defer in.Close()
	for in.Next() {
		info, err := s.Scan(in.Bytes())
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
