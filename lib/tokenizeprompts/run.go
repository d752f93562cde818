package tokenizeprompts

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// invalidHint ends the message of a record that stops the run.
const invalidHint = " (fix or remove that line, or pass --skip-invalid to count and skip such lines)"

func run(c *cli.Context) (err error) {
	cfg, err := parse(c)
	if err != nil {
		return err
	}
	in, err := jsonl.Open(c.App.Reader, c.Args().Slice(), cfg.input)
	if err != nil {
		return err
	}
	defer in.Close()
	out := jsonl.NewWriter(c.App.Writer)
	defer func() { // what is done reaches stdout even when we fail
		if ferr := out.Flush(); err == nil {
			err = ferr
		}
	}()

	var sum summary
	p := pipeline[sourceLine, converted]{
		workers: cfg.jobs,
		produce: func(ctx context.Context, send func(sourceLine) bool) error {
			for in.Next() {
				// The reader reuses its buffer: the worker gets a copy.
				if !send(sourceLine{pos: in.Pos(), line: append([]byte(nil), in.Bytes()...)}) {
					return nil
				}
			}
			return in.Err()
		},
		work: cfg.convert.convert,
		consume: func(r converted) error {
			if err := sum.add(r, cfg.input.SkipInvalid); err != nil {
				return err
			}
			if r.out == nil {
				return nil
			}
			if err := out.Write(r.out); err != nil {
				return err
			}
			if cfg.limit > 0 && sum.written >= cfg.limit {
				sum.limitReached = true
				return errStop
			}
			return nil
		},
		idle: out.Flush,
	}
	err = p.run(c.Context)
	if err == errStop {
		err = nil
	}
	if err == nil && !cfg.quiet {
		sum.invalid += in.Stats().Invalid
		cliutil.Notef(c.App.ErrWriter, c.App.Name, "%s", sum.String(cfg))
	}
	return err
}

// summary counts what happened to the records, in input order.
type summary struct {
	read, written, tooLong, truncated, invalid int64
	tokens                                     int64
	longest, longestDropped                    int
	longestID, longestDroppedID                string
	limitReached                               bool
}

// add counts one record; an invalid one ends the run unless skipInvalid.
func (s *summary) add(r converted, skipInvalid bool) error {
	s.read++
	switch {
	case r.err != nil:
		if !skipInvalid {
			return exitcode.DataErrorf("%s: %v%s", r.pos, r.err, invalidHint)
		}
		s.invalid++
	case r.tooLong:
		s.tooLong++
		if r.fullCount > s.longestDropped {
			s.longestDropped, s.longestDroppedID = r.fullCount, r.id
		}
	default:
		s.written++
		s.tokens += int64(r.tokens)
		if r.tokens != r.fullCount {
			s.truncated++
		}
		if r.tokens > s.longest || s.written == 1 {
			s.longest, s.longestID = r.tokens, r.id
		}
	}
	return nil
}

// String is the summary line: "read 9 records, wrote 7 (1,234 prompt
// tokens; longest 321, id "a"); dropped 1 longer than 400 tokens (longest
// 512, id "b"); skipped 1 invalid".
func (s *summary) String(cfg *config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "read %s, wrote %s (%s prompt tokens", count(s.read, "record"), cliutil.Thousands(s.written), cliutil.Thousands(s.tokens))
	if s.written > 0 {
		fmt.Fprintf(&b, "; longest %s, id %q", cliutil.Thousands(int64(s.longest)), s.longestID)
	}
	b.WriteString(")")
	if s.tooLong > 0 {
		fmt.Fprintf(&b, "; dropped %s longer than %s tokens (longest %s, id %q)", cliutil.Thousands(s.tooLong), cliutil.Thousands(int64(cfg.convert.maxTokens)), cliutil.Thousands(int64(s.longestDropped)), s.longestDroppedID)
	}
	if s.truncated > 0 {
		fmt.Fprintf(&b, "; cut %s to %s tokens (--truncate %s)", cliutil.Thousands(s.truncated), cliutil.Thousands(int64(cfg.convert.maxTokens)), cfg.convert.truncate)
	}
	if s.invalid > 0 {
		fmt.Fprintf(&b, "; skipped %s invalid", cliutil.Thousands(s.invalid))
	}
	if s.limitReached {
		fmt.Fprintf(&b, "; stopped at --limit %s", cliutil.Thousands(cfg.limit))
	}
	return b.String()
}

// count writes "1 record", "2,000 records".
func count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return cliutil.Thousands(n) + " " + noun + "s"
}
