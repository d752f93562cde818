package tokstat

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/idset"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
	"github.com/synthpipe/synthpipe/lib/softfail"
)

// format is how the report is printed.
type format int

const (
	formatTable format = iota
	formatTSV
	formatJSON
	formatTotal
	formatHTML
)

func run(c *cli.Context, cfg *config) (err error) {
	if err := cfg.check(c); err != nil {
		return err
	}
	if cfg.jobs {
		job, err := collectJob(c.App.Reader, cfg.files, cfg, time.Now(), cliutil.Warner(c))
		if err != nil {
			return err
		}
		switch cfg.format {
		case formatJSON:
			return writeJobJSON(c.App.Writer, job)
		case formatHTML:
			return writeJobHTML(c.App.Reader, c.App.Writer, cfg, job, cliutil.Warner(c))
		}
		return writeJobTable(c.App.Writer, job)
	}
	// Check every file before reading any: a missing last file should not
	// cost a scan of the first ones.
	in, err := jsonl.Open(c.App.Reader, cfg.files, cfg.input)
	if err != nil {
		return err
	}
	in.Close()

	col := newCollector(cfg, cliutil.Warner(c))
	for _, name := range cfg.files {
		if err := col.readFile(c.App.Reader, name); err != nil {
			return err
		}
	}
	col.finish()
	w := c.App.Writer
	switch cfg.format {
	case formatTotal:
		_, err = fmt.Fprintln(w, col.total.totalTokens())
	case formatJSON:
		err = writeJSON(w, cfg, col.total, col.groups)
	case formatTSV:
		err = writeTSV(w, cfg, col.total, col.groups)
	case formatHTML:
		err = writeFilesHTML(w, cfg, col)
	default:
		err = writeTable(w, cfg, col.total, col.groups)
		if err == nil && cfg.hist {
			err = writeHistogram(w, col.total.lengths, plainBars())
		}
	}
	return err
}

// collector reads the input into the total and the groups.
type collector struct {
	cfg     *config
	input   jsonl.Options // cfg.input, with skipped lines named
	scan    *record.Scanner
	warn    func(string)
	total   *stats
	groups  []*stats
	byName  map[string]*stats
	ids     *idset.Set // nil for --total, which needs no duplicates
	grouper *record.Grouper
	perFile bool
	invalid *cliutil.InvalidNamer // names the first lines skipped as invalid
	// nUncounted counts the records that carry no token count (see
	// record.NoCount): 0 tokens in the report, named in warnings.
	nUncounted int64
	soft       softfail.Options // --end-id
}

func newCollector(cfg *config, warn func(string)) *collector {
	col := &collector{
		cfg:     cfg,
		scan:    record.NewScanner(cfg.idPath, false, ""),
		warn:    warn,
		total:   newStats("total"),
		byName:  map[string]*stats{},
		perFile: cfg.by == "" && len(cfg.files) > 1,
		grouper: record.NewGrouper(cfg.by),
		soft:    softfail.Options{EndIDs: cfg.endIDs},
	}
	if cfg.format == formatHTML {
		col.total.detail = newDetail()
	}
	if cfg.format != formatTotal {
		col.ids = idset.New(0)
	}
	col.input = cfg.input
	col.input.Parallel = true
	col.input.Prepare = col.prepare
	col.invalid = cliutil.NewInvalidNamer(warn)
	col.input.Skipped = col.invalid.Name
	return col
}

// prepared is a line read ahead: its record's Info (or why it is none)
// and, but for --total, its soft failures.
type prepared struct {
	info    record.Info
	err     error
	soft    []string
	members softfail.Members // what softfail reads, picked by the scan
}

// prepare scans a record and checks it for soft failures: the reader runs
// it on every core ahead of readFile (jsonl.Options.Parallel), and the
// scan picks the members the checks read as it crosses them
// (softfail.Members), so that they cost no second pass over the line.
//
// It reuses the values the reader is done with (see jsonl.Options.Prepare).
func (col *collector) prepare(line []byte, reuse any) any {
	p, _ := reuse.(*prepared)
	if p == nil {
		p = new(prepared)
	}
	if col.cfg.format == formatTotal {
		p.info, p.err = col.scan.Scan(line)
		return p
	}
	p.members.Reset()
	p.info, p.err = col.scan.ScanVisit(line, &p.members)
	p.soft = nil
	if p.err == nil {
		p.soft = softfail.CheckMembers(&p.members, col.soft)
	}
	return p
}

// group returns the group called name, creating it on first use.
func (col *collector) group(name string) *stats {
	g := col.byName[name]
	if g == nil {
		g = newStats(name)
		if col.total.detail != nil {
			g.detail = newDetail()
		}
		col.byName[name] = g
		col.groups = append(col.groups, g)
	}
	return g
}

func (col *collector) readFile(stdin io.Reader, name string) error {
	in, err := jsonl.Open(stdin, []string{name}, col.input)
	if err != nil {
		return err
	}
	defer in.Close()
	var fileGroup *stats
	if col.perFile {
		display := name
		if name == "-" {
			display = jsonl.StdinName
		}
		fileGroup = col.group(display)
	}
	for in.Next() {
		p := in.Prepared().(*prepared)
		info := p.info
		if p.err != nil {
			in.Invalid(p.err) // with SkipInvalid it counts and names the line: never an error
			continue
		}
		if !info.HasError && !info.Counted {
			col.uncounted(in.Pos(), info)
		}
		if col.ids == nil { // --total: the fast path
			col.total.addTokens(info)
			continue
		}
		g := fileGroup
		key := info.ID
		if col.cfg.by != "" {
			group := col.grouper.Of(in.Bytes(), name, in.Pos())
			g = col.group(group)
			if !col.cfg.dupAcross {
				// The name's length first: no two (group, id) pairs
				// make the same key, whatever bytes they hold.
				key = strconv.Itoa(len(group)) + ":" + group + info.ID
			}
		}
		duplicate := info.HasID && !col.ids.AddString(key)
		for _, s := range []*stats{col.total, g} {
			if s != nil {
				s.add(info, duplicate)
				s.addSoft(p.soft)
				s.addTrainLength(info, col.cfg.maxTrainLength)
			}
		}
		if col.total.detail != nil {
			col.total.detail.add(in.Bytes(), info)
			if g != nil {
				g.detail.add(in.Bytes(), info)
			}
		}
	}
	if err := in.Err(); err != nil {
		return err
	}
	st := in.Stats()
	for _, s := range []*stats{col.total, fileGroup} {
		if s != nil {
			s.invalidLines += st.Invalid
			s.torn += st.Torn
		}
	}
	return nil
}

// uncounted names the first few records that carry no token count: they
// are in the report as 0 tokens, which they are not.
func (col *collector) uncounted(pos string, info record.Info) {
	col.nUncounted++
	if col.nUncounted <= cliutil.ShownInvalid {
		col.warn(fmt.Sprintf("%s: record%s %s: counted as 0 tokens (budget-cut counts such records: %s)",
			pos, record.IDNote(info), record.NoCount, record.CountHint))
	}
}

// finish sorts --by groups by name (files keep their order) and says how
// many invalid lines went unnamed.
func (col *collector) finish() {
	if col.cfg.by != "" {
		sortByName(col.groups)
		for _, w := range col.grouper.Warnings() {
			col.warn(w)
		}
	}
	if n := col.nUncounted; n > 1 {
		named := "all named above"
		if n > cliutil.ShownInvalid {
			named = fmt.Sprintf("the first %d are named above", cliutil.ShownInvalid)
		}
		col.warn(fmt.Sprintf("%s records carry no token count: the tokens in this report leave them out (%s)", cliutil.Thousands(n), named))
	}
	col.invalid.Done()
}
