package estimate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/statusfile"
)

// runningJob is what a generate status file (--status-file, see
// synthpipe-status(7)) says of a job against one server: the server's own
// reading of its batch when it serves metrics, else the job's rate.
type runningJob struct {
	path          string
	updated       string
	running       float64 // sglang:num_running_reqs, 0 unknown
	genThroughput float64 // sglang:gen_throughput, 0 unknown
	clientRate    float64 // the job's output tokens per second over its servers
	unusable      string  // the figures left out as no speed (NaN, 1e-300, 1e999), in words
}

// checkFigures leaves out the figures of j that are no speed or count.
func (j *runningJob) checkFigures() {
	var bad []string
	for _, f := range []struct {
		name string
		v    *float64
		ok   func(float64) bool
	}{
		{"gen_throughput", &j.genThroughput, usableRate},
		{"rates.output_tokens_per_second", &j.clientRate, usableRate},
		{"running", &j.running, func(v float64) bool { return v >= 0 && v <= 1e9 }},
	} {
		if *f.v != 0 && !f.ok(*f.v) {
			bad = append(bad, fmt.Sprintf("%s %g", f.name, *f.v))
			*f.v = 0
		}
	}
	j.unusable = strings.Join(bad, ", ")
}

// readStatus reads a status file written by generate --status-file,
// tolerating figures no float64 holds (statusfile.ReadTolerant): they are
// judged one by one (checkFigures), not the whole file refused.
func readStatus(path string) (*statusfile.Status, error) {
	st, err := statusfile.ReadTolerant(path)
	var format *statusfile.FormatError
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return nil, exitcode.DataErrorf("--%s %s: not a JSON status file (want the file generate --status-file writes)", flagStatus, path)
	case errors.As(err, &format) && format.Err == nil:
		return nil, exitcode.DataErrorf("--%s %s: status file version %d, this estimate reads up to %d", flagStatus, path, format.Version, statusfile.Version)
	case errors.As(err, &format):
		return nil, exitcode.DataErrorf("--%s %v", flagStatus, err)
	case err != nil:
		return nil, exitcode.NoInputf("--%s %v", flagStatus, err)
	}
	if st.Tool != "generate" {
		return nil, exitcode.DataErrorf("--%s %s: written by %q, want a generate --status-file", flagStatus, path, st.Tool)
	}
	return st, nil
}

// jobOn returns what the status files say of the server at url: the first
// file that names it, or ok false.
func jobOn(docs []statusDoc, url string) (runningJob, bool) {
	for _, d := range docs {
		for _, s := range d.st.Servers {
			if backend.ServerKey(s.URL) != backend.ServerKey(url) {
				continue
			}
			j := runningJob{path: d.path}
			if !d.st.Updated.IsZero() {
				j.updated = d.st.Updated.Format(time.RFC3339Nano)
			}
			if m := s.Metrics; m != nil {
				j.running, j.genThroughput = m.Running, m.GenThroughput
			}
			// The job's rate is over all its servers: this one's share.
			j.clientRate = d.st.Rates.OutputTokensPerSecond / float64(len(d.st.Servers))
			j.checkFigures()
			return j, j.genThroughput > 0 || j.clientRate > 0
		}
	}
	return runningJob{}, false
}

// statusDoc is one --status file, read.
type statusDoc struct {
	path string
	st   *statusfile.Status
}

func readStatuses(paths []string) ([]statusDoc, error) {
	var docs []statusDoc
	for _, p := range paths {
		st, err := readStatus(p)
		if err != nil {
			return nil, err
		}
		docs = append(docs, statusDoc{p, st})
	}
	return docs, nil
}

// source names where a speed from a status file came from.
func (j runningJob) source(what string) string {
	return fmt.Sprintf("status file %s (as of %s): %s", j.path, j.updated, what)
}
