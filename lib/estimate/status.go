package estimate

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/jsonl"
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

// readStatus reads a status file written by generate --status-file.
func readStatus(path string) (gjson.Result, error) {
	b, err := statusfile.ReadFile(path)
	if err != nil {
		return gjson.Result{}, exitcode.NoInputf("--%s %v", flagStatus, err)
	}
	if !jsonl.Valid(b) {
		return gjson.Result{}, exitcode.DataErrorf("--%s %s: not a JSON status file (want the file generate --status-file writes)", flagStatus, path)
	}
	doc := gjson.ParseBytes(b)
	if tool := doc.Get("tool").String(); tool != "generate" {
		return gjson.Result{}, exitcode.DataErrorf("--%s %s: written by %q, want a generate --status-file", flagStatus, path, tool)
	}
	if v := doc.Get("version").Int(); v < 1 || v > statusfile.Version {
		return gjson.Result{}, exitcode.DataErrorf("--%s %s: status file version %d, this estimate reads up to %d", flagStatus, path, v, statusfile.Version)
	}
	return doc, nil
}

// jobOn returns what the status files say of the server at url: the first
// file that names it, or ok false.
func jobOn(docs []statusDoc, url string) (runningJob, bool) {
	for _, d := range docs {
		servers := d.doc.Get("servers").Array()
		for _, s := range servers {
			if backend.ServerKey(s.Get("url").String()) != backend.ServerKey(url) {
				continue
			}
			j := runningJob{path: d.path, updated: cliutil.Printable(d.doc.Get("updated").String())}
			if m := s.Get("metrics"); m.IsObject() {
				j.running, j.genThroughput = m.Get("running").Float(), m.Get("gen_throughput").Float()
			}
			// The job's rate is over all its servers: this one's share.
			j.clientRate = d.doc.Get("rates.output_tokens_per_second").Float() / float64(len(servers))
			j.checkFigures()
			return j, j.genThroughput > 0 || j.clientRate > 0
		}
	}
	return runningJob{}, false
}

// statusDoc is one --status file, read.
type statusDoc struct {
	path string
	doc  gjson.Result
}

func readStatuses(paths []string) ([]statusDoc, error) {
	var docs []statusDoc
	for _, p := range paths {
		doc, err := readStatus(p)
		if err != nil {
			return nil, err
		}
		docs = append(docs, statusDoc{p, doc})
	}
	return docs, nil
}

// source names where a speed from a status file came from.
func (j runningJob) source(what string) string {
	return fmt.Sprintf("status file %s (as of %s): %s", j.path, j.updated, what)
}
