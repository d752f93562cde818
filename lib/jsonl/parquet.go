package jsonl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/synthpipe/synthpipe/lib/exitcode"
)

// parquetMagic starts (and ends) every Parquet file.
var parquetMagic = []byte("PAR1")

// IsParquet reports whether head, the first bytes of a file, starts a
// Parquet file (which the Reader reads row by row, each row a record).
func IsParquet(head []byte) bool { return bytes.HasPrefix(head, parquetMagic) }

// parquetBatchRows is how many rows are decoded at a time: enough to keep the
// per-batch overhead small, few enough that a batch of long conversations
// stays far below a row group's size.
const parquetBatchRows = 256

// parquetPageBuffer is the read buffer of each column: pages are read
// through it instead of a whole column chunk at once, so that memory is
// bounded by a batch and its pages, not by the row group.
const parquetPageBuffer = 1 << 20

// parquetRows reads a Parquet file as JSON records, one per row, a row group
// at a time. It is the line source of a Parquet input: the Reader's checks,
// Prepare and positions apply to its records as to lines.
type parquetRows struct {
	file      *parquet.File
	hook      func() error
	group     int   // the row group being read; -1 before the first
	groupRead int64 // rows of the current row group returned so far
	rows      parquet.Rows
	batch     []parquet.Row
	n, row    int // rows in batch, and the next one
	json      rowJSON
	line      []byte // the current row as JSON, reused
	// beforeReuse runs before line is overwritten by the next row.
	beforeReuse func() error
}

// parquetError is a failure to decode a Parquet file: where it happened and
// how far the file was read.
type parquetError struct {
	group, groups int // group -1: the file's footer (its schema and index)
	err           error
}

func (e *parquetError) Error() string {
	if e.group < 0 {
		return fmt.Sprintf("not a readable Parquet file: %v", e.err)
	}
	return fmt.Sprintf("row group %d of %d: %v", e.group+1, e.groups, e.err)
}

// openParquet opens f as Parquet. hook runs before each row group is read.
func openParquet(f *os.File, hook func() error) (rows *parquetRows, err error) {
	defer recoverParquet(&err, -1, 0)
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	pf, err := parquet.OpenFile(f, fi.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true),
		parquet.ReadBufferSize(parquetPageBuffer))
	if err != nil {
		return nil, &parquetError{group: -1, err: err}
	}
	p := &parquetRows{file: pf, hook: hook, group: -1, batch: make([]parquet.Row, parquetBatchRows)}
	p.json.init(pf.Root())
	return p, nil
}

// recoverParquet turns a panic of the decoder on damaged data into an
// error: a corrupt file is bad data (exit 65), never a crash.
func recoverParquet(err *error, group, groups int) {
	if p := recover(); p != nil {
		*err = &parquetError{group: group, groups: groups, err: fmt.Errorf("damaged data (%v)", p)}
	}
}

// next returns the next row as one JSON object, or io.EOF after the last.
func (p *parquetRows) next() (line []byte, err error) {
	defer recoverParquet(&err, p.group, len(p.file.RowGroups()))
	for p.row >= p.n {
		if err := p.nextBatch(); err != nil {
			return nil, err
		}
	}
	if p.beforeReuse != nil {
		if err := p.beforeReuse(); err != nil {
			return nil, &hookError{err}
		}
	}
	p.line = p.json.appendRow(p.line[:0], p.batch[p.row])
	p.row++
	p.groupRead++
	return p.line, nil
}

// nextBatch decodes the next rows, opening the next row group when the
// current one is done.
func (p *parquetRows) nextBatch() error {
	p.n, p.row = 0, 0
	if p.rows != nil {
		n, err := p.rows.ReadRows(p.batch)
		if n > 0 {
			p.n = n
			return nil
		}
		p.rows.Close()
		p.rows = nil
		if err != nil && err != io.EOF {
			return p.groupError(err)
		}
		if want := p.file.RowGroups()[p.group].NumRows(); p.groupRead != want {
			return p.groupError(fmt.Errorf("%d rows decoded where its index says %d", p.groupRead, want))
		}
	}
	if p.group+1 >= len(p.file.RowGroups()) {
		return io.EOF
	}
	if err := p.hook(); err != nil {
		return &hookError{err}
	}
	p.group, p.groupRead = p.group+1, 0
	p.rows = p.file.RowGroups()[p.group].Rows()
	return nil
}

func (p *parquetRows) groupError(err error) error {
	return &parquetError{group: p.group, groups: len(p.file.RowGroups()), err: err}
}

func (p *parquetRows) Close() error {
	if p.rows != nil {
		p.rows.Close()
		p.rows = nil
	}
	return nil
}

// errParquetStream is a Parquet file on a pipe: its index is at its end, so
// it cannot be read as it streams.
var errParquetStream = errors.New("a Parquet file cannot be read from a pipe or stdin (its index is at its end): name the file instead")

// expandFolders replaces each folder among names by the Parquet files
// beneath it, in name order: a dataset as the Hugging Face Hub publishes it
// (data/train-00000-of-00004.parquet, ...) is one input.
func expandFolders(names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		if fi, err := os.Stat(n); n == "-" || err != nil || !fi.IsDir() {
			out = append(out, n) // errors are checkReadable's to report
			continue
		}
		shards, err := parquetShards(n)
		if err != nil {
			return nil, err
		}
		out = append(out, shards...)
	}
	return out, nil
}

// parquetShards lists the .parquet files beneath dir, in name order.
func parquetShards(dir string) ([]string, error) {
	var shards []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.EqualFold(filepath.Ext(path), ".parquet") {
			shards = append(shards, path)
		}
		return nil
	})
	if err != nil {
		return nil, exitcode.NoInputf("read the folder %s: %v", dir, unwrapPath(err))
	}
	if len(shards) == 0 {
		return nil, exitcode.NoInputf("%s is a directory with no .parquet file beneath it (a folder is read as its Parquet shards, in name order), not a JSONL file", dir)
	}
	return shards, nil
}
