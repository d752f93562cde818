package backend

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strings"
)

// readResponse reads the head of one answer from br, as http.ReadResponse
// does, and returns it with the framing of its body; resp.Body is left to
// the caller, who reads the body through the frame.
//
// http.ReadResponse was a twentieth of generate's CPU against a fast
// server, and ten allocations per answer (the textproto reader, each
// line and value as a string of its own, the transfer reader, the body
// and its LimitedReader). The answers of SGLang, vLLM and llm-sim are
// plain: HTTP/1.1, well-formed header lines, a Content-Length or chunked
// framing. Such a head is parsed here, its strings in one allocation;
// any other (HTTP/1.0, 1xx, no length, HEAD, 204, 304, folded or odd
// lines, Pragma, Trailer, a head not all in br's buffer) goes to
// http.ReadResponse, unread, so that what net/http decides about it,
// errors included, stays what it decides. What the plain path decides
// must be exactly what http.ReadResponse would (FuzzReadResponse).
//
// A plain head is read into resp, and its header's values into values
// when they are enough (nil: none), so that the caller can allocate them
// with what else the answer needs.
func readResponse(br *bufio.Reader, req *http.Request, resp *http.Response, values []string) (*http.Response, bodyFrame, error) {
	if frame, ok := readPlainHead(br, req, resp, values); ok {
		return resp, frame, nil
	}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, bodyFrame{}, err
	}
	return resp, bodyFrame{br: br, left: -1, body: resp.Body}, nil
}

// bodyFrame reads an answer's body off the connection's reader by its
// framing: left bytes of a Content-Length, or chunked through body with
// resp's trailer after it, or (the answers of http.ReadResponse) body,
// net/http's own reader, never closed (that would drain it).
type bodyFrame struct {
	br      *bufio.Reader
	left    int64 // bytes still to read of a Content-Length body; -1: body frames it
	body    io.Reader
	chunked *http.Response // the answer whose trailer follows body's last chunk
}

// Read reads as net/http's body does: a Content-Length body ends with its
// last bytes (io.EOF comes with them), one cut short is
// io.ErrUnexpectedEOF, and a chunked body's trailer is read, into
// resp.Trailer, before its io.EOF.
func (f *bodyFrame) Read(p []byte) (int, error) {
	if f.left < 0 {
		n, err := f.body.Read(p)
		if err == io.EOF && f.chunked != nil {
			if terr := readTrailer(f.br, f.chunked); terr != nil {
				err = terr
			}
			f.chunked = nil
		}
		return n, err
	}
	if f.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.br.Read(p)
	f.left -= int64(n)
	switch {
	case err == io.EOF && f.left > 0:
		err = io.ErrUnexpectedEOF
	case err == nil && n > 0 && f.left == 0:
		err = io.EOF
	}
	return n, err
}

// readTrailer reads what follows a chunked body's last chunk, as net/http
// does: nothing but the final CRLF, or trailer fields, which go to
// resp.Trailer.
func readTrailer(br *bufio.Reader, resp *http.Response) error {
	buf, err := br.Peek(2)
	if string(buf) == "\r\n" {
		br.Discard(2)
		return nil
	}
	if len(buf) < 2 {
		return errTrailerEOF
	}
	if err != nil {
		return err
	}
	if !upcomingDoubleCRLF(br) {
		return errors.New("http: suspiciously long trailer after chunked body")
	}
	hdr, err := textproto.NewReader(br).ReadMIMEHeader()
	if err != nil {
		if err == io.EOF {
			return errTrailerEOF
		}
		return err
	}
	if resp.Trailer == nil {
		resp.Trailer = http.Header(hdr)
	} else {
		for k, vv := range hdr {
			resp.Trailer[k] = vv
		}
	}
	return nil
}

var errTrailerEOF = errors.New("http: unexpected EOF reading trailer")

// upcomingDoubleCRLF reports whether the end of a trailer is within br's
// buffer, which bounds a trailer as net/http bounds it.
func upcomingDoubleCRLF(br *bufio.Reader) bool {
	for n := 4; ; n++ {
		buf, err := br.Peek(n)
		if bytes.HasSuffix(buf, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// readPlainHead reads a plain head (see readResponse) off br: ok false
// when the head is not one, or not all in br's buffer, with nothing
// read. It reads nothing from the connection itself: a head that came in
// pieces goes to http.ReadResponse, which waits for what it needs, and
// fails, as it always did.
func readPlainHead(br *bufio.Reader, req *http.Request, resp *http.Response, values []string) (frame bodyFrame, ok bool) {
	if req != nil && req.Method == http.MethodHead {
		return bodyFrame{}, false
	}
	buf, _ := br.Peek(br.Buffered())
	statusLine, rest, ok := cutCRLF(buf)
	if !ok {
		return bodyFrame{}, false
	}
	code, ok := plainStatus(statusLine)
	if !ok {
		return bodyFrame{}, false
	}
	fields := rest
	n, size := 0, len(statusLine)-len("HTTP/1.1 ")
	length, chunked, closing, framing := int64(-1), false, false, 0
	for {
		var line []byte
		if line, rest, ok = cutCRLF(rest); !ok {
			return bodyFrame{}, false
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := plainField(line)
		if !ok {
			return bodyFrame{}, false
		}
		switch framingHeader(name) {
		case "Content-Length":
			length, ok = plainLength(value)
			framing++
		case "Transfer-Encoding":
			chunked = asciiEqualFold(value, "chunked")
			ok = chunked
			framing++
		case "Connection":
			var close bool
			close, ok = hasCloseToken(value)
			closing = closing || close
		case "Pragma", "Trailer":
			ok = false // net/http rewrites them: its own business
		}
		if !ok {
			return bodyFrame{}, false
		}
		size += len(name) + len(value)
		n++
	}
	// One framing header, which net/http would also act on alone.
	if framing != 1 {
		return bodyFrame{}, false
	}
	fields = fields[:len(fields)-len(rest)]
	plainResponse(resp, values, req, statusLine, fields, n, size, closing)
	resp.StatusCode = code
	br.Discard(len(buf) - len(rest))
	if chunked {
		resp.ContentLength = -1
		resp.TransferEncoding = []string{"chunked"}
		return bodyFrame{br: br, left: -1, body: httputil.NewChunkedReader(br), chunked: resp}, true
	}
	resp.ContentLength = length
	return bodyFrame{br: br, left: length}, true
}

// cutCRLF cuts the line that ends b's first LF, which must follow a CR:
// ok false without a LF, or with a bare one.
func cutCRLF(b []byte) (line, rest []byte, ok bool) {
	lf := bytes.IndexByte(b, '\n')
	if lf < 1 || b[lf-1] != '\r' {
		return nil, nil, false
	}
	return b[:lf-1], b[lf+1:], true
}

// plainResponse sets resp to the answer of a plain head, whose header
// lines (fields, through the blank line) readPlainHead checked: n lines
// whose status, names and values are size bytes. Those strings are cut
// from one, and the header's values from values (or one slice when it is
// too short). Transfer-Encoding, and Connection when it says close, are
// left out, as net/http leaves them out.
func plainResponse(resp *http.Response, values []string, req *http.Request, statusLine, fields []byte, n, size int, closing bool) {
	var sb strings.Builder
	sb.Grow(size)
	sb.Write(statusLine[len("HTTP/1.1 "):])
	// What was written stays as it is in the strings taken before: the
	// builder only appends.
	status := sb.String()
	header := make(http.Header, n)
	if len(values) < n {
		values = make([]string, n)
	}
	for {
		line, rest, _ := cutCRLF(fields)
		fields = rest
		if len(line) == 0 {
			break
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		start := sb.Len()
		writeCanonicalKey(&sb, name)
		sb.Write(trimOWS(value))
		key, v := sb.String()[start:start+len(name)], sb.String()[start+len(name):]
		if key == "Transfer-Encoding" || key == "Connection" && closing {
			continue
		}
		if vv, ok := header[key]; ok {
			header[key] = append(vv, v)
			continue
		}
		values[0] = v
		header[key], values = values[:1:1], values[1:]
	}
	*resp = http.Response{
		Status:     status,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     header,
		Close:      closing,
		Request:    req,
	}
}

// plainStatus reads a status line "HTTP/1.1 ddd[ reason]" of a final
// answer that has a body; ok false for any other.
func plainStatus(line []byte) (code int, ok bool) {
	const proto = "HTTP/1.1 "
	if len(line) < len(proto)+3 || string(line[:len(proto)]) != proto {
		return 0, false
	}
	for _, c := range line[len(proto):] {
		if c < ' ' || c == 0x7f {
			return 0, false
		}
	}
	digits := line[len(proto) : len(proto)+3]
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		code = code*10 + int(c-'0')
	}
	if len(line) > len(proto)+3 && line[len(proto)+3] != ' ' {
		return 0, false
	}
	// 1xx is skipped by the caller, and 204 and 304 have no body whatever
	// their head says: net/http's.
	if code < 200 || code == http.StatusNoContent || code == http.StatusNotModified {
		return 0, false
	}
	return code, true
}

// plainField reads a header line "Name: value" whose name is a token and
// whose value has no control bytes, and returns its name and its value
// trimmed; ok false for any other line (folded, a space before the
// colon, a CR in it).
func plainField(line []byte) (name, value []byte, ok bool) {
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 {
		return nil, nil, false
	}
	name, value = line[:colon], line[colon+1:]
	for _, c := range name {
		if !tokenBytes[c] {
			return nil, nil, false
		}
	}
	for _, c := range value {
		if c < ' ' && c != '\t' || c == 0x7f {
			return nil, nil, false
		}
	}
	return name, trimOWS(value), true
}

// trimOWS trims the spaces and tabs around a header value.
func trimOWS(v []byte) []byte {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}

// framingHeader is name's canonical form when it is one of the header
// lines whose meaning net/http acts on, else "".
func framingHeader(name []byte) string {
	var h string
	switch len(name) {
	case len("Content-Length"):
		h = "Content-Length"
	case len("Transfer-Encoding"):
		h = "Transfer-Encoding"
	case len("Connection"):
		h = "Connection"
	case len("Pragma"):
		h = "Pragma"
	case len("Trailer"):
		h = "Trailer"
	default:
		return ""
	}
	if !asciiEqualFold(name, h) {
		return ""
	}
	return h
}

// writeCanonicalKey writes a token as textproto.CanonicalMIMEHeaderKey
// gives it: upper case first and after each dash, lower case elsewhere.
func writeCanonicalKey(sb *strings.Builder, name []byte) {
	upper := true
	for _, c := range name {
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		} else if !upper && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		sb.WriteByte(c)
		upper = c == '-'
	}
}

// tokenBytes are the bytes allowed in a header name (RFC 9110 tchar).
var tokenBytes = func() (t [256]bool) {
	for c := range t {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c < 0x80 && strings.IndexByte("!#$%&'*+-.^_`|~", byte(c)) >= 0
	}
	return t
}()

// plainLength reads a Content-Length that strconv.ParseUint(v, 10, 63)
// takes; ok false for any other, net/http's to refuse.
func plainLength(v []byte) (n int64, ok bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// hasCloseToken reports whether a Connection value lists "close", as
// net/http's reading of it; ok false for a value with non-ASCII bytes.
func hasCloseToken(v []byte) (close, ok bool) {
	for _, c := range v {
		if c >= 0x80 {
			return false, false
		}
	}
	for len(v) > 0 {
		token, rest, _ := bytes.Cut(v, []byte(","))
		if asciiEqualFold(bytes.Trim(token, " \t"), "close") {
			return true, true
		}
		v = rest
	}
	return false, true
}

// asciiEqualFold reports whether b is s in any ASCII case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i, c := range b {
		if lowerASCII(c) != lowerASCII(s[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
