package backend

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// pieces reads its bytes at most n at a time, as a socket may deliver
// them.
type pieces struct {
	b []byte
	n int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), p.n)], p.b)
	p.b = p.b[n:]
	return n, nil
}

// wireReader is raw arriving n bytes at a time (0: all at once) through a
// buffer of size bytes, its first bytes already there, as readHead has it.
func wireReader(raw []byte, n, size int) *bufio.Reader {
	if n <= 0 {
		n = len(raw) + 1
	}
	br := bufio.NewReaderSize(&pieces{raw, n}, size)
	br.Peek(1)
	return br
}

// readOutcome is everything a caller can learn from an answer read off
// the wire: the head, the body and how it ended, the trailer, and what
// is left on the connection for the next answer.
type readOutcome struct {
	Err                              string
	Status, Proto                    string
	StatusCode, ProtoMajor, ProtoMin int
	Header, Trailer                  http.Header
	ContentLength                    int64
	TransferEncoding                 []string
	Close                            bool
	SameRequest                      bool
	Body                             string
	BodyErr                          string
	Rest                             string
}

func outcome(req *http.Request, resp *http.Response, body io.Reader, err error, br *bufio.Reader) readOutcome {
	if err != nil {
		return readOutcome{Err: err.Error()}
	}
	o := readOutcome{
		Status: resp.Status, Proto: resp.Proto, StatusCode: resp.StatusCode,
		ProtoMajor: resp.ProtoMajor, ProtoMin: resp.ProtoMinor, Header: resp.Header,
		ContentLength: resp.ContentLength, TransferEncoding: resp.TransferEncoding,
		Close: resp.Close, SameRequest: resp.Request == req,
	}
	// Small reads, so that a body's end is met inside a read and at one.
	var got bytes.Buffer
	p := make([]byte, 7)
	for {
		n, err := body.Read(p)
		got.Write(p[:n])
		if err != nil {
			if err != io.EOF {
				o.BodyErr = err.Error()
			}
			break
		}
	}
	o.Body = got.String()
	o.Trailer = resp.Trailer
	rest, _ := io.ReadAll(br)
	o.Rest = string(rest)
	return o
}

// bothReads reads raw as readResponse and as http.ReadResponse do, each
// from its own reader, and reports whether readResponse took its plain
// path.
func bothReads(raw []byte, method string, n, size int) (ours, theirs readOutcome, plain bool) {
	req, _ := http.NewRequest(method, "http://127.0.0.1/generate", nil)
	_, plain = readPlainHead(wireReader(raw, n, size), req, new(http.Response), nil)

	br := wireReader(raw, n, size)
	resp, frame, err := readResponse(br, req, new(http.Response), make([]string, n%3))
	ours = outcome(req, resp, &frame, err, br)

	br = wireReader(raw, n, size)
	resp, err = http.ReadResponse(br, req)
	var body io.Reader
	if err == nil {
		body = resp.Body
	}
	theirs = outcome(req, resp, body, err, br)
	return ours, theirs, plain
}

// TestReadResponseAsNetHTTP: heads read by readResponse give what
// http.ReadResponse gives (status, headers, framing, body, trailer, what
// is left for the next answer, errors), whether they take the plain path
// or net/http's.
func TestReadResponseAsNetHTTP(t *testing.T) {
	const date = "Date: Mon, 07 Dec 2026 12:53:47 GMT\r\n"
	for _, tc := range []struct {
		name   string
		method string
		raw    string
		plain  bool
	}{
		{"llm-sim", "POST", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: application/json\r\n" + date + "\r\nhello", true},
		{"uvicorn lower case", "POST", "HTTP/1.1 200 OK\r\ndate: Mon, 07 Dec 2026 12:53:47 GMT\r\nserver: uvicorn\r\ncontent-length: 2\r\ncontent-type: application/json\r\n\r\n{}", true},
		{"keep-alive, next answer left", "POST", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true},
		{"empty body", "POST", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true},
		{"leading zeros", "POST", "HTTP/1.1 200 OK\r\nContent-Length: 003\r\n\r\nabcdef", true},
		{"body cut short", "POST", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", true},
		{"chunked stream", "POST", "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n7\r\ndata: 1\r\n6\r\n\n\ndata\r\n0\r\n\r\nnext", true},
		{"chunked, upper case", "POST", "HTTP/1.1 200 OK\r\nTransfer-Encoding: CHUNKED\r\n\r\n1\r\nx\r\n0\r\n\r\n", true},
		{"chunked trailer", "POST", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nX-Checksum: 1\r\n\r\nnext", true},
		{"chunked trailer cut", "POST", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nX-Chec", true},
		{"chunked cut", "POST", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", true},
		{"chunked bad size", "POST", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n", true},
		{"retry after", "POST", "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", true},
		{"server error", "POST", "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy", true},
		{"connection close", "POST", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", true},
		{"connection close among tokens", "POST", "HTTP/1.1 200 OK\r\nConnection: Upgrade, CLOSE \r\nContent-Length: 2\r\n\r\n{}", true},
		{"connection keep-alive", "POST", "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nContent-Length: 2\r\n\r\n{}", true},
		{"connection non-ASCII", "POST", "HTTP/1.1 200 OK\r\nConnection: clos\xc3\xa9\r\nContent-Length: 2\r\n\r\n{}", false},
		{"repeated header", "POST", "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nX-Odd: 1\r\nset-cookie: b=2\r\nx-odd: 2\r\nContent-Length: 0\r\n\r\n", true},
		{"names canonicalised", "POST", "HTTP/1.1 200 OK\r\nx-foo-BAR: v\r\nX_under-score: u\r\nWWW-authenticate: w\r\ncONTENT-lENGTH: 1\r\n\r\nz", true},
		{"values trimmed", "POST", "HTTP/1.1 200 OK\r\nX-Pad: \t a  b \t\r\nX-Empty:\r\nX-Blank:   \r\nContent-Length: 0\r\n\r\n", true},
		{"obs-text value", "POST", "HTTP/1.1 200 OK\r\nX-Latin: caf\xe9\xff\r\nContent-Length: 0\r\n\r\n", true},
		{"long name", "POST", "HTTP/1.1 200 OK\r\nX-" + strings.Repeat("long-", 20) + "name: 1\r\nContent-Length: 0\r\n\r\n", true},
		{"no reason", "POST", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", true},
		{"reason with spaces", "POST", "HTTP/1.1 299 Quite  all right \r\nContent-Length: 0\r\n\r\n", true},
		{"status 999", "POST", "HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n", true},
		{"HTTP/1.0 keep-alive", "POST", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}", false},
		{"HTTP/1.0", "POST", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", false},
		{"HTTP/1.0 chunked ignored", "POST", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n", false},
		{"read to close", "POST", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"a\":1}", false},
		{"no headers", "POST", "HTTP/1.1 200 OK\r\n\r\nabc", false},
		{"informational first", "POST", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", false},
		{"204 with length", "POST", "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello", false},
		{"304", "GET", "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n", false},
		{"HEAD", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", false},
		{"same lengths twice", "POST", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", false},
		{"two lengths", "POST", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}x", false},
		{"length and chunked", "POST", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n", false},
		{"gzip encoding", "POST", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", false},
		{"two encodings", "POST", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", false},
		{"length not a number", "POST", "HTTP/1.1 200 OK\r\nContent-Length: 2x\r\n\r\n{}", false},
		{"length empty", "POST", "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n{}", false},
		{"length too large", "POST", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n{}", false},
		{"length negative", "POST", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n{}", false},
		{"pragma", "POST", "HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 0\r\n\r\n", false},
		{"trailer declared", "POST", "HTTP/1.1 200 OK\r\nTrailer: X-Checksum\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Checksum: 1\r\n\r\n", false},
		{"folded line", "POST", "HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 0\r\n\r\n", false},
		{"space before colon", "POST", "HTTP/1.1 200 OK\r\nX-Space : a\r\nContent-Length: 0\r\n\r\n", false},
		{"first line folded", "POST", "HTTP/1.1 200 OK\r\n X: a\r\nContent-Length: 0\r\n\r\n", false},
		{"control byte", "POST", "HTTP/1.1 200 OK\r\nX-Bad: a\x01b\r\nContent-Length: 0\r\n\r\n", false},
		{"bare CR", "POST", "HTTP/1.1 200 OK\r\nX-Bad: a\rb\r\nContent-Length: 0\r\n\r\n", false},
		{"no colon", "POST", "HTTP/1.1 200 OK\r\nnonsense\r\nContent-Length: 0\r\n\r\n", false},
		{"empty name", "POST", "HTTP/1.1 200 OK\r\n: a\r\nContent-Length: 0\r\n\r\n", false},
		{"bare LF endings", "POST", "HTTP/1.1 200 OK\nContent-Length: 2\n\n{}", false},
		{"bare LF blank line", "POST", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\n{}\r\n\r\n", false},
		{"bad status code", "POST", "HTTP/1.1 2OO OK\r\nContent-Length: 0\r\n\r\n", false},
		{"signed status code", "POST", "HTTP/1.1 +20 OK\r\nContent-Length: 0\r\n\r\n", false},
		{"two spaces", "POST", "HTTP/1.1  200 OK\r\nContent-Length: 0\r\n\r\n", false},
		{"long status code", "POST", "HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n", false},
		{"bad version", "POST", "HTTP/1.x 200 OK\r\nContent-Length: 0\r\n\r\n", false},
		{"not HTTP", "POST", "SSH-2.0-OpenSSH_9.6\r\n\r\n", false},
		{"status line only", "POST", "HTTP/1.1 200 OK\r\n", false},
		{"head cut", "POST", "HTTP/1.1 200 OK\r\nContent-Len", false},
		{"nothing", "POST", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours, theirs, plain := bothReads([]byte(tc.raw), tc.method, 0, readBufferSize)
			if plain != tc.plain {
				t.Errorf("plain path taken: %v, want %v", plain, tc.plain)
			}
			if !reflect.DeepEqual(ours, theirs) {
				t.Errorf("readResponse differs from http.ReadResponse\n got %+v\nwant %+v", ours, theirs)
			}
			// In pieces, and through a buffer smaller than the head: net/http's path,
			// with the same outcome.
			for _, size := range []int{16, readBufferSize} {
				for _, n := range []int{1, 5, 40} {
					ours, theirs, _ := bothReads([]byte(tc.raw), tc.method, n, size)
					if !reflect.DeepEqual(ours, theirs) {
						t.Errorf("%d bytes at a time, buffer %d: readResponse differs\n got %+v\nwant %+v", n, size, ours, theirs)
					}
				}
			}
		})
	}
}

// TestReadResponseAllocations: the plain path allocates the strings of
// the answer and its header, and no more, when the caller gives it room
// for the answer and its values.
func TestReadResponseAllocations(t *testing.T) {
	raw := []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\nDate: Mon, 07 Dec 2026 12:53:47 GMT\r\n\r\n{}")
	req, _ := http.NewRequest("POST", "http://127.0.0.1/generate", nil)
	br := bufio.NewReaderSize(nil, readBufferSize)
	r := bytes.NewReader(raw)
	var resp http.Response
	var values [3]string
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(raw)
		br.Reset(r)
		br.Peek(1)
		if _, _, err := readResponse(br, req, &resp, values[:]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 3 {
		t.Errorf("%v allocations per answer, want at most 3", allocs)
	}
}

// FuzzReadResponse: readResponse reads any bytes as http.ReadResponse
// does.
func FuzzReadResponse(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: application/json\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
		"HTTP/1.1 429 Too Many\r\nRetry-After: 2\r\nConnection: close\r\ncontent-length: 1\r\n\r\nx",
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n",
	} {
		f.Add([]byte(seed), uint8(0), false)
		f.Add([]byte(seed), uint8(3), true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, n uint8, head bool) {
		method := "POST"
		if head {
			method = "HEAD"
		}
		ours, theirs, _ := bothReads(raw, method, int(n), readBufferSize)
		if !reflect.DeepEqual(ours, theirs) {
			t.Fatalf("readResponse differs from http.ReadResponse on %q\n got %+v\nwant %+v", raw, ours, theirs)
		}
	})
}
