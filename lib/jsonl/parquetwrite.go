package jsonl

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/synthpipe/synthpipe/lib/exitcode"
)

// parquetWriteRows is how many records make a batch written at once, and
// ParquetRowGroupRows how many a row group holds (readers hold one at a time).
const (
	parquetWriteRows    = 1024
	ParquetRowGroupRows = 64 * 1024
)

// ParquetWriter writes JSON records as a snappy Parquet file whose columns
// are the fields of T (its parquet struct tags name them; a record's JSON
// is decoded into a T by its json tags). The file is written under a
// temporary name and renamed into place by Close: a run that stops early
// leaves no half file behind (Parquet's index is at its end: a cut file is
// unreadable whole).
type ParquetWriter[T any] struct {
	path, tmp string
	f         *os.File
	w         *parquet.GenericWriter[T]
	rows      []T
}

// CreateParquet starts a Parquet file at path with T's columns.
func CreateParquet[T any](path string) (*ParquetWriter[T], error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, exitcode.CantCreatef("create %s: %v", path, unwrapPath(err))
	}
	w := parquet.NewGenericWriter[T](f, parquet.Compression(&parquet.Snappy), parquet.MaxRowsPerRowGroup(ParquetRowGroupRows))
	return &ParquetWriter[T]{path: path, tmp: f.Name(), f: f, w: w, rows: make([]T, 0, parquetWriteRows)}, nil
}

// Write adds one record, a JSON object with T's fields (any other member
// is left out).
func (p *ParquetWriter[T]) Write(record []byte) error {
	var row T
	if err := json.Unmarshal(record, &row); err != nil {
		return fmt.Errorf("a record does not fit the Parquet schema: %w", err)
	}
	if p.rows = append(p.rows, row); len(p.rows) >= parquetWriteRows {
		return p.flush()
	}
	return nil
}

func (p *ParquetWriter[T]) flush() error {
	if len(p.rows) == 0 {
		return nil
	}
	_, err := p.w.Write(p.rows)
	clear(p.rows)
	p.rows = p.rows[:0]
	if err != nil {
		return exitcode.IOErrorf("write %s: %v", p.path, err)
	}
	return nil
}

// Close writes the rest and the file's index, and puts the file in place.
func (p *ParquetWriter[T]) Close() error {
	err := p.flush()
	if cerr := p.w.Close(); err == nil && cerr != nil {
		err = exitcode.IOErrorf("write %s: %v", p.path, cerr)
	}
	if cerr := p.f.Close(); err == nil && cerr != nil {
		err = exitcode.IOErrorf("write %s: %v", p.path, cerr)
	}
	if err == nil {
		if err = os.Rename(p.tmp, p.path); err != nil {
			err = exitcode.CantCreatef("rename %s to %s: %v", p.tmp, p.path, unwrapPath(err))
		}
	}
	if err != nil {
		os.Remove(p.tmp)
	}
	return err
}

// Abandon removes the unfinished file: nothing is put in place.
func (p *ParquetWriter[T]) Abandon() {
	p.f.Close()
	os.Remove(p.tmp)
}
