package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// startSim starts a server on a loopback port for one test.
func startSim(t testing.TB, cfg Config) (*Server, string) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, url
}

// post sends a JSON body and returns status, headers and body.
func post(t testing.TB, url string, body any, header ...string) (int, http.Header, []byte) {
	t.Helper()
	resp := do(t, "POST", url, body, header...)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return resp.StatusCode, resp.Header, data
}

// do sends a request; header holds name, value pairs.
func do(t testing.TB, method, url string, body any, header ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, ok := body.(string)
		if !ok {
			b, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			raw = string(b)
		}
		rd = strings.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp
}

func get(t testing.TB, url string) (int, []byte) {
	t.Helper()
	resp := do(t, "GET", url, nil)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// sseEvents splits a stream body into its data payloads and comment lines.
func sseEvents(body []byte) (data []string, comments []string) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		case strings.HasPrefix(line, ":"):
			comments = append(comments, line)
		}
	}
	return data, comments
}

func ints(r gjson.Result) []int {
	var out []int
	for _, v := range r.Array() {
		out = append(out, int(v.Int()))
	}
	return out
}

func prompt(n, salt int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = 100 + (i*7+salt*131)%5000
	}
	return ids
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang guard, not a measure
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

func readAllErr(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}
