package totrain

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/record"
)

// The sample viewer, --show: samples as the trainer will see them, the
// rendered text with its special tokens, the trained spans marked.

// showFilter is which samples --show prints: the first count, or those ids
// (every sample of such a record: under --format turns, each of its turns).
type showFilter struct {
	count   int
	ids     map[string]bool // true: not shown yet
	order   []string        // the ids as given
	pending int             // ids not yet shown
	last    string          // the id last shown: its record's further turns are wanted too
}

// parseShow reads --show's values: one number (the first N samples) or ids.
func parseShow(values []string) (*showFilter, error) {
	if len(values) == 1 {
		if n, err := strconv.Atoi(values[0]); err == nil {
			if n < 1 {
				return nil, cliutil.Usagef("--show %d: show at least 1 sample (or name ids)", n)
			}
			return &showFilter{count: n}, nil
		}
	}
	f := &showFilter{ids: map[string]bool{}}
	for _, id := range values {
		if id == "" {
			return nil, cliutil.Usagef("--show: an empty id (want a number of samples or ids)")
		}
		if _, seen := f.ids[id]; !seen {
			f.ids[id] = true
			f.order = append(f.order, id)
			f.pending++
		}
	}
	return f, nil
}

// wants reports whether the sample with this id is to be shown, and counts
// it as shown.
func (f *showFilter) wants(id string) bool {
	if f.ids == nil {
		if f.count <= 0 {
			return false
		}
		f.count--
		return true
	}
	if !f.ids[id] {
		return id == f.last && id != ""
	}
	f.ids[id] = false
	f.pending--
	f.last = id
	return true
}

// done reports whether everything asked for was shown; the reading stops
// there, once the record at hand has given all its samples.
func (f *showFilter) done() bool {
	if f.ids == nil {
		return f.count <= 0
	}
	return f.pending == 0
}

// missing lists the ids asked for and not shown.
func (f *showFilter) missing() []string {
	var ids []string
	for _, id := range f.order {
		if f.ids[id] {
			ids = append(ids, strconv.Quote(id))
		}
	}
	return ids
}

// invalidSample is a sample the viewer cannot show: its record is at fault,
// so it is handled as an invalid line (65, or skipped with --skip-invalid).
type invalidSample struct{ err error }

func (e invalidSample) Error() string { return e.err.Error() }

// showWriter is the sampleWriter of --show: it prints samples for a person.
type showWriter struct {
	conv    *converter
	filter  *showFilter
	w       *bufio.Writer
	colour  bool
	special map[int]bool // added and special tokens' ids
	shown   int64
}

func newShowWriter(conv *converter, filter *showFilter, w io.Writer, terminal bool) *showWriter {
	s := &showWriter{conv: conv, filter: filter, w: bufio.NewWriter(w), colour: colourOn(terminal, os.Getenv("TERM"), os.Getenv("NO_COLOR")),
		special: map[int]bool{}}
	for _, t := range conv.model.Tok.AddedTokens() {
		s.special[t.ID] = true
	}
	return s
}

// colourOn decides whether --show colours the trained spans (a terminal
// that is not dumb, NO_COLOR unset, as https://no-color.org asks) or
// brackets them.
func colourOn(terminal bool, term, noColor string) bool {
	return terminal && term != "dumb" && noColor == ""
}

// Write shows the sample if it was asked for.
func (s *showWriter) Write(sample []byte) error {
	if !s.filter.wants(gjson.GetBytes(sample, record.FieldID).String()) {
		return nil
	}
	view, err := s.conv.view(sample)
	if err != nil {
		return invalidSample{err}
	}
	if err := s.print(view); err != nil {
		return err
	}
	s.shown++
	return nil
}

// Done reports whether every sample asked for was shown.
func (s *showWriter) Done() bool { return s.filter.done() }

func (s *showWriter) Flush() error { return s.w.Flush() }

// view is the sample as its trainer sees it.
func (c *converter) view(sample []byte) (trainView, error) {
	if c.format != formatSpecForge {
		return tokensView(sample)
	}
	return c.specForgeView(sample)
}

// Terminal colours: trained text green, special tokens bold (magenta
// outside the trained spans).
const (
	sgrTrained        = "\x1b[32m"
	sgrTrainedSpecial = "\x1b[1;32m"
	sgrSpecial        = "\x1b[1;35m"
	sgrReset          = "\x1b[0m"
)

// Brackets around a trained span without colours.
const (
	openTrained  = "[["
	closeTrained = "]]"
)

// span is a run of tokens that are all trained or all not.
type span struct {
	start, end int
	trained    bool
}

// spans cuts the view into runs of equal loss.
func (v trainView) spans() []span {
	var out []span
	for i, t := range v.trained {
		if len(out) > 0 && out[len(out)-1].trained == t {
			out[len(out)-1].end = i + 1
			continue
		}
		out = append(out, span{start: i, end: i + 1, trained: t})
	}
	return out
}

// print writes a sample: a header, its text with the trained spans marked,
// and each span's token count.
func (s *showWriter) print(v trainView) error {
	spans := v.spans()
	trained, nTrained := 0, 0
	for _, sp := range spans {
		if sp.trained {
			trained += sp.end - sp.start
			nTrained++
		}
	}
	name := cliutil.Printable(v.id)
	if v.turn > 0 {
		name += fmt.Sprintf(" turn %d", v.turn)
	}
	fmt.Fprintf(s.w, "=== %s (%s): %s, %d trained in %s\n", name, s.conv.format,
		cliutil.Count(int64(len(v.ids)), "token"), trained, cliutil.Count(int64(nTrained), "span"))
	for _, sp := range spans {
		if err := s.writeSpan(v, sp); err != nil {
			return err
		}
	}
	s.w.WriteString("\n---")
	for i, sp := range spans {
		kind := "context"
		if sp.trained {
			kind = "trained"
		}
		fmt.Fprintf(s.w, "\n  span %d: %s, %s", i+1, kind, cliutil.Count(int64(sp.end-sp.start), "token"))
	}
	_, err := s.w.WriteString("\n\n")
	return err
}

// writeSpan writes a span's text token by token, so that special tokens can
// stand out; the bytes of ordinary tokens are written as they come, so a
// character split across tokens is whole again on the screen.
func (s *showWriter) writeSpan(v trainView, sp span) error {
	plain, special := "", sgrSpecial
	if sp.trained {
		plain, special = sgrTrained, sgrTrainedSpecial
	}
	switch {
	case s.colour:
		s.w.WriteString(plain)
	case sp.trained:
		s.w.WriteString(openTrained)
	}
	afterC2 := false
	for _, id := range v.ids[sp.start:sp.end] {
		piece, err := s.conv.model.Tok.Decode([]int{id})
		if err != nil {
			return invalidSample{fmt.Errorf("sample %q: %w", v.id, err)}
		}
		piece, afterC2 = controlsAsText(piece, afterC2)
		if s.colour && s.special[id] {
			piece = special + piece + sgrReset + plain
		}
		s.w.WriteString(piece)
	}
	if afterC2 {
		s.w.WriteString("\xc2")
	}
	switch {
	case s.colour:
		s.w.WriteString(sgrReset)
	case sp.trained:
		s.w.WriteString(closeTrained)
	}
	return nil
}

// controlsAsText writes the control characters of a token's text as
// escapes (\x1b, \x0d, \x9b), so that what a model or a user wrote can never
// drive the terminal (clear it, retitle it, move the cursor); newlines and
// tabs stay, as the sample's layout. A token's bytes may end inside a
// character: a last byte 0xC2 (the lead of a C1 control such as U+009B,
// CSI) is held back and put before the next token's (pending), so that a
// control split across two tokens is caught too.
func controlsAsText(piece string, pending bool) (string, bool) {
	if pending {
		piece = "\xc2" + piece
	}
	hold := strings.HasSuffix(piece, "\xc2")
	if hold {
		piece = piece[:len(piece)-1]
	}
	var b []byte
	for i := 0; i < len(piece); i++ {
		start, c := i, piece[i]
		switch {
		case c == 0xc2 && i+1 < len(piece) && piece[i+1] >= 0x80 && piece[i+1] <= 0x9f:
			i++
			c = piece[i]
		case c >= 0x20 && c != 0x7f || c == '\n' || c == '\t':
			if b != nil {
				b = append(b, c)
			}
			continue
		}
		if b == nil {
			b = append(b, piece[:start]...)
		}
		b = fmt.Appendf(b, "\\x%02x", c)
	}
	if b == nil {
		return piece, hold
	}
	return string(b), hold
}

// showSummary is the stderr line of a --show run.
func showSummary(shown int64, filter *showFilter) string {
	msg := "showed " + cliutil.Count(shown, "sample")
	if missing := filter.missing(); len(missing) > 0 {
		msg += "; no sample for " + strings.Join(missing, ", ")
	}
	return msg
}
