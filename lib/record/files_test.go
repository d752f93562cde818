package record

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/jsonl"
)

// TestSumTokensReadAhead sums a file large enough to be scanned ahead on
// two CPUs, and on one (where it is not): the sums, the lines skipped and the
// error that stops a strict read are the same.
func TestSumTokensReadAhead(t *testing.T) {
	var data bytes.Buffer
	for i := 0; data.Len() < 6<<20; i++ {
		fmt.Fprintf(&data, `{"id":"r%d","input_ids":[%s1],"completion_tokens":%d,"finish_reason":"stop"}`+"\n", i, strings.Repeat("123,", i%500), i%7)
		switch i {
		case 3000:
			data.WriteString(`{"id":"bad","prompt_tokens":-1}` + "\n")
		case 5000:
			data.WriteString(`{"id":"failed","error":"timeout","prompt_tokens":5}` + "\n")
		}
	}
	data.WriteString(`{"id":"torn"`)
	path := filepath.Join(t.TempDir(), "out.jsonl")
	if err := os.WriteFile(path, data.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := func(procs int, skipInvalid bool) string {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var skipped []string
		opt := jsonl.Options{SkipInvalid: skipInvalid, Skipped: func(pos string, err error) { skipped = append(skipped, pos+": "+err.Error()) }}
		s, err := SumTokens(nil, []string{path}, opt, NewScanner("", true, ""), CountTotal)
		return fmt.Sprintf("%d tokens in %d records, skipped %q, error %v", s.Tokens, s.Records, skipped, err)
	}
	for _, skipInvalid := range []bool{true, false} {
		serial, ahead := sum(1, skipInvalid), sum(2, skipInvalid)
		if serial != ahead {
			t.Errorf("skip invalid %v: read ahead: %s\nserially: %s", skipInvalid, ahead, serial)
		}
		t.Log(ahead)
	}
}
