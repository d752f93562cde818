package jsonl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chunkReader hands out at most n bytes per Read, so that lines straddle the
// splitter's refills at every possible place.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.data)
	c.data = c.data[k:]
	return k, nil
}

// splitEvents runs a lineSplitter to the end and describes what it returned:
// "L:<line>", "TOOLONG" or "TORN:<n>".
func splitEvents(t *testing.T, data []byte, chunk, maxLine int) []string {
	t.Helper()
	l := newLineSplitter(&chunkReader{data: data, n: chunk}, maxLine)
	var ev []string
	for range len(data) + 2 {
		line, err := l.next()
		var torn *tornError
		switch {
		case err == io.EOF:
			return ev
		case errors.As(err, &torn):
			ev = append(ev, fmt.Sprintf("TORN:%d", torn.n))
		case errors.Is(err, errLineTooLong):
			ev = append(ev, "TOOLONG")
		case err != nil:
			t.Fatalf("unexpected error %v", err)
		default:
			ev = append(ev, "L:"+string(line))
		}
	}
	t.Fatalf("the splitter did not reach the end of %d bytes", len(data))
	return nil
}

// wantEvents is the reference: bytes.Split, then the cap.
func wantEvents(data []byte, maxLine int) []string {
	var ev []string
	segs := bytes.Split(data, []byte("\n"))
	for i, s := range segs {
		last := i == len(segs)-1
		switch {
		case last && len(s) == 0:
		case len(s) > maxLine:
			ev = append(ev, "TOOLONG")
		case last:
			ev = append(ev, fmt.Sprintf("TORN:%d", len(s)))
		default:
			ev = append(ev, "L:"+string(s))
		}
	}
	return ev
}

func TestLineSplitter(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		chunk   int
		maxLine int
	}{
		{"empty", "", 1, 10},
		{"lines", "a\nbb\n\nccc\n", 1, 10},
		{"torn", "a\nbb", 3, 10},
		{"too long in the middle", "a\n0123456789A\nb\n", 4, 10},
		{"too long at the end", "a\n0123456789ABC", 4, 10},
		{"exactly the cap", "0123456789\n", 2, 10},
		{"long lines grow the buffer", strings.Repeat(strings.Repeat("x", 300<<10)+"\n", 3), 100 << 10, 1 << 20},
		{"a huge line, then small ones", strings.Repeat("y", 2<<20) + "\n" + strings.Repeat("z\n", 1000), 1 << 20, 4 << 20},
		{"skip a huge line", "a\n" + strings.Repeat("y", 2<<20) + "\nb\n", 64 << 10, 1 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := splitEvents(t, []byte(tc.data), tc.chunk, tc.maxLine)
			want := wantEvents([]byte(tc.data), tc.maxLine)
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("events differ:\n got %.200q\nwant %.200q", got, want)
			}
		})
	}
}

// FuzzLineSplitter checks that arbitrary bytes, read in arbitrary pieces,
// come back as exactly their lines: joined with newlines, plus the torn tail,
// they are the input again; lines over the cap are reported, not returned.
func FuzzLineSplitter(f *testing.F) {
	f.Add([]byte("a\nb\n"), uint8(1), uint16(10))
	f.Add([]byte("{\"a\":1}\r\n\n{\"a\""), uint8(3), uint16(100))
	f.Add([]byte("0123456789abcdef\nx"), uint8(5), uint16(8))
	f.Add([]byte("\n\n\n"), uint8(0), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8, maxLine uint16) {
		c, m := int(chunk)+1, int(maxLine)+1
		got := splitEvents(t, data, c, m)
		if want := wantEvents(data, m); strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("split(%q, chunk %d, cap %d):\n got %q\nwant %q", data, c, m, got, want)
		}
		var rebuilt []byte
		for _, e := range got {
			switch {
			case strings.HasPrefix(e, "L:"):
				rebuilt = append(append(rebuilt, e[2:]...), '\n')
			case strings.HasPrefix(e, "TORN:"):
				var n int
				fmt.Sscanf(e, "TORN:%d", &n)
				rebuilt = append(rebuilt, data[len(data)-n:]...)
			default:
				return // an overlong line was dropped
			}
		}
		if !bytes.Equal(rebuilt, data) {
			t.Fatalf("lines + newlines + torn tail = %q, want %q", rebuilt, data)
		}
	})
}

// FuzzReader reads arbitrary bytes with validation and --skip-invalid: every
// complete line is returned, counted blank or counted invalid, exactly as a
// line-by-line reference with ScanObject says, and a final line without its
// newline is reported torn.
func FuzzReader(f *testing.F) {
	f.Add([]byte("{}\n\n[1]\n{\"a\":1}\r\n{\"b\""))
	f.Add([]byte("\xef\xbb\xbf{}\n\xef\xbb\xbf{}\n"))
	f.Add([]byte(" \t\r\n{\"a\":\"\xff\"}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.HasPrefix(data, gzipMagic) || bytes.HasPrefix(data, zstdMagic) {
			return // compressed streams have tests of their own
		}
		var want Stats
		var wantLines []string
		segs := bytes.Split(data, []byte("\n"))
		if last := segs[len(segs)-1]; len(last) > 0 {
			want.Torn = 1
		}
		for i, s := range segs[:len(segs)-1] {
			if i == 0 {
				s = bytes.TrimPrefix(s, utf8BOM)
			}
			s = bytes.TrimSuffix(s, []byte("\r"))
			switch {
			case len(bytes.TrimSpace(s)) == 0:
				want.Blank++
			case ScanObject(s, nil) != nil:
				want.Invalid++
			default:
				want.Records++
				wantLines = append(wantLines, string(s))
			}
		}
		res := readAll(t, bytes.NewReader(data), nil, Options{Validate: true, SkipInvalid: true})
		if res.err != nil {
			t.Fatalf("read %q: %v", data, res.err)
		}
		got := res.stats
		got.Bytes = 0
		if got != want || strings.Join(res.lines, "\n") != strings.Join(wantLines, "\n") {
			t.Fatalf("read %q:\n got %+v %q\nwant %+v %q", data, got, res.lines, want, wantLines)
		}
		if int64(len(res.warns)) != want.Torn {
			t.Fatalf("read %q: warnings %q, want %d", data, res.warns, want.Torn)
		}
		// Read ahead from a file, in buffers and batches smaller than most
		// lines: the same lines, counts and warnings.
		forceReadAhead(t, 16, 2)
		path := filepath.Join(t.TempDir(), "in.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ahead := readAll(t, nil, []string{path}, Options{Validate: true, SkipInvalid: true, Parallel: true})
		if ahead.err != nil || ahead.stats != res.stats || strings.Join(ahead.lines, "\n") != strings.Join(res.lines, "\n") || len(ahead.warns) != len(res.warns) {
			t.Fatalf("read %q ahead:\n got %+v %q %v\nwant %+v %q", data, ahead.stats, ahead.lines, ahead.err, res.stats, res.lines)
		}
	})
}
