package jsonl

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/synthpipe/synthpipe/lib/exitcode"
)

// parquetWriteRows is how many records make a batch written at once, and
// ParquetRowGroupRows how many a row group holds (readers hold one at a time).
const (
	parquetWriteRows    = 1024
	ParquetRowGroupRows = 64 * 1024
)

// ParquetWriter writes JSON records of a fixed schema as a snappy Parquet
// file. The file is written under a temporary name and renamed into place
// by Close: a run that stops early leaves no half file behind (Parquet's
// index is at its end: a cut file is unreadable whole).
type ParquetWriter struct {
	path, tmp string
	f         *os.File
	w         *pqarrow.FileWriter
	rows      *array.RecordBuilder
	pending   int
}

// CreateParquet starts a Parquet file at path with schema.
func CreateParquet(path string, schema *arrow.Schema) (*ParquetWriter, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, exitcode.CantCreatef("create %s: %v", path, unwrapPath(err))
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(ParquetRowGroupRows))
	w, err := pqarrow.NewFileWriter(schema, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, exitcode.CantCreatef("create %s: %v", path, err)
	}
	return &ParquetWriter{path: path, tmp: f.Name(), f: f, w: w, rows: array.NewRecordBuilder(memory.DefaultAllocator, schema)}, nil
}

// Write adds one record, a JSON object with the schema's fields.
func (p *ParquetWriter) Write(record []byte) error {
	if err := p.rows.UnmarshalJSON(record); err != nil {
		return fmt.Errorf("a record does not fit the Parquet schema: %w", err)
	}
	if p.pending++; p.pending >= parquetWriteRows {
		return p.flush()
	}
	return nil
}

func (p *ParquetWriter) flush() error {
	if p.pending == 0 {
		return nil
	}
	rec := p.rows.NewRecordBatch()
	defer rec.Release()
	p.pending = 0
	if err := p.w.Write(rec); err != nil {
		return exitcode.IOErrorf("write %s: %v", p.path, err)
	}
	return nil
}

// Close writes the rest and the file's index, and puts the file in place.
func (p *ParquetWriter) Close() error {
	defer p.rows.Release()
	err := p.flush()
	if cerr := p.w.Close(); err == nil && cerr != nil { // closes the file too
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
func (p *ParquetWriter) Abandon() {
	p.rows.Release()
	p.f.Close()
	os.Remove(p.tmp)
}
