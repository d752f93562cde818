// Package statusfile is the status file generate --status-file writes and
// tokstat reads: one JSON object saying where a run stands, rewritten
// atomically (a temporary file in the same folder, synced, renamed over the
// old one, the folder synced) so that a reader never sees half of one, even
// when the writer is killed.
//
// The fields are documented in generate(1), STATUS FILE. Version counts
// incompatible changes; fields are only ever added within a version.
package statusfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tidwall/gjson"
)

// Version is the format written. A reader refuses a newer one.
const Version = 1

// The states of a run.
const (
	StateRunning  = "running"
	StateFinished = "finished" // exited 0
	StateFailed   = "failed"   // exited with another status
)

// Status is one status file.
type Status struct {
	Version        int       `json:"version"`
	Tool           string    `json:"tool"`
	PID            int       `json:"pid"`
	Host           string    `json:"host"`
	State          string    `json:"state"`
	Started        time.Time `json:"started"`
	Updated        time.Time `json:"updated"`
	ElapsedSeconds float64   `json:"elapsed_seconds"`
	// IntervalSeconds is how often the file is rewritten while running: a
	// file much older than that belongs to a run that died.
	IntervalSeconds float64  `json:"interval_seconds"`
	Records         Records  `json:"records"`
	Tokens          Tokens   `json:"tokens"`
	Cost            Cost     `json:"cost"`
	Rates           Rates    `json:"rates"`
	ETASeconds      *float64 `json:"eta_seconds"` // null: unknown
	Servers         []Server `json:"servers"`
	Key             *Key     `json:"key"`  // null: not an OpenRouter key
	Exit            *Exit    `json:"exit"` // null while running
}

// Records counts what became of the records.
type Records struct {
	// Already counts the records of the --already files: what earlier
	// runs wrote.
	Already     int64 `json:"already"`
	Read        int64 `json:"read"`
	Total       int64 `json:"total"` // expected; 0: unknown
	Done        int64 `json:"done"`
	OK          int64 `json:"ok"`
	Errors      int64 `json:"errors"`
	Cut         int64 `json:"cut"`
	Cancelled   int64 `json:"cancelled"`
	InFlight    int64 `json:"in_flight"`
	Truncated   int64 `json:"truncated"`
	Empty       int64 `json:"empty"`
	Aborted     int64 `json:"aborted"`
	Retries     int64 `json:"retries"`
	RateLimited int64 `json:"rate_limited"`
}

// Tokens are the tokens written and the token budget.
type Tokens struct {
	Prompt     int64 `json:"prompt"`
	Completion int64 `json:"completion"`
	// Spent is what counts against Budget: this run's and Already.
	Spent   int64  `json:"spent"`
	Already int64  `json:"already"` // written by earlier runs (--already)
	Budget  int64  `json:"budget"`  // 0: none
	Count   string `json:"count"`   // what the budget counts: total, prompt, completion
}

// Cost is the money spent and the cost budget, in USD.
type Cost struct {
	SpentUSD  float64 `json:"spent_usd"`
	BudgetUSD float64 `json:"budget_usd"` // 0: none
}

// Rates are averages since the start.
type Rates struct {
	RequestsPerSecond     float64 `json:"requests_per_second"`
	OutputTokensPerSecond float64 `json:"output_tokens_per_second"`
}

// Server is one --url.
type Server struct {
	URL     string   `json:"url"`
	Down    bool     `json:"down"`
	Metrics *Metrics `json:"metrics"` // null: the server reports no load
}

// The places a server's load is read from, as Metrics.Source names them.
// They are declared here, where the status file's format is, and
// servermetrics, which reads them, takes them from here: tokstat reads a
// status file through this package alone, and so links no HTTP client (whose
// packages' start-up every run of tokstat would pay).
const (
	SourceMetrics = "/metrics"
	SourceLoads   = "/v1/loads"
	SourceGetLoad = "/get_load" // requests only: no KV use, no throughput
)

// Metrics is the server's own view of its load, ranks added up.
type Metrics struct {
	// Source is where it was read: SourceMetrics, SourceLoads or
	// SourceGetLoad.
	Source        string  `json:"source"`
	Running       float64 `json:"running"`
	Queued        float64 `json:"queued"`
	TokenUsage    float64 `json:"token_usage"`
	MaxTokenUsage float64 `json:"max_token_usage"`
	GenThroughput float64 `json:"gen_throughput"`
	UsedTokens    float64 `json:"used_tokens"`
	CacheHitRate  float64 `json:"cache_hit_rate"`
	Ranks         int     `json:"ranks"`
}

// Key is an OpenRouter key's limit and credit when the run started.
type Key struct {
	Limit     *float64 `json:"limit"` // null: no limit
	Usage     float64  `json:"usage"`
	Remaining *float64 `json:"remaining"`
}

// Exit is how a finished run ended.
type Exit struct {
	Code   int    `json:"code"`
	Reason string `json:"reason"` // why it stopped: "input done", "token budget reached", ...
	Error  string `json:"error"`  // the error it exited with, "" for none
}

// Write replaces path with s atomically. It writes over a regular file or
// nothing only (see CheckTarget).
func Write(path string, s *Status) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return WriteAtomic(path, append(data, '\n'))
}

// CheckTarget reports whether path may be replaced by WriteAtomic: it does
// not exist yet, or it is a regular file. A rename over anything else would
// put a regular file in its place: a symlink would stop pointing where it
// did, a FIFO a reader waits on would vanish, and as root /dev/null would
// become a file. Such a path is refused, never written through.
func CheckTarget(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode().IsRegular():
		return nil
	}
	return fmt.Errorf("%s is %s: it is replaced by a regular file on every write, so it is refused (give the path of a regular file, or leave the flag out)", path, Kind(fi.Mode()))
}

// Kind names what a file that is not a regular one is, for messages.
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// MaxSize is the most ReadFile reads: a status file is a few kilobytes.
const MaxSize = 16 << 20

// ReadFile reads the bytes of a status file. Only a regular file is read
// (through symbolic links): a FIFO would hold the reader until a writer
// came, a device such as /dev/zero would never end. It is opened without
// blocking and checked once open, so that a FIFO put there in between
// does not hold it either.
func ReadFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, not a regular file: not read as a status file", path, Kind(fi.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err == nil && len(data) > MaxSize {
		err = fmt.Errorf("%s is larger than %d MiB: not a status file", path, MaxSize>>20)
	}
	return data, err
}

// WriteAtomic replaces path with data: a temporary file in the same folder,
// synced and renamed over it, so that a reader sees the old content or the
// new, never half. Only a regular file, or nothing, is replaced
// (CheckTarget).
func WriteAtomic(path string, data []byte) error {
	if err := CheckTarget(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return werr
	}
	// The rename itself reaches the disk with the folder.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Read reads a status file. A file that is no status file of a version
// this synthpipe knows is a *FormatError.
func Read(path string) (*Status, error) { return read(path, false) }

// ReadTolerant reads a status file as Read does, but for its figures: a
// figure of Rates or of a server's Metrics that no JSON float64 holds, as a
// hand-edited file may have it (1e999, "NaN", "12"), is read as gjson reads
// it (+Inf, NaN, 12) where Read refuses the file. It is for a reader that
// judges each figure itself (estimate names and leaves out those that are
// no speed). Any other field of the wrong type is left zero; a field that
// fails its own parse (a time that is none) is still a *FormatError.
func ReadTolerant(path string) (*Status, error) { return read(path, true) }

func read(path string, tolerant bool) (*Status, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Status
	err = json.Unmarshal(data, &s)
	var typeErr *json.UnmarshalTypeError
	if tolerant && errors.As(err, &typeErr) {
		err = nil
		readFigures(gjson.ParseBytes(data), &s)
	}
	if err != nil {
		return nil, &FormatError{Path: path, Err: err}
	}
	if s.Version < 1 || s.Version > Version {
		return nil, &FormatError{Path: path, Version: s.Version}
	}
	return &s, nil
}

// readFigures reads the figures of Rates and of each server's Metrics from
// doc as gjson reads numbers.
func readFigures(doc gjson.Result, s *Status) {
	figure := func(r gjson.Result, v *float64) {
		if r.Exists() {
			*v = r.Float()
		}
	}
	figure(doc.Get("rates.requests_per_second"), &s.Rates.RequestsPerSecond)
	figure(doc.Get("rates.output_tokens_per_second"), &s.Rates.OutputTokensPerSecond)
	for i, srv := range doc.Get("servers").Array() {
		m := srv.Get("metrics")
		if i >= len(s.Servers) || !m.IsObject() {
			continue
		}
		if s.Servers[i].Metrics == nil {
			s.Servers[i].Metrics = &Metrics{}
		}
		sm := s.Servers[i].Metrics
		for name, v := range map[string]*float64{"running": &sm.Running, "queued": &sm.Queued,
			"token_usage": &sm.TokenUsage, "max_token_usage": &sm.MaxTokenUsage, "gen_throughput": &sm.GenThroughput,
			"used_tokens": &sm.UsedTokens, "cache_hit_rate": &sm.CacheHitRate} {
			figure(m.Get(name), v)
		}
	}
}

// FormatError is a file that is no status file this synthpipe reads.
type FormatError struct {
	Path    string
	Err     error // why its JSON is no status file; nil when its version is what is wrong
	Version int   // its version
}

func (e *FormatError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: not a status file: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("%s: status file version %d; this synthpipe reads 1 to %d (upgrade it)", e.Path, e.Version, Version)
}

func (e *FormatError) Unwrap() error { return e.Err }
