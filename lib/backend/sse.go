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
	afterCR bool   // the last line ended in a CR at the end of the buffer: an LF next belongs to it
	started bool   // the byte order mark check is done
	// grew, when set, is called whenever line or data got a larger
	// buffer; an error it returns stops the reading (the memory bound).
	grew func() error
}

// held is the memory the reader's line buffers hold.
func (s *sseReader) held() int64 { return int64(cap(s.line) + cap(s.data)) }

// appendTo appends b to *buf, telling grew when the buffer had to grow.
func (s *sseReader) appendTo(buf *[]byte, b []byte) error {
	before := cap(*buf)
	*buf = append(*buf, b...)
	if s.grew != nil && cap(*buf) != before {
		return s.grew()
	}
	return nil
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
		if err := s.appendTo(&s.data, value); err != nil {
			return nil, err
		}
		s.data = append(s.data, '\n')
		s.hasData = true
	}
}

// readLine returns the next line without its terminator: LF, CRLF or a
// CR alone (old Mac line ends, which the specification allows). A line
// ending in CR is returned at once, without waiting to see whether an LF
// follows: a server that ends its lines with CR alone must not have its
// event held back until its next one. The slice is valid until the next
// call. A stream ending in the middle of a line ends with
// io.ErrUnexpectedEOF, and the partial line is dropped.
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		if s.r.Buffered() == 0 {
			if _, err := s.r.Peek(1); err != nil {
				if errors.Is(err, io.EOF) && len(s.line) > 0 {
					return nil, io.ErrUnexpectedEOF
				}
				return nil, err
			}
		}
		buf, _ := s.r.Peek(s.r.Buffered())
		if s.afterCR {
			s.afterCR = false
			if buf[0] == '\n' { // the LF of a CRLF split by a read
				s.r.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(buf, "\r\n")
		if i < 0 {
			if len(s.line)+len(buf) > s.maxLine {
				return nil, fmt.Errorf("%w (over %d bytes)", errLineTooLong, s.maxLine)
			}
			if err := s.appendTo(&s.line, buf); err != nil {
				return nil, err
			}
			s.r.Discard(len(buf))
			continue
		}
		line := buf[:i]
		if len(s.line) > 0 {
			if err := s.appendTo(&s.line, line); err != nil {
				return nil, err
			}
			line = s.line
		}
		if buf[i] == '\r' {
			if i+1 < len(buf) && buf[i+1] == '\n' {
				i++
			} else {
				s.afterCR = i+1 == len(buf)
			}
		}
		s.r.Discard(i + 1)
		if !s.started {
			s.started = true
			line = trimBOM(line)
		}
		return line, nil
	}
}
