package backend

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// sseBufferSize is the read buffer of one stream. Small on purpose: ten
// thousand streams in flight hold ten thousand of them, and the connection
// below has its own buffer. It holds a typical chat delta event; longer
// lines are assembled in the reader's line buffer, which grows to the
// longest line.
const sseBufferSize = 1 << 10

// errLineTooLong is returned when one line of a stream exceeds the limit.
var errLineTooLong = errors.New("server-sent event line too long")

// sseReader reads the data of server-sent events as the WHATWG
// specification frames them: lines end in LF, CRLF or CR; a line starting
// with ":" is a comment (OpenRouter's ": OPENROUTER PROCESSING"); "data"
// lines accumulate, joined by LF, until a blank line dispatches the event;
// other fields (event, id, retry) are ignored, since neither SGLang nor the
// OpenAI-compatible APIs use them for chat data. An event cut off by the end
// of the stream is not dispatched: it was never complete.
type sseReader struct {
	r       *bufio.Reader
	maxLine int
	line    []byte // a line longer than the read buffer, assembled
	data    []byte // the data of the event being read
	hasData bool   // a data field was seen since the last dispatch
	pending []byte // lines left over after splitting on a lone CR
	started bool   // the byte order mark check is done
}

func newSSEReader(r io.Reader, maxLine int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, sseBufferSize), maxLine: maxLine}
}

// Next returns the data of the next event. The slice is valid until the
// next call. At the end of the stream it returns io.EOF; a read error is
// returned as is.
func (s *sseReader) Next() ([]byte, error) {
	for {
		line, err := s.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			if !s.hasData {
				continue
			}
			s.hasData = false
			data := s.data
			if n := len(data); n > 0 && data[n-1] == '\n' {
				data = data[:n-1]
			}
			s.data = s.data[:0]
			return data, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(field) != "data" {
			continue
		}
		if len(s.data)+len(value) > s.maxLine {
			return nil, errLineTooLong
		}
		s.data = append(s.data, value...)
		s.data = append(s.data, '\n')
		s.hasData = true
	}
}

// readLine returns the next line without its terminator. The slice is
// valid until the next call.
func (s *sseReader) readLine() ([]byte, error) {
	if s.pending != nil {
		return s.splitCR(), nil
	}
	raw, err := s.readRawLine()
	if err != nil {
		return nil, err
	}
	if !s.started {
		s.started = true
		raw = trimBOM(raw)
	}
	// ReadSlice reads up to the LF, so a CRLF is never split between two
	// raw lines; only CRs inside the line remain to be split. (A stream
	// that ends its lines with CR alone and never sends an LF is not
	// supported: no server in use does that.)
	raw = raw[:len(raw)-1] // the LF
	if n := len(raw); n > 0 && raw[n-1] == '\r' {
		raw = raw[:n-1]
	}
	if bytes.IndexByte(raw, '\r') < 0 {
		return raw, nil
	}
	s.pending = raw
	return s.splitCR(), nil
}

// splitCR returns the next CR-terminated piece of a line that contained
// lone CRs (old Mac line ends, which the specification allows).
func (s *sseReader) splitCR() []byte {
	i := bytes.IndexByte(s.pending, '\r')
	if i < 0 {
		line := s.pending
		s.pending = nil
		return line
	}
	line := s.pending[:i]
	s.pending = s.pending[i+1:]
	return line
}

// readRawLine reads up to and including the next LF. A stream ending
// without a final LF ends with io.EOF (or the read error) and the partial
// line is dropped. A lone CR at the very end of a stream is treated alike.
func (s *sseReader) readRawLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		if err == nil {
			if len(s.line) == 0 {
				return chunk, nil
			}
			s.line = append(s.line, chunk...)
			return s.line, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) && len(s.line)+len(chunk) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if len(s.line)+len(chunk) > s.maxLine {
			return nil, fmt.Errorf("%w (over %d bytes)", errLineTooLong, s.maxLine)
		}
		s.line = append(s.line, chunk...)
	}
}
