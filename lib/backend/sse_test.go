package backend

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// readAllEvents reads every event of a stream.
func readAllEvents(r io.Reader, maxLine int) ([]string, error) {
	s := newSSEReader(r, maxLine)
	var events []string
	for {
		data, err := s.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return events, err
		}
		events = append(events, string(data))
	}
}

func TestSSEReader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream string
		want   []string
		err    error
	}{
		{"plain", "data: a\n\ndata: b\n\n", []string{"a", "b"}, nil},
		{"comments and fields", ": OPENROUTER PROCESSING\n\nevent: x\nid: 1\nretry: 5\ndata: a\n\n", []string{"a"}, nil},
		{"multi-line data", "data: a\ndata:b\ndata:  c\n\n", []string{"a\nb\n c"}, nil},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []string{"a", "b"}, nil},
		{"lone CR inside a line", "data: a\rdata: b\r\r\n", []string{"a\nb"}, nil},
		{"CR only", "data: a\r\rdata: b\rdata: c\r\r", []string{"a", "b\nc"}, nil},
		{"CR only, mixed with CRLF", "data: a\r\r\ndata: b\r\n\r", []string{"a", "b"}, nil},
		{"empty data", "data\n\ndata:\n\n", []string{"", ""}, nil},
		{"blank lines only", "\n\n\n", nil, nil},
		{"byte order mark", "\xEF\xBB\xBFdata: a\n\n", []string{"a"}, nil},
		{"event without blank line at the end", "data: a\n\ndata: b\n", []string{"a"}, nil},
		{"line cut by the end", "data: a\n\ndata: b", []string{"a"}, io.ErrUnexpectedEOF},
		{"field without value", "data: a\nfoo\n\n", []string{"a"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, oneByte := range []bool{false, true} {
				var r io.Reader = strings.NewReader(tc.stream)
				if oneByte {
					r = iotest.OneByteReader(r)
				}
				got, err := readAllEvents(r, 1<<20)
				if !errors.Is(err, tc.err) || !slices.Equal(got, tc.want) {
					t.Fatalf("got %q, %v; want %q, %v", got, err, tc.want, tc.err)
				}
			}
		})
	}
}

// TestSSECROnlyDispatchesAtOnce: an event whose lines end in CR alone is
// handed over as soon as its blank line arrives, not when the server sends
// its next bytes (it may send none until the answer ends).
func TestSSECROnlyDispatchesAtOnce(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	s := newSSEReader(r, 1<<20)
	got := make(chan string)
	go func() {
		for {
			data, err := s.Next()
			if err != nil {
				close(got)
				return
			}
			got <- string(data)
		}
	}()
	for _, ev := range []string{"a", "b"} {
		io.WriteString(w, "data: "+ev+"\r\r")
		if data := <-got; data != ev {
			t.Fatalf("got %q, want %q", data, ev)
		}
	}
	// An LF after a CR that ended a read is the same line end, not a blank line.
	io.WriteString(w, "data: c\r")
	io.WriteString(w, "\n\r\n")
	if data := <-got; data != "c" {
		t.Fatalf("got %q, want c", data)
	}
}

func TestSSELongLines(t *testing.T) {
	long := strings.Repeat("x", 5*sseBufferSize+17)
	got, err := readAllEvents(strings.NewReader("data: "+long+"\n\ndata: short\n\n"), 1<<20)
	if err != nil || len(got) != 2 || got[0] != long || got[1] != "short" {
		t.Fatalf("got %d events, %v", len(got), err)
	}
	_, err = readAllEvents(strings.NewReader("data: "+long+"\n\n"), sseBufferSize)
	if !errors.Is(err, errLineTooLong) {
		t.Fatalf("want errLineTooLong, got %v", err)
	}
	// Many short data lines add up too.
	_, err = readAllEvents(strings.NewReader(strings.Repeat("data: xxxxxxxx\n", 1000)+"\n"), 4000)
	if !errors.Is(err, errLineTooLong) {
		t.Fatalf("want errLineTooLong for accumulated data, got %v", err)
	}
}

// encodeSSE writes events as a server would: each line of an event's data
// as a data field, comments between events, LF or CRLF line ends.
func encodeSSE(events [][]byte, crlf bool) []byte {
	eol := "\n"
	if crlf {
		eol = "\r\n"
	}
	var b bytes.Buffer
	for i, ev := range events {
		if i%2 == 1 {
			b.WriteString(": keep-alive" + eol)
		}
		for line := range bytes.SplitSeq(ev, []byte("\n")) {
			b.WriteString("data: ")
			b.Write(line)
			b.WriteString(eol)
		}
		b.WriteString(eol)
	}
	return b.Bytes()
}

// FuzzSSE checks that no input makes the reader panic or misbehave, and
// that events (split from the input at NUL bytes) survive encoding and
// decoding, whole or one byte at a time.
func FuzzSSE(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\n: OPENROUTER PROCESSING\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: a\r\ndata: b\r\n\r\n"))
	f.Add([]byte("x\x00y\ny\x00\x00z"))
	f.Add([]byte("\xEF\xBB\xBFdata:a\rdata:b\r\r"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		events, _ := readAllEvents(bytes.NewReader(raw), 256)
		for _, ev := range events {
			if strings.ContainsRune(ev, '\r') {
				t.Fatalf("event data holds a CR: %q", ev)
			}
			if len(ev) > 256 {
				t.Fatalf("event of %d bytes passed a 256 byte limit", len(ev))
			}
		}

		want := bytes.Split(bytes.ReplaceAll(raw, []byte("\r"), nil), []byte{0})
		for _, crlf := range []bool{false, true} {
			stream := encodeSSE(want, crlf)
			for _, oneByte := range []bool{false, true} {
				var r io.Reader = bytes.NewReader(stream)
				if oneByte {
					r = iotest.OneByteReader(r)
				}
				got, err := readAllEvents(r, len(stream)+1)
				if err != nil {
					t.Fatalf("decoding %q: %v", stream, err)
				}
				if len(got) != len(want) {
					t.Fatalf("%d events back from %d: %q", len(got), len(want), stream)
				}
				for i := range got {
					if got[i] != string(want[i]) {
						t.Fatalf("event %d: got %q, want %q", i, got[i], want[i])
					}
				}
			}
		}
	})
}
