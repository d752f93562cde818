package tokstat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/statusfile"
)

// The job view: tokstat given folders shows every dataset under them on one
// screen, from the status files generate --status-file writes
// (scripts/run-dataset.sh puts status.json beside each dataset's out.jsonl)
// and, for a dataset without one, from its output alone.

// Dataset states beyond statusfile's.
const (
	stateDied      = "died"      // running, but its process is gone
	stateStale     = "stale"     // running, on another host, and silent for long
	stateNoStatus  = "no status" // an output without a status file
	stateStopped   = "stopped"   // ended by a signal (exit 129, 130, 143)
	stateComplete  = "complete"  // not finished by its status file, yet its output answers every prompt
	staleIntervals = 3           // rewrites missed before a run counts as stale
	staleGrace     = time.Minute
)

// datasetView is one row of the job view.
type datasetView struct {
	Dataset    string `json:"dataset"`
	State      string `json:"state"`
	StatusFile string `json:"status_file,omitempty"`
	Output     string `json:"output,omitempty"`
	// Records, Soft and Tokens are counted in the output when there is
	// one (Counted), else taken from the status file.
	Records    int64    `json:"records"`       // answers written, earlier runs' included
	Total      int64    `json:"total"`         // the dataset's prompts (or the status's expected count), 0: unknown
	Errors     int64    `json:"errors"`        // the latest run's, from its status
	Soft       int64    `json:"soft_failures"` // truncated, empty, aborted
	Retries    int64    `json:"retries"`       // the latest run's, from its status
	Tokens     int64    `json:"tokens"`        // written, earlier runs' included
	Counted    bool     `json:"counted_in_output"`
	Budget     int64    `json:"budget"` // 0: none
	SpentUSD   float64  `json:"spent_usd"`
	ETASeconds *float64 `json:"eta_seconds"`
	Server     string   `json:"server,omitempty"` // the server's view, in words
	Note       string   `json:"note,omitempty"`   // how it ended, or what is wrong
	// StatusAgeSecs is how old the status file is: what the row takes from
	// it (state, errors, retries, budget, ETA) is as of then.
	StatusAgeSecs float64 `json:"status_age_seconds"`
}

// jobView is the whole job.
type jobView struct {
	Datasets []datasetView `json:"datasets"`
	Total    struct {
		Datasets int            `json:"datasets"`
		States   map[string]int `json:"states"`
		Records  int64          `json:"records"`
		Total    int64          `json:"total"` // 0 unless every dataset's total is known
		Soft     int64          `json:"soft_failures"`
		Tokens   int64          `json:"tokens"`
		Budget   int64          `json:"budget"`
		// BudgetedTokens are the tokens of the datasets with a budget.
		BudgetedTokens int64   `json:"budgeted_tokens"`
		SpentUSD       float64 `json:"spent_usd"`
		Errors         int64   `json:"errors"`
		// ETASeconds is the longest of the running datasets' ETAs.
		ETASeconds *float64 `json:"eta_seconds"`
	} `json:"total"`
}

// statusName matches status.json and status.shard-K-of-N.json; outName the
// outputs beside them.
var (
	statusName = regexp.MustCompile(`^status(\.shard-\d+-of-\d+)?\.json$`)
	outName    = regexp.MustCompile(`^out(\.shard-\d+-of-\d+)?\.jsonl(\.zst|\.gz)?$`)
)

// collectJob walks the folders for datasets (following symbolic links:
// a job's folder often links its datasets in); a status file or output
// that is not a regular file (a FIFO, a device) is named in a warning and
// left out, never opened.
func collectJob(stdin io.Reader, roots []string, cfg *config, now time.Time, warn func(string)) (*jobView, error) {
	type found struct{ status, out string }
	byKey := map[string]*found{}
	var keys []string
	at := func(key string) *found {
		f := byKey[key]
		if f == nil {
			f = &found{}
			byKey[key] = f
			keys = append(keys, key)
		}
		return f
	}
	visit := func(path string, mode fs.FileMode) {
		name := filepath.Base(path)
		dir := filepath.Dir(path)
		status, out := statusName.FindStringSubmatch(name), outName.FindStringSubmatch(name)
		switch {
		case status == nil && out == nil:
		case !mode.IsRegular():
			warn(fmt.Sprintf("%s is %s, not a regular file: left out of the job view", cliutil.Printable(path), statusfile.Kind(mode)))
		case status != nil:
			at(dir + "\x00" + status[1]).status = path
		default:
			at(dir + "\x00" + out[1]).out = path
		}
	}
	for _, root := range roots {
		if err := walkFollowing(root, visit); err != nil {
			return nil, err
		}
	}
	if len(keys) == 0 {
		return nil, exitcode.NoInputf("%s: no dataset in it: a dataset is a folder with status.json (generate --status-file) or out.jsonl; give record files to count records", strings.Join(roots, ", "))
	}
	sort.Strings(keys)
	host, _ := os.Hostname()
	job := &jobView{}
	unknownTotal := false // a total of records needs every dataset's
	job.Total.States = map[string]int{}
	for _, key := range keys {
		f := byKey[key]
		dir, shard, _ := strings.Cut(key, "\x00")
		name := datasetName(roots, dir)
		if shard != "" {
			name += " " + strings.ReplaceAll(strings.TrimPrefix(shard, ".shard-"), "-of-", "/")
		}
		v := viewDataset(stdin, datasetView{Dataset: name, StatusFile: f.status, Output: f.out}, dir, shard == "", cfg, host, now)
		job.Datasets = append(job.Datasets, v)
		t := &job.Total
		t.Datasets++
		t.States[v.State]++
		t.Records += v.Records
		t.Total += v.Total
		unknownTotal = unknownTotal || v.Total == 0
		t.Soft += v.Soft
		t.Tokens += v.Tokens
		t.Budget += v.Budget
		if v.Budget > 0 {
			t.BudgetedTokens += v.Tokens
		}
		t.SpentUSD += v.SpentUSD
		t.Errors += v.Errors
		if v.ETASeconds != nil && (t.ETASeconds == nil || *v.ETASeconds > *t.ETASeconds) {
			eta := *v.ETASeconds
			t.ETASeconds = &eta
		}
	}
	if unknownTotal {
		job.Total.Total = 0
	}
	return job, nil
}

// walkFollowing calls visit for every file beneath root, in lexical order,
// with its mode after symbolic links are followed: a link to a folder is
// walked as the folder (root too, with or without a trailing slash), each
// folder once, so that a link back up does not loop.
func walkFollowing(root string, visit func(path string, mode fs.FileMode)) error {
	seen := map[[2]uint64]bool{}
	var walk func(dir string) error
	walk = func(dir string) error {
		fi, err := os.Stat(dir)
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			id := [2]uint64{uint64(st.Dev), st.Ino}
			if seen[id] {
				return nil
			}
			seen[id] = true
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			path := filepath.Join(dir, e.Name())
			mode := e.Type()
			if mode&fs.ModeSymlink != 0 {
				fi, err := os.Stat(path)
				if err != nil {
					continue // a dangling link holds nothing
				}
				mode = fi.Mode()
			}
			if mode.IsDir() {
				if err := walk(path); err != nil {
					return err
				}
				continue
			}
			visit(path, mode)
		}
		return nil
	}
	return walk(root)
}

// viewDataset fills a dataset's row: its state, errors, retries, budget and
// ETA from its status file (as old as the file: StatusAgeSecs), its
// records, soft failures and tokens counted in its output now, and its
// total from its prompts file (a whole dataset only: a shard gets a part).
func viewDataset(stdin io.Reader, v datasetView, dir string, whole bool, cfg *config, host string, now time.Time) datasetView {
	var st *statusfile.Status
	if v.StatusFile != "" {
		var err error
		if st, err = statusfile.Read(v.StatusFile); err != nil {
			v.State, v.Note = "unreadable", err.Error()
		} else {
			fill(&v, st, host, now)
		}
	} else {
		v.State = stateNoStatus
	}
	outputNewer, statusNote := false, v.Note
	if v.Output != "" {
		c, err := countOutput(stdin, v.Output, jsonl.Options{MaxLine: cfg.input.MaxLine}, cfg.idPath)
		if err != nil {
			v.Note = joinNotes(v.Note, err.Error())
		}
		v.Records, v.Tokens, v.Soft, v.Counted = c.records, c.tokens, c.soft, true
		if st == nil {
			v.Errors = c.errors
		}
		if st != nil && v.State != statusfile.StateRunning {
			if fi, err := os.Stat(v.Output); err == nil && fi.ModTime().After(st.Updated.Add(time.Second)) {
				outputNewer = true
				v.Note = joinNotes(v.Note, fmt.Sprintf("%s was written after its status file (by a run without --status-file?): state, errors, budget and ETA are as of %s ago",
					filepath.Base(v.Output), time.Duration(v.StatusAgeSecs)*time.Second))
			}
		}
	}
	if whole {
		if n := countPrompts(stdin, dir, jsonl.Options{MaxLine: cfg.input.MaxLine}); n > 0 {
			v.Total = n
		}
	}
	// A run that wrote no status file (the README's API loop) may have
	// finished what a stopped or failed run left: say so, rather than "run
	// the same command again".
	if outputNewer && v.State != statusfile.StateFinished && v.Total > 0 && v.Records >= v.Total {
		v.State = stateComplete
		v.Note = fmt.Sprintf("%s answers every prompt (%d/%d), written after its status file (by a run without --status-file?), which said: %s",
			filepath.Base(v.Output), v.Records, v.Total, statusNote)
	}
	return v
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// stopSignals are the exit statuses of a run stopped by a signal.
var stopSignals = map[int]string{129: "SIGHUP", 130: "SIGINT", 143: "SIGTERM"}

// datasetName is dir relative to the root it was found under ("." for the
// root itself: its own name then).
func datasetName(roots []string, dir string) string {
	for _, root := range roots {
		if rel, err := filepath.Rel(root, dir); err == nil && !strings.HasPrefix(rel, "..") {
			if rel == "." {
				return filepath.Base(filepath.Clean(root))
			}
			return rel
		}
	}
	return dir
}

// fill takes a dataset's row from its status file.
func fill(v *datasetView, st *statusfile.Status, host string, now time.Time) {
	v.State = st.State
	switch st.State {
	case statusfile.StateRunning, statusfile.StateFinished, statusfile.StateFailed:
	default:
		v.State, v.Note = "unreadable", fmt.Sprintf("state %q is none of running, finished or failed: not a status file generate wrote", st.State)
		return
	}
	// The dataset's records: earlier runs' and this one's.
	v.Records, v.Errors = st.Records.Already+st.Records.OK, st.Records.Errors
	if st.Records.Total > 0 {
		v.Total = st.Records.Already + st.Records.Total
	}
	v.Soft = st.Records.Truncated + st.Records.Empty + st.Records.Aborted
	v.Retries = st.Records.Retries
	v.Tokens, v.Budget, v.SpentUSD = st.Tokens.Spent, st.Tokens.Budget, st.Cost.SpentUSD
	v.StatusAgeSecs = math.Round(now.Sub(st.Updated).Seconds())
	if st.Exit != nil {
		v.Note = fmt.Sprintf("exit %d: %s", st.Exit.Code, st.Exit.Reason)
		if st.Exit.Error != "" {
			v.Note = fmt.Sprintf("exit %d: %s", st.Exit.Code, st.Exit.Error)
		}
		if sig, ok := stopSignals[st.Exit.Code]; ok {
			// Ctrl-C, kill or a closed session: no failure, a stop.
			v.State = stateStopped
			v.Note = fmt.Sprintf("exit %d: stopped by %s; run the same command again to go on", st.Exit.Code, sig)
		}
		return
	}
	switch {
	case st.Host == host && !alive(st.PID):
		v.State, v.Note = stateDied, fmt.Sprintf("process %d is gone (killed?); last written %s ago", st.PID, time.Duration(v.StatusAgeSecs)*time.Second)
		return
	case now.Sub(st.Updated) > staleIntervals*time.Duration(st.IntervalSeconds*float64(time.Second))+staleGrace:
		v.State, v.Note = stateStale, fmt.Sprintf("not rewritten for %s (on %s)", time.Duration(v.StatusAgeSecs)*time.Second, st.Host)
		return
	}
	v.ETASeconds = st.ETASeconds
	var parts []string
	for _, s := range st.Servers {
		if s.Down {
			parts = append(parts, s.URL+" down")
		}
		if m := s.Metrics; m != nil {
			load := fmt.Sprintf("%s: %.0f running, %.0f queued", s.URL, m.Running, m.Queued)
			// SGLang's /get_load reports requests only.
			if m.Source != statusfile.SourceGetLoad {
				load += fmt.Sprintf(", KV %.0f%%, %s tok/s", 100*m.TokenUsage, cliutil.Thousands(int64(m.GenThroughput)))
			}
			parts = append(parts, load)
		}
	}
	v.Server = strings.Join(parts, "; ")
}

// alive reports whether a process with this pid exists on this host.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// jobRows is the job view's table (a row per dataset and the total, the
// header first) and the count of each state, in words.
func jobRows(job *jobView) (rows [][]string, states []string) {
	rows = [][]string{{"dataset", "state", "records", "errors", "soft", "retries", "tokens", "budget", "used", "ETA", "status"}}
	for _, v := range job.Datasets {
		age := "-"
		if v.StatusFile != "" {
			age = (time.Duration(v.StatusAgeSecs) * time.Second).String() + " ago"
		}
		rows = append(rows, []string{v.Dataset, v.State, recordsCell(v.Records, v.Total), cliutil.Thousands(v.Errors), cliutil.Thousands(v.Soft),
			cliutil.Thousands(v.Retries), cliutil.Thousands(v.Tokens), budgetCell(v.Budget), usedCell(v.Tokens, v.Budget), etaCell(v.ETASeconds), age})
	}
	t := job.Total
	for _, s := range []string{statusfile.StateRunning, statusfile.StateFinished, stateComplete, stateStopped, statusfile.StateFailed, stateDied, stateStale, stateNoStatus, "unreadable"} {
		if n := t.States[s]; n > 0 {
			states = append(states, fmt.Sprintf("%d %s", n, s))
		}
	}
	rows = append(rows, []string{"total", "", recordsCell(t.Records, t.Total), cliutil.Thousands(t.Errors), cliutil.Thousands(t.Soft), "",
		cliutil.Thousands(t.Tokens), budgetCell(t.Budget), usedCell(t.BudgetedTokens, t.Budget), etaCell(t.ETASeconds), ""})
	return rows, states
}

// writeJobTable prints the job on one screen: a row per dataset and the
// total, then what the running datasets' servers say and how the others
// ended.
func writeJobTable(w io.Writer, job *jobView) error {
	rows, states := jobRows(job)
	t := job.Total
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, cell := range r {
			// Names and states come from folders and status files: no
			// escape sequence in them reaches the terminal.
			r[i] = cliutil.Printable(cell)
			width[i] = max(width[i], len(r[i]))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, cell := range r {
			pad := strings.Repeat(" ", width[i]-len(cell))
			switch {
			case i < 2: // names, left
				b.WriteString(cell + pad)
			default:
				b.WriteString(pad + cell)
			}
			if i < len(r)-1 {
				b.WriteString("  ")
			}
		}
		trimmed := strings.TrimRight(b.String(), " ")
		b.Reset()
		b.WriteString(trimmed + "\n")
	}
	fmt.Fprintf(&b, "%s: %s\n", cliutil.Count(int64(t.Datasets), "dataset"), strings.Join(states, ", "))
	b.WriteString("records, soft and tokens: counted in the output files now; state, errors, retries, budget and ETA: from the status files, as old as \"status\" says\n")
	for _, v := range job.Datasets {
		for _, line := range []string{v.Server, v.Note} {
			if line != "" {
				fmt.Fprintf(&b, "%s: %s\n", cliutil.Printable(v.Dataset), cliutil.Printable(line))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// recordsCell is "records/total", or the records alone when the total is
// unknown.
func recordsCell(records, total int64) string {
	if total <= 0 {
		return cliutil.Thousands(records)
	}
	return cliutil.Thousands(records) + "/" + cliutil.Thousands(total)
}

func budgetCell(b int64) string {
	if b == 0 {
		return "-"
	}
	return cliutil.Thousands(b)
}

func usedCell(tokens, budget int64) string {
	if budget == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(tokens)/float64(budget))
}

func etaCell(eta *float64) string {
	if eta == nil {
		return "-"
	}
	return (time.Duration(*eta) * time.Second).Round(time.Second).String()
}

func writeJobJSON(w io.Writer, job *jobView) error {
	data, err := json.MarshalIndent(job, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// folders reports whether the arguments are folders (the job view); a mix
// of folders and files is a usage error.
func folders(args []string) (bool, error) {
	dirs := 0
	for _, a := range args {
		if a == "-" {
			continue
		}
		if fi, err := os.Stat(a); err == nil && fi.IsDir() {
			dirs++
		}
	}
	if dirs > 0 && dirs < len(args) {
		return false, cliutil.Usagef("give folders (a job's datasets) or files (records), not both")
	}
	return dirs > 0, nil
}
