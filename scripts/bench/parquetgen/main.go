// Command parquetgen writes a large Parquet file of ShareGPT-style
// conversations (id, conversations: list of {from, value}), snappy, in row
// groups of 20,000 rows, for the memory benchmark of scripts/bench/parquet.sh:
//
//	go run ./scripts/bench/parquetgen -o big.parquet -size 2G
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

func main() {
	out := flag.String("o", "big.parquet", "output file")
	size := flag.Int64("size", 2<<30, "stop once the file is this many bytes")
	flag.Parse()
	if err := write(*out, *size); err != nil {
		fmt.Fprintln(os.Stderr, "parquetgen:", err)
		os.Exit(1)
	}
}

var turn = arrow.StructOf(arrow.Field{Name: "from", Type: arrow.BinaryTypes.String, Nullable: true},
	arrow.Field{Name: "value", Type: arrow.BinaryTypes.String, Nullable: true})

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "conversations", Type: arrow.ListOf(turn), Nullable: true},
}, nil)

func write(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(20000))
	w, err := pqarrow.NewFileWriter(schema, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the a model token answer question sort list reverse python function return value error file line record budget server batch cache queue")
	for row := 0; ; row += 1000 {
		if fi, err := f.Stat(); err == nil && fi.Size() >= size {
			break
		}
		rec := batch(rng, words, row, 1000)
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return w.Close()
}

// batch builds n rows of three-turn conversations of random words.
func batch(rng *rand.Rand, words []string, first, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	ids := b.Field(0).(*array.StringBuilder)
	convs := b.Field(1).(*array.ListBuilder)
	turns := convs.ValueBuilder().(*array.StructBuilder)
	for i := 0; i < n; i++ {
		ids.Append(fmt.Sprintf("big-%d", first+i))
		convs.Append(true)
		for t, from := range []string{"human", "gpt", "human"} {
			turns.Append(true)
			turns.FieldBuilder(0).(*array.StringBuilder).Append(from)
			var sb strings.Builder
			for k := 0; k < 100+rng.IntN(200)*(t%2+1); k++ {
				sb.WriteString(words[rng.IntN(len(words))])
				sb.WriteByte(' ')
			}
			turns.FieldBuilder(1).(*array.StringBuilder).Append(sb.String())
		}
	}
	return b.NewRecordBatch()
}
